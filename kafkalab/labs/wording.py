"""The lab file's check syntax in words, for what an attendee reads: a run's failures, a grade's verdict, a
fault that never fired. ``faults.missed == 0`` seen at 2 reads "2 of the lab's faults did not fire (expected
none)"; ``isr test-topic == 3`` reads "the ISR of test-topic to be 3".

The expressions stay where a table lists the checks themselves (a headless run's table, the grade card's
check column): there they are the reference an attendee compares with the lab file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafkalab.labs.faults import Trigger, TriggerKind
from kafkalab.labs.measured import Measured, Unmeasured


@dataclass(frozen=True)
class MetricWords:
    """How one metric reads. ``seen``: a sentence of its value ``{n}``; ``noun``: the quantity, for "as many
    as ..." and "not observed"; ``unit``: " s" for times ("" for counts); ``never``: a time that never came."""

    seen: str
    noun: str
    unit: str = ""
    never: str = ""


_ID = r"(?P<id>\d+)"
_GROUP = r"(?P<g>[A-Za-z0-9._-]+)"
# (a pattern of metric names, their words): {id}, {g} and {err} are filled from the metric's name
_METRICS: tuple[tuple[str, MetricWords], ...] = (
    ("lost", MetricWords("{n} acknowledged records were never processed", "acknowledged records never processed")),
    ("lost_by_brokers", MetricWords("{n} acknowledged records were missing from the topic",
                                    "acknowledged records missing from the topic")),
    ("missed_by_consumers", MetricWords("{n} records in the topic were never processed",
                                        "records in the topic never processed")),
    ("duplicated", MetricWords("{n} records were written more than once", "records written more than once")),
    ("redelivered", MetricWords("{n} records were processed again by the same group", "records processed again")),
    ("reordered", MetricWords("{n} records landed out of order", "records out of order")),
    ("key_reordered", MetricWords("{n} records were processed after a newer record of the same key",
                                  "records processed out of their key's order")),
    ("recovered", MetricWords("{n} sends reported as failed were in the topic anyway",
                              "failed sends found in the topic")),
    ("aborted_read", MetricWords("{n} records of aborted transactions were processed",
                                 "records of aborted transactions processed")),
    ("unexpected", MetricWords("{n} processed records were not sent by this run", "records this run did not send")),
    ("attempted", MetricWords("the producer tried to send {n} records", "records the producer tried to send")),
    ("acknowledged", MetricWords("{n} records were acknowledged", "records were acknowledged")),
    ("failed", MetricWords("{n} sends failed", "failed sends")),
    ("unknown", MetricWords("{n} sends got no delivery report", "sends without a delivery report")),
    ("consumed_rows", MetricWords("{n} records were processed", "records processed")),
    ("distinct_consumed", MetricWords("{n} distinct records were processed", "distinct records processed")),
    ("typed", MetricWords("{n} records were typed by hand", "records typed by hand")),
    ("truncated", MetricWords("{n} records were truncated from the brokers' logs", "records truncated")),
    (r"producer\.acked", MetricWords("the producer had {n} records acknowledged",
                                     "records the producer had acknowledged")),
    (r"producer\.attempted", MetricWords("the producer tried to send {n} records",
                                         "records the producer tried to send")),
    (r"producer\.failed", MetricWords("{n} of the producer's sends failed", "failed sends")),
    (r"producer\.failed\.(?P<err>[A-Z_][A-Z0-9_]*)", MetricWords("{n} sends failed with {err}",
                                                                 "sends failed with {err}")),
    (r"producer\.stalls", MetricWords("the producer stalled {n} times", "producer stalls")),
    (r"producer\.longest_stall_s", MetricWords("the producer's longest stall lasted {n}",
                                               "the producer's longest stall", " s")),
    (r"timeline\.leader_changes", MetricWords("leaders changed {n} times", "leader changes")),
    (r"timeline\.failover_s", MetricWords("the longest failover took {n}", "the longest failover", " s",
                                          never="a leader a fault took was never replaced")),
    (r"timeline\.isr_shrinks", MetricWords("in-sync replica sets shrank {n} times", "ISR shrinks")),
    (r"timeline\.isr_expands", MetricWords("in-sync replica sets grew {n} times", "ISR expansions")),
    (r"timeline\.offline", MetricWords("{n} partitions went offline", "partitions gone offline")),
    (r"timeline\.rebalances", MetricWords("the consumers rebalanced {n} times", "rebalances")),
    (r"timeline\.controller_changes", MetricWords("the active controller changed {n} times", "controller changes")),
    (rf"consumer\.{_ID}\.processed", MetricWords("consumer {id} processed {n} records",
                                                 "records consumer {id} processed")),
    (rf"consumer\.{_ID}\.received", MetricWords("consumer {id} received {n} records",
                                                "records consumer {id} received")),
    (rf"consumer\.{_ID}\.partitions", MetricWords("consumer {id} held {n} partitions",
                                                  "partitions consumer {id} held")),
    (rf"consumer\.{_ID}\.assign_wait_s", MetricWords(
        "consumer {id} waited {n} for its first partitions", "how long consumer {id} waited for its first partitions",
        " s", never="consumer {id} never got a partition")),
    (rf"consumer\.{_ID}\.lso_wait_s", MetricWords(
        "consumer {id} waited {n} behind an open transaction",
        "the longest consumer {id} waited behind an open transaction", " s")),
    (rf"consumer\.{_ID}\.fatal_error", MetricWords("consumer {id} hit {n} fatal errors",
                                                   "fatal errors of consumer {id}")),
    (rf"group\.{_GROUP}\.processed", MetricWords("group {g} processed {n} records", "records group {g} processed")),
    (rf"group\.{_GROUP}\.distinct", MetricWords("group {g} processed {n} distinct records",
                                                "distinct records group {g} processed")),
    (rf"group\.{_GROUP}\.deleted_kept", MetricWords(
        "group {g} still held a value for {n} keys the producer had deleted",
        "deleted keys whose value group {g} still held")),
    (rf"group\.{_GROUP}\.revoked", MetricWords("group {g}'s rebalances took {n} partitions from its consumers",
                                               "partitions taken from group {g}'s consumers")),
    (rf"group\.{_GROUP}\.pause_s", MetricWords("a partition of group {g} went without a consumer for {n}",
                                               "the longest a partition of group {g} went without a consumer", " s")),
    (rf"group\.{_GROUP}\.stopped_s", MetricWords("no consumer of group {g} held a partition for {n}",
                                                 "the longest group {g} held no partition", " s")),
    (r"consumers\.processed", MetricWords("{n} records were processed by the consumers",
                                          "records processed by the consumers")),
    (r"faults\.missed", MetricWords("{n} of the lab's faults did not fire", "faults that did not fire")),
    (r"faults\.failed", MetricWords("{n} of the lab's faults fired and failed", "faults that failed")),
)
_EXPRESSION = re.compile(r"\s*(?P<metric>\S+)\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<rhs>\S+)\s*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# a comparison in words ("" for ==): counts read "fewer", times "less"
_RELATION = {"==": "", "!=": "anything but", "<": "{fewer} than", "<=": "at most", ">": "more than", ">=": "at least"}


def metric_words(metric: str) -> MetricWords:
    """How ``metric`` reads; a name this table does not know reads as itself."""
    for pattern, words in _METRICS:
        if m := re.fullmatch(pattern, metric):
            fill = m.groupdict()
            return MetricWords(words.seen.format(n="{n}", **fill), words.noun.format(**fill), words.unit,
                               words.never.format(**fill))
    return MetricWords(f"{metric} was {{n}}", metric)


def amount(value: Measured | None, unit: str = "") -> str:
    """A value as a sentence says it: 2,000 records, 12.5 s; never / not observed as words."""
    if value is None:
        return str(Unmeasured.NOT_OBSERVED)
    if isinstance(value, Unmeasured):
        return str(value)
    text = f"{int(value):,}" if value == int(value) else f"{value:,g}"
    return text + unit


def unmet(text: str, seen: Measured | None, wanted: Measured | None) -> str:
    """What an expectation ``text`` (``METRIC OP VALUE|METRIC``, as the lab file writes it) that did not hold
    saw, as a sentence: ``lost == 0`` seen at 312 reads "312 acknowledged records were never processed
    (expected none)". A text that is no expression (a grade's own row) is already a sentence: it is kept."""
    m = _EXPRESSION.fullmatch(text)
    if m is None:
        return text
    words = metric_words(m["metric"])
    if seen is None or seen == Unmeasured.NOT_OBSERVED:
        said = f"{words.noun}: {Unmeasured.NOT_OBSERVED}"
    elif seen == Unmeasured.NEVER:
        said = words.never or f"{words.noun}: {Unmeasured.NEVER}"
    else:
        said = words.seen.format(n=amount(seen, words.unit))
    return f"{said} ({_expected(m['op'], m['rhs'], wanted, words.unit)})"


def _expected(op: str, rhs: str, wanted: Measured | None, unit: str) -> str:
    if rhs == Unmeasured.NEVER:
        return "expected it never to happen" if op == "==" else "expected it to happen"
    relation = _RELATION[op].format(fewer="less" if unit else "fewer")
    if not _NUMBER.fullmatch(rhs):  # another metric: its value is what was wanted
        return f"expected {relation or 'as many as'} {metric_words(rhs).noun}: {amount(wanted)}"
    if op == "==" and float(rhs) == 0 and not unit:
        return "expected none"
    return " ".join(filter(None, ("expected", relation, amount(float(rhs), unit))))


# ---- triggers ------------------------------------------------------------------------------------------
_OP_WORDS = {"==": "", "!=": "other than ", "<": "below ", "<=": "at most ", ">": "above ", ">=": "at least "}


def _where(t: Trigger) -> str:
    return t.topic if t.partition is None else f"partition {t.partition} of {t.topic}"


def trigger_words(t: Trigger) -> str:
    """What a fault waits for, as the end of "waited 90 s for ...": "the ISR of test-topic to be 3"."""
    n = amount(t.value)
    match t.kind:
        case TriggerKind.START:
            return "the run to start"
        case TriggerKind.AFTER:
            return f"{amount(t.value, ' s')} to pass after the previous fault"
        case TriggerKind.AT:
            return f"the run's {amount(t.value, ' s')} mark"
        case TriggerKind.PROGRESS:
            return f"the producer to be {n}% done"
        case TriggerKind.ACKED:
            return f"{n} records to be acknowledged"
        case TriggerKind.CONSUMED:
            return f"{n} records to be processed" + (f" by consumer {t.local_id}" if t.local_id else "")
        case TriggerKind.ASSIGNED if t.op:
            return f"consumer {t.local_id} to hold {_OP_WORDS[t.op]}{n} partitions"
        case TriggerKind.ASSIGNED:
            return f"consumer {t.local_id} to be assigned partitions"
        case TriggerKind.ISR:
            return f"the ISR of {_where(t)} to be {_OP_WORDS[t.op]}{n}"
        case TriggerKind.LEADER_CHANGE:
            return f"a leader change in {_where(t)}"
        case TriggerKind.CONTROLLER_CHANGE:
            return "a change of the active controller"
        case TriggerKind.OFFLINE:
            return f"{_where(t)} to go offline"
        case TriggerKind.ONLINE:
            return f"{_where(t)} to come back online"
        case TriggerKind.PREFERRED:
            return f"the preferred leaders of {_where(t)} to lead, every replica in sync"
        case TriggerKind.PRODUCER:
            return f"the producer to {dict(stalled='stall', resumed='resume').get(t.text, 'finish')}"
        case TriggerKind.BROKERS:
            return f"{_OP_WORDS[t.op]}{n} brokers to run"
    raise AssertionError(t.kind)
