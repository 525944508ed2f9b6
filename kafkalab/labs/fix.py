"""Fix exercises: what an attendee may change in a lab, and the graded lab their changes make.

A lab's ``[fix]`` table turns its demonstration into an exercise. The graded run is the lab as shipped (its
cluster, workload, faults, triggers and seeds), with the attendee's changes applied, the faults that
demonstrate the cure left out (``drop_faults``), and the fix's own expectations in place of the
demonstration's: ``lost > 0`` is what the break shows, ``lost = 0`` is what the fix must make hold.

A change is named the way the allow-list and the rules name it:

- ``producer.acks`` / ``consumer.auto-commit``: a client setting (``-D producer.acks=all``);
- ``topic.test-topic.replication_factor``, ``topic.test-topic.partitions``, ``topic.test-topic.min.insync.replicas``:
  a topic's plan, what it is created with (``--topic "test-topic rf=3 partitions=8 min.isr=2"``);
- ``broker.unclean.leader.election.enable``: a broker setting for every broker (``--broker-config``);
- ``action.replicate``: a live action, a fault of the attendee's own that fires beside the lab's timeline
  when its trigger holds (``--action "brokers >= 3 -> replicate topic test-topic rf=3"``); ``action.add-partitions``
  likewise (``--action "progress 50% -> add-partitions topic test-topic partitions=8"``), and
  ``action.abort-transaction`` (``--action "after 5s -> abort-transaction topic test-topic partition=0"``; without
  ``partition``, every transaction open on the topic), as `kafkalab txn abort` does.

At the console's prompt, ``topic T partitions=N`` during a run adds partitions to the live topic at once, never
kept (Kafka cannot take partitions back): :func:`partitions_line`; between runs it is a change to the topic's plan.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from kafkalab.clients.options import canonical_name
from kafkalab.errors import KafkalabError
from kafkalab.labs.expectations import Expectation
from kafkalab.labs.faults import Fault, make_fault
from kafkalab.settings_text import name_value

# the workload's size and shape: a fix that sends less, or slower, would pass by doing less
FROZEN = ("producer.topic", "producer.num-rolls", "producer.num-records-per-roll", "producer.wait-after-roll",
          "producer.wait-after-send", "producer.local-id", "consumer.topic", "consumer.local-id")
# the kinds of fault an attendee may add as a live action (operations, not faults)
ACTION_KINDS = ("replicate", "add-partitions", "alter-config", "elect-preferred", "reset-offsets",
                "abort-transaction")
_TOPIC_KEYS = {"rf": "replication_factor", "replication_factor": "replication_factor",
               "min.isr": "min.insync.replicas", "min_isr": "min.insync.replicas"}
_WHOLE_TOPIC_KEYS = ("replication_factor", "partitions", "min.insync.replicas")  # a topic's counts
_ACTION = re.compile(r"\s*(?P<at>.+?)\s*->\s*(?P<do>[a-z-]+)\s+(?P<on>(?:topic|group)\s+\S+)\s*(?P<rest>.*)")


class ChangeKind(StrEnum):
    SETTING = "setting"  # producer.* / consumer.*
    TOPIC = "topic"  # a topic's replication factor or config
    BROKER = "broker"  # a broker setting, on every broker
    ACTION = "action"  # a live action during the run


@dataclass(frozen=True)
class Change:
    """One thing the attendee changed. ``name`` is what allow-lists and rules match; ``value`` its new value
    (for an action, the action as written)."""

    kind: ChangeKind
    name: str
    value: str
    fault: Fault | None = None  # an action's fault
    topic: str = ""  # a topic change's topic (a topic's name may hold dots, as its settings' names do)
    written: str = field(default="", compare=False)  # a setting typed by Kafka's name: that name (enable.idempotence)

    @property
    def topic_key(self) -> str:
        """A topic change's setting: ``replication_factor``, ``partitions`` or a topic config's name."""
        return self.name.removeprefix(f"topic.{self.topic}.")

    @property
    def text(self) -> str:
        """The change as the console's prompt (e) takes it: what is shown can be typed back."""
        match self.kind:
            case ChangeKind.ACTION:
                return f"action {self.value}"
            case ChangeKind.TOPIC:
                return f"topic {self.topic} {self.topic_key}={self.value}"
            case ChangeKind.BROKER:
                return f"broker {self.name.removeprefix('broker.')}={self.value}"
        return f"{self.name}={self.value}"


@dataclass(frozen=True)
class Spelling:
    """How a person writes each kind of change where they type it, so an error quotes the form they typed: the
    command line's flags (``-D``, ``--topic "..."``), or the console prompt's leading words (``topic ...``)."""

    setting: str
    topic: str
    broker: str
    action: str
    quoted: bool  # a value with spaces goes in quotes (a shell's word)

    def said(self, flag: str, text: str) -> str:
        """What was typed, as typed: ``--topic 'x y'``, or ``'x y'`` at the prompt's setting line."""
        return f"{flag} {text!r}" if flag else repr(text)

    def example(self, flag: str, text: str) -> str:
        """``text`` written the way this form takes it: ``--topic "test-topic rf=3"`` or ``topic test-topic rf=3``."""
        written = f'"{text}"' if self.quoted and " " in text else text
        return f"{flag} {written}" if flag else written


COMMAND_LINE = Spelling("-D", "--topic", "--broker-config", "--action", quoted=True)
PROMPT = Spelling("", "topic", "broker", "action", quoted=False)


def setting_change(text: str, spelling: Spelling = COMMAND_LINE) -> Change:
    """``producer.acks=all`` (``-D``); Kafka's name of a setting (``enable.idempotence=true``) is kept under
    kafkalab's (``producer.idempotent``), which allow-lists and rules name."""
    flag = spelling.setting
    written, value = name_value(text, flag, "producer.acks=all", need_value=True)
    name = canonical_name(written)
    if not name.startswith(("producer.", "consumer.", "processor.")):
        raise KafkalabError(f"{spelling.said(flag, text)}: {name} is not a producer.* or consumer.* setting, nor "
                            "Kafka's name of one (`kafkalab produce --options` lists them): e.g. "
                            f"{spelling.example(flag, 'producer.acks=all')}")
    return Change(ChangeKind.SETTING, name, value, written="" if name == written else written)


def broker_change(text: str, spelling: Spelling = COMMAND_LINE) -> Change:
    """``unclean.leader.election.enable=true`` (``--broker-config``)."""
    name, value = name_value(text, spelling.broker, "min.insync.replicas=2", need_value=True)
    if len(value.split()) > 1:  # "broker X=1 -consumer.y" read 1 -consumer.y as the value: say what went wrong
        raise KafkalabError(f"broker {text.strip()}: one broker setting a line (its value has no spaces): put "
                            f"{value.split(maxsplit=1)[1]!r} on a line of its own")
    return Change(ChangeKind.BROKER, f"broker.{name.removeprefix('broker.')}", value)


def topic_changes(text: str, spelling: Spelling = COMMAND_LINE) -> list[Change]:
    """``test-topic rf=3 partitions=8 min.isr=2 retention.ms=1000`` (``--topic``): one change per setting."""
    flag, said = spelling.topic, spelling.said(spelling.topic, text)
    example = spelling.example(flag, "test-topic rf=3 min.isr=2")
    words = text.split()
    if len(words) < 2 or "=" in words[0]:
        raise KafkalabError(f"{said}: give the topic, then its settings: e.g. {example}")
    topic, out = words[0], []
    for word in words[1:]:
        key, value = name_value(word, "", example, need_value=True)
        key = _TOPIC_KEYS.get(key, key)
        if key in _WHOLE_TOPIC_KEYS and not value.isdigit():
            raise KafkalabError(f"{said}: {key} must be a whole number, not {value!r}")
        out.append(Change(ChangeKind.TOPIC, f"topic.{topic}.{key}", value, topic=topic))
    return out


def action_change(text: str, brokers: int, spelling: Spelling = COMMAND_LINE) -> Change:
    """``WHEN -> DO ON [key=value ...]``, e.g. ``brokers >= 3 -> replicate topic test-topic rf=3``: a fault of
    the attendee's own, fired beside the lab's timeline once WHEN holds."""
    flag, said = spelling.action, spelling.said(spelling.action, text)
    example = spelling.example(flag, "brokers >= 3 -> replicate topic test-topic rf=3")
    m = _ACTION.fullmatch(text)
    if not m:
        raise KafkalabError(f"{said} is not WHEN -> DO topic|group NAME [key=value]: e.g. {example}")
    if m["do"] not in ACTION_KINDS:
        raise KafkalabError(f"{said}: {m['do']!r} is not an action: give one of {', '.join(ACTION_KINDS)}")
    raw: dict[str, object] = {"at": m["at"], "do": m["do"], "on": m["on"]}
    configs: dict[str, str] = {}
    for word in m["rest"].split():
        key, value = name_value(word, "", example, need_value=True)
        if key in ("rf", "replication_factor"):
            if not value.isdigit():
                raise KafkalabError(f"{said}: rf must be a whole number, not {value!r}")
            raw["replication_factor"] = int(value)
        elif key == "reset":
            raw["reset"] = value
        elif key in ("partitions", "partition"):
            raw[key] = value
        else:
            configs[key] = value
    if configs:
        raw["configs"] = configs
    try:
        fault = make_fault(raw, brokers)
    except ValueError as exc:
        raise KafkalabError(f"{said}: {exc}") from None
    return Change(ChangeKind.ACTION, f"action.{m['do']}", text.strip(), fault)


@dataclass(frozen=True)
class Rule:
    """What a change meant: shown on the grade card when every ``when`` matches the attendee's changes.

    ``when`` entries: ``name`` (any value), ``name=value``, or ``!name`` (not changed). ``outcome``: show it
    only on a passed or a failed grade ("" for either)."""

    when: tuple[str, ...]
    says: str
    outcome: str = ""

    def applies(self, changes: Sequence[Change], passed: bool) -> bool:
        if self.outcome and self.outcome != ("passed" if passed else "failed"):
            return False
        return all(_matches(cond, changes) for cond in self.when)


def _matches(cond: str, changes: Sequence[Change]) -> bool:
    if cond.startswith("!"):
        return not _matches(cond[1:], changes)
    name, sep, value = cond.partition("=")
    return any(fnmatch.fnmatchcase(c.name, name) and (not sep or _same(c.value, value)) for c in changes)


def _same(a: str, b: str) -> bool:
    aliases = {"-1": "all", "True": "true", "False": "false"}
    return aliases.get(a.strip(), a.strip()) == aliases.get(b.strip(), b.strip())


@dataclass(frozen=True)
class Hint:
    after_s: float  # offered this long after the task was shown
    cost: int  # points off the score of a passing grade
    text: str


@dataclass(frozen=True)
class FixExercise:
    task: str  # what must hold, in the attendee's words (Markdown); never the cause
    allow: tuple[str, ...]  # change names the attendee may change (fnmatch patterns)
    expectations: tuple[Expectation, ...]  # what must hold under the same faults, in every graded run
    solution: tuple[Change, ...]  # the reference solution: shown only when solved or given up
    runs: int = 2  # seeded runs that must all pass: a fix that holds once by luck is not a fix
    seed: int = 1  # the first run's seed; run k has seed + k
    rules: tuple[Rule, ...] = ()
    hints: tuple[Hint, ...] = ()
    drop_faults: tuple[int, ...] = ()  # 1-based: faults that show the cure, left out of the graded run
    wrong: tuple[tuple[Change, ...], ...] = field(default=())  # plausible wrong fixes, each must grade FAIL
    # roles whose fix may be a code change: the attendee's own client (--producer-cmd / --consumer-cmd) is graded
    code: tuple[str, ...] = ()

    def allows(self, change: Change) -> bool:
        return change.name not in FROZEN and any(fnmatch.fnmatchcase(change.name, p) for p in self.allow)

    def check(self, changes: Iterable[Change]) -> None:
        """KafkalabError, one line, for the first change this exercise does not allow."""
        for change in changes:
            if not self.allows(change):
                frozen = " (the workload's size is frozen)" if change.name in FROZEN else ""
                raise KafkalabError(f"{change.text}: {change.name} is not yours to change in this lab{frozen}; "
                                    f"you may change {', '.join(self.allow)}")

    def rules_for(self, changes: Sequence[Change], passed: bool) -> list[str]:
        return [r.says for r in self.rules if r.applies(changes, passed)]

    @property
    def max_score(self) -> int:
        return 100


def actions_of(changes: Iterable[Change]) -> tuple[Fault, ...]:
    return tuple(c.fault for c in changes if c.kind == ChangeKind.ACTION and c.fault is not None)


def parse_changes(brokers_count: int, settings: Iterable[str] = (), topics: Iterable[str] = (),
                  brokers: Iterable[str] = (), actions: Iterable[str] = ()) -> list[Change]:
    """Every change as the command line gives it, in that order; KafkalabError (one line) on the first bad one."""
    out = [setting_change(s) for s in settings]
    for t in topics:
        out += topic_changes(t)
    out += [broker_change(b) for b in brokers]
    out += [action_change(a, brokers_count) for a in actions]
    return out


def change_from_text(brokers: int, text: str) -> list[Change]:
    """One line as the console's prompt takes it: ``producer.acks=all`` (or several settings, space-separated:
    settings that only make sense together, such as idempotence and acks=all, are kept together),
    ``topic test-topic rf=3``, ``broker unclean.leader.election.enable=true`` or
    ``action brokers >= 3 -> replicate topic T rf=3``."""
    word, _, rest = text.strip().partition(" ")
    if word == "topic":
        return topic_changes(rest, PROMPT)
    if word == "broker":
        return [broker_change(rest, PROMPT)]
    if word == "action":
        return [action_change(rest, brokers, PROMPT)]
    return [setting_change(setting, PROMPT) for setting in text.split()]


def partitions_line(text: str) -> tuple[str, int] | None:
    """``topic T partitions=N`` as the console's prompt takes it: (T, N), partitions added to the live topic now
    and never kept as a change; None for any other line. KafkalabError (one line) when it cannot be read."""
    word, _, rest = text.strip().partition(" ")
    words = rest.split()
    if word != "topic" or not any(w.startswith("partitions=") for w in words):
        return None
    if len(words) != 2 or not words[1].startswith("partitions="):
        raise KafkalabError(f"{text.strip()!r}: partitions go on a line of their own, as topic test-topic "
                            "partitions=8: they are added to the live topic now, not kept for the next runs")
    value = words[1].removeprefix("partitions=")
    if not value.isdigit():
        raise KafkalabError(f"{text.strip()!r}: partitions=N takes the new count, a whole number, not {value!r}")
    return words[0], int(value)


def prompt_lines(changes: Sequence[Change]) -> list[str]:
    """``changes`` as lines for the console's prompt (e): the settings on one line (some are valid only
    together), every other change on its own line."""
    settings = [c.text for c in changes if c.kind == ChangeKind.SETTING]
    return ([" ".join(settings)] if settings else []) + [c.text for c in changes if c.kind != ChangeKind.SETTING]


@dataclass(frozen=True)
class Incident:
    """A lab told as a ticket: symptoms only; the cause is the answer to ``question``."""

    ticket: str  # what was reported (Markdown), never the cause
    question: str  # "What is the root cause?"
    choices: tuple[str, ...]
    answer: int  # 0-based index into ``choices``
    explanation: str  # the root cause in full (never the cure), shown once diagnosed, fixed or given up
    cure: str = ""  # how it is fixed: shown once fixed or given up (without a [fix], once diagnosed)

    def is_right(self, choice: int) -> bool:
        return choice == self.answer
