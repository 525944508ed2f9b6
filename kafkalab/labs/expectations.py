"""Expectations: ``NAME OP VALUE`` over the metrics of a run, where VALUE is a number or another metric.

Metric names (checked when a lab loads, so a typo is an error and never a silent pass):

- the analysis report: lost, lost_by_brokers, missed_by_consumers, duplicated, redelivered, reordered,
  key_reordered, recovered, aborted_read, unexpected, attempted, acknowledged, failed, unknown, consumed_rows,
  distinct_consumed, typed
- the producer: producer.acked, producer.attempted, producer.failed, producer.failed.ERROR_NAME,
  producer.stalls, producer.longest_stall_s
- the timeline: timeline.leader_changes (of the lab's topics), timeline.isr_shrinks, timeline.isr_expands,
  timeline.offline (partitions gone offline), timeline.rebalances, timeline.controller_changes (KRaft: the
  active controller), timeline.failover_s (the longest failover: seconds from the fault that took a leader away
  to the poll that saw another broker lead; ``never`` when none took over; not observed without such a fault)
- a consumer (by local id): consumer.N.processed, consumer.N.received, consumer.N.partitions,
  consumer.N.assign_wait_s (seconds from its start to its first partitions; ``never`` if it got none: compare
  it with ``== never`` or ``!= never``, no other comparison holds on it),
  consumer.N.fatal_error (1 when it hit a fatal error: librdkafka gave up, e.g. its group.instance.id refused),
  consumer.N.lso_wait_s (read_committed: the longest it waited having read to the last stable offset, records
  of an open transaction past it; not observed for a read_uncommitted consumer)
- a group: group.NAME.processed (rows), group.NAME.distinct (distinct records), group.NAME.deleted_kept (keys
  whose last acknowledged write was a tombstone while the last record of them the group processed has a value);
  its rebalances, until the run drains: group.NAME.revoked (partitions taken from a consumer),
  group.NAME.pause_s (the longest a partition then had no consumer), group.NAME.stopped_s (the longest no
  consumer held any partition)
- all consumers: consumers.processed
- the processor, summed over its instances: processor.consumed, processor.produced, processor.failed; with a
  transaction-id processor.transactions.committed, processor.transactions.aborted, processor.fenced (instances
  that ended fenced by a newer one of the same transactional id)
- the run: faults.missed (missed or failed), faults.failed (fired and failed, e.g. a topic not created)
- the brokers' logs: truncated (records the lab's topics lost to followers truncating their logs, e.g. a
  zombie leader's acknowledged writes cut off when it rejoined)
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.labs.measured import Measured, Unmeasured, missing

OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">=": operator.ge, ">": operator.gt,
}


REPORT_METRICS = (
    "lost", "lost_by_brokers", "missed_by_consumers", "duplicated", "redelivered", "reordered", "key_reordered",
    "recovered", "aborted_read", "unexpected", "attempted", "acknowledged", "failed", "unknown", "consumed_rows",
    "distinct_consumed", "typed",
)
_PATTERNS = (
    *(re.escape(m) for m in REPORT_METRICS),
    r"producer\.(acked|attempted|failed|stalls|longest_stall_s)",
    r"producer\.failed\.[A-Z_][A-Z0-9_]*",
    r"timeline\.(leader_changes|isr_shrinks|isr_expands|offline|rebalances|controller_changes|failover_s)",
    r"consumer\.\d+\.(processed|received|partitions|assign_wait_s|fatal_error|lso_wait_s)",
    r"group\.[A-Za-z0-9._-]+\.(processed|distinct|deleted_kept|revoked|pause_s|stopped_s)",
    r"consumers\.processed",
    r"processor\.(consumed|produced|failed|fenced|transactions\.(committed|aborted))",
    r"faults\.(missed|failed)",
    "truncated",
)
_METRIC = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# the metrics known while the run is under way, for `check` faults
LIVE_PREFIXES = ("producer.", "consumer.", "consumers.", "group.", "timeline.")


def is_metric(name: str) -> bool:
    return _METRIC.fullmatch(name) is not None


# "never" is compared only for (in)equality: "< 10" asks for a number, and "never" is not one
NEVER_OPS = ("==", "!=")


@dataclass(frozen=True)
class Expectation:
    metric: str
    op: str
    value: float | Unmeasured | None  # a number or ``never``; None when ``other`` names a metric
    other: str = ""
    line: int = 0

    @property
    def text(self) -> str:
        rhs = self.other or (str(self.value) if isinstance(self.value, Unmeasured) else f"{self.value:g}")
        return f"{self.metric} {self.op} {rhs}"

    def evaluate(self, metrics: Mapping[str, Measured]) -> tuple[bool, Measured, Measured]:
        """(held, actual, wanted): see :func:`holds`. A count the run did not produce is 0; a time, not observed."""
        actual = metrics.get(self.metric, missing(self.metric))
        wanted = metrics.get(self.other, missing(self.other)) if self.other else self.value
        assert wanted is not None
        return holds(self.op, actual, wanted), actual, wanted


def holds(op: str, actual: Measured, wanted: Measured) -> bool:
    """Whether ``actual OP wanted``: numbers compare as numbers; "never" only when the comparison names it
    (``== never`` holds on never, ``!= never`` on a number); "not observed" holds nothing."""
    if Unmeasured.NOT_OBSERVED in (actual, wanted):
        return False
    if isinstance(actual, Unmeasured) or isinstance(wanted, Unmeasured):
        return wanted == Unmeasured.NEVER and op in NEVER_OPS and OPS[op](actual, wanted)
    return bool(OPS[op](actual, wanted))


def parse_comparison(text: str) -> tuple[str, float | Unmeasured | None, str]:
    """``"> 0"`` -> (">", 0, ""); ``"== acknowledged"`` -> ("==", None, "acknowledged"); ``"== never"``."""
    s = text.strip()
    m = re.fullmatch(r"(<=|>=|==|!=|<|>)\s*(\S+)", s)
    if not m:
        raise ValueError(f"{text!r} is not a comparison: write e.g. \"> 0\", \"== 0\" or \"== acknowledged\"")
    op, rhs = m[1], m[2]
    if rhs == Unmeasured.NEVER:
        if op not in NEVER_OPS:
            raise ValueError(f"{text!r}: never is not a number: compare it with == never or != never")
        return op, Unmeasured.NEVER, ""
    if _NUMBER.fullmatch(rhs):
        return op, float(rhs), ""
    if not is_metric(rhs):
        raise ValueError(f"{rhs!r} is neither a number nor a metric name")
    return op, None, rhs


def make_expectation(metric: str, raw: object, line: int = 0) -> Expectation:
    """From ``metric = "> 0"`` (or ``metric = 0``, meaning ``== 0``)."""
    if not is_metric(metric):
        raise ValueError(f"{metric!r} is not a metric: see `kafkalab labs --metrics`")
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise ValueError(f"{raw!r} is not a comparison: write e.g. \"> 0\" or a number")
    if isinstance(raw, int | float):
        if raw < 0 and metric.endswith("_s"):  # once the sentinel for "never": say how to ask for that now
            raise ValueError(f"{metric} = {raw}: a time is never negative: write {metric} = \"== never\" for "
                             "one that never happened")
        return Expectation(metric, "==", float(raw), line=line)
    op, value, other = parse_comparison(raw)
    return Expectation(metric, op, value, other, line)


def parse_check(text: str, line: int = 0) -> Expectation:
    """``"consumers.processed == 0"`` for a `check` fault: only metrics known during a run."""
    m = re.fullmatch(r"\s*(\S+)\s*(.+)", text)
    if not m:
        raise ValueError(f"{text!r} is not NAME OP VALUE")
    exp = make_expectation(m[1], m[2], line)
    if not exp.metric.startswith(LIVE_PREFIXES):
        raise ValueError(f"{exp.metric} is known only after the run: a check can use {', '.join(LIVE_PREFIXES)}*")
    return exp
