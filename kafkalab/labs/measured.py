"""What a run measured: a number, or one of two facts that are not numbers.

A consumer that never got a partition has no wait time; a client whose internals kafkalab cannot see, or a
run that ended before a metric was taken, has no value at all. Both were once ``-1`` or ``0`` and compared as
numbers, so "never assigned" passed ``assign_wait_s < 10``. Here they are values of their own: no comparison
holds on them except one that names ``never`` explicitly, and "not observed" holds nothing.
"""

from __future__ import annotations

from enum import StrEnum


class Unmeasured(StrEnum):
    NEVER = "never"  # what the metric times never happened (a consumer never assigned a partition)
    NOT_OBSERVED = "not observed"  # kafkalab did not see it: it judges nothing


Measured = float | Unmeasured

# metrics that time something (seconds): when the run did not produce one, it was not observed; a missing
# count is 0 (a producer with no failures writes no producer.failed.X)
TIMED_SUFFIX = "_s"


def missing(metric: str) -> Measured:
    """The value of ``metric`` when the run did not produce it."""
    return Unmeasured.NOT_OBSERVED if metric.endswith(TIMED_SUFFIX) else 0.0


def measured_from_json(raw: object) -> Measured | None:
    """A value as result.json / grade.json store it: a number, ``"never"``, ``"not observed"`` or null."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return Unmeasured(raw)
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ValueError(f"{raw!r} is not a measured value")
    return float(raw)


def rounded(value: Measured, digits: int = 3) -> Measured:
    return value if isinstance(value, Unmeasured) else round(value, digits)


def num(value: Measured | None) -> str:
    """How every view writes a value: ``-`` for none, ``never`` / ``not observed``, integers without a point."""
    if value is None:
        return "-"
    if isinstance(value, Unmeasured):
        return str(value)
    return f"{value:g}" if value != int(value) else f"{int(value)}"
