"""One line at the console's change prompt (e): changes to keep, or ``-NAME`` to take kept ones back.

A kept change is replaced only by another change to the same name: ``-NAME`` forgets it, and the next runs run
that part of the lab as shipped. NAME is the change as the Lab tab lists it, whole (``-producer.acks=all``) or up
to its ``=`` (``-producer.acks``, ``-topic test-topic replication_factor``), its name (``-action.replicate``: every
action of that kind), or the change as it was typed (``-enable.idempotence``, ``-topic test-topic rf=3``). Several
go on one line (``-producer.acks -producer.idempotent``), for settings that can only go together.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass

from kafkalab.clients.options import canonical_name
from kafkalab.errors import KafkalabError
from kafkalab.labs.fix import Change, ChangeKind, change_from_text

TAKE_BACK = "-"
_TARGETS = re.compile(r"\s+(?=-(?!>))")  # each " -" starts a target; an action's " -> " does not


@dataclass(frozen=True)
class ChangeLine:
    """What one prompt line asks: ``keep`` these changes, or ``take_back`` the kept ones these targets name."""

    keep: tuple[Change, ...] = ()
    take_back: tuple[str, ...] = ()


def read_change_line(brokers: int, text: str) -> ChangeLine:
    """``text`` as the prompt takes it; KafkalabError (one line) when it cannot be read."""
    line = text.strip()
    if not line.startswith(TAKE_BACK):
        return ChangeLine(keep=tuple(change_from_text(brokers, line)))
    targets = tuple(t.removeprefix(TAKE_BACK).strip() for t in _TARGETS.split(line))
    if not all(targets):
        raise KafkalabError(f"{line!r}: name the change to take back after the '-', e.g. -producer.acks")
    return ChangeLine(take_back=targets)


def names(target: str, change: Change, brokers: int) -> bool:
    """Whether ``target`` (typed after the '-') names the kept ``change``."""
    if target == change.text or target == change.name:
        return True
    if change.kind == ChangeKind.ACTION:  # its text holds '=' and '->': only whole, or by its kind's name
        return False
    written = target.partition("=")[0].strip()
    return written == change.text.partition("=")[0] or change.name in _names_typed(target, written, brokers)


def _names_typed(target: str, written: str, brokers: int) -> set[str]:
    """The change names ``target`` may be typed for: a Kafka name's option, a line as the prompt took it."""
    found = set()
    with suppress(KafkalabError):  # a bare name both clients have names neither
        found.add(canonical_name(written))
    if "=" in target:
        with suppress(KafkalabError):  # not a line the prompt takes: matched by its words alone
            found |= {c.name for c in change_from_text(brokers, target)}
    return found


def kept_words(changes: Iterable[Change]) -> str:
    """The changes as kept, each typed by Kafka's name saying so: ``producer.idempotent=true (enable.idempotence =
    producer.idempotent)``: what the Lab tab, the card and the rules call it from now on."""
    return ", ".join(c.text + (f" ({c.written} = {c.name})" if c.written else "") for c in changes)
