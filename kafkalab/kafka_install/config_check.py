"""A broker setting or topic config checked as the Kafka release it is for would check it, before anything starts.

Names come from Kafka's own definitions (:mod:`kafkalab.kafka_install.config_defs`): an unknown one, which a
broker would ignore with a warning (a typo that changes nothing), is refused with the closest name. Values are
parsed as Kafka's ``ConfigDef.parseType`` parses them and checked against their range or list of strings, with
Kafka's own messages: in Python, because the check answers at a prompt and a JVM takes 0.4-2 s to start. A
value whose type or validator kafkalab does not reproduce (DOUBLE, LIST, CLASS, a validator of Kafka's own
code) is handed to Kafka's code in one JVM per check (:func:`~kafkalab.kafka_install.config_defs.kafka_verdicts`).
tests/test_config_check.py holds the Python verdicts to Kafka's on every release kafkalab runs.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.config_defs import ConfigKey, config_defs, kafka_verdicts
from kafkalab.kafka_install.distribution import Distribution

_JAVA_BLANKS = "".join(map(chr, range(0x21)))  # what Java's String.trim() strips: every char up to the space
# Integer.parseInt and its kin: a sign, then digits as Character.digit reads them (any Unicode decimal digit)
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_BITS = {"SHORT": 16, "INT": 32, "LONG": 64}
LONG_VALUE = 40  # a value longer than this is cut in a message


@dataclass(frozen=True)
class Setting:
    """A setting to check. ``kind``: broker or topic; ``label``: where it was written, for the message."""

    kind: str
    name: str
    value: str
    label: str


def check_settings(dist: Distribution, settings: Sequence[Setting]) -> None:
    """KafkalabError (one line, labelled) for the first setting Kafka ``dist`` would not take."""
    defs = config_defs(dist)
    for_kafka: list[Setting] = []
    for setting in settings:
        keys = defs.of(setting.kind)
        key = keys.get(setting.name)
        if key is None:
            raise _refused(setting, f"Kafka {defs.version} has no {setting.kind} "
                                    f"{'setting' if setting.kind == 'broker' else 'config'} {setting.name}"
                                    f"{did_you_mean(setting.name, keys)}")
        if not key.local:
            for_kafka.append(setting)
        elif problem := local_problem(key, setting.value):
            raise _refused(setting, problem)
    if for_kafka:
        verdicts = kafka_verdicts(dist, tuple((s.kind, s.name, s.value) for s in for_kafka))
        for setting, problem in zip(for_kafka, verdicts, strict=True):
            if problem:
                raise _refused(setting, problem)


def _refused(setting: Setting, problem: str) -> KafkalabError:
    """The label and Kafka's message, a value too long to read (a 300-digit number) cut in both."""
    line = f"{setting.label}: {problem}"
    if len(setting.value) > LONG_VALUE:
        line = line.replace(setting.value, f"{setting.value[:LONG_VALUE // 2]}... ({len(setting.value)} chars)")
    return KafkalabError(line)


def did_you_mean(name: str, keys: Mapping[str, ConfigKey]) -> str:
    """': did you mean X (its type, valid values, default)?' for the closest known name, else ''."""
    close = difflib.get_close_matches(name.lower(), list(keys), n=1, cutoff=0.6)
    if not close:
        return ""
    key = keys[close[0]]
    about = ", ".join(filter(None, (key.type, key.valid, f"default {key.default}" if key.default else "")))
    return f": did you mean {key.name} ({about})?"


def local_problem(key: ConfigKey, value: str) -> str | None:
    """Kafka's message for ``value`` of ``key`` (:attr:`ConfigKey.local`), or None when Kafka takes it."""
    trimmed = value.strip(_JAVA_BLANKS)
    parsed: int | str = trimmed
    if key.type == "BOOLEAN":
        if not any(_equals_ignore_case(trimmed, word) for word in ("true", "false")):
            return _invalid(key, value, "Expected value to be either true or false")
    elif key.type in _BITS:
        number = _java_integer(trimmed, _BITS[key.type])
        if number is None:  # Kafka shows the value as given, before trimming
            return _invalid(key, value, f"Not a number of type {key.type}")
        parsed = number
    # a Range compares as doubles (Number.doubleValue) and shows the parsed value and its bound as Java prints them
    if key.at_least is not None and float(parsed) < float(key.at_least):
        return _invalid(key, parsed, f"Value must be at least {key.at_least}")
    if key.at_most is not None and float(parsed) > float(key.at_most):
        return _invalid(key, parsed, f"Value must be no more than {key.at_most}")
    if key.one_of is not None and parsed not in key.one_of:
        return _invalid(key, parsed, f"String must be one of: {', '.join(key.one_of)}")
    return None


def _invalid(key: ConfigKey, value: object, why: str) -> str:
    return f"Invalid value {value} for configuration {key.name}: {why}"  # ConfigException(name, value, message)


def _java_integer(text: str, bits: int) -> int | None:
    # a char beyond the BMP is two UTF-16 chars to Java, neither of them a digit
    if not _JAVA_INTEGER.fullmatch(text) or any(ord(c) > 0xFFFF for c in text):
        return None
    number = int(text)
    return number if -(1 << (bits - 1)) <= number < 1 << (bits - 1) else None


def _equals_ignore_case(text: str, word: str) -> bool:
    """Java's String.equalsIgnoreCase against an ASCII word: char by char, upper case, then lower case."""
    if len(text) != len(word):
        return False
    pairs = ((a.upper(), b.upper()) for a, b in zip(text, word, strict=True))
    return all(a == b or a.lower() == b.lower() for a, b in pairs)
