"""``name=value`` as a person types it (-D, --set, --config, --spark-conf, the console's setting prompt)."""

from __future__ import annotations

from collections.abc import Iterable

from kafkalab.errors import KafkalabError


def name_value(text: str, flag: str, example: str, need_value: bool = False) -> tuple[str, str]:
    """``'producer.acks = 1'`` -> ``('producer.acks', '1')``; ``flag`` and ``example`` name the form in the error.

    An empty value passes unless ``need_value``: some Kafka settings mean something empty.
    """
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or (need_value and not value.strip()):
        given = f"{flag} {text!r}" if flag else repr(text)
        raise KafkalabError(f"{given} is not name=value: write e.g. {f'{flag} ' if flag else ''}{example}")
    return name.strip(), value.strip()


def name_values(items: Iterable[str], flag: str, example: str, need_value: bool = False) -> dict[str, str]:
    """Every item as :func:`name_value`; a later name wins, as with -D on the JVM."""
    return dict(name_value(item, flag, example, need_value) for item in items)
