"""Acknowledged records per second over a run, from successive producer samples: the console's chart."""

from __future__ import annotations

from collections import deque

THROUGHPUT_POINTS = 600  # the chart's last 5 minutes at the console's 0.5 s poll
MIN_GAP_S = 0.4  # samples closer than this are skipped: a rate over a sliver of time is mostly noise


class ThroughputSampler:
    """``add`` a producer's acknowledged count at seconds into the run; ``points`` are (seconds, records/s)."""

    def __init__(self) -> None:
        self._points: deque[tuple[float, float]] = deque(maxlen=THROUGHPUT_POINTS)
        self._last: tuple[float, int] | None = None

    def add(self, t: float, acked: int) -> tuple[float, float] | None:
        """Returns the point this sample made, if it made one (the first sample and one too close make none)."""
        last = self._last
        if last is not None and t - last[0] < MIN_GAP_S:
            return None
        self._last = (t, acked)
        if last is None:
            return None
        point = (round(t, 2), max(0.0, (acked - last[1]) / (t - last[0])))
        self._points.append(point)
        return point

    def clear(self) -> None:
        self._points.clear()
        self._last = None

    @property
    def points(self) -> tuple[tuple[float, float], ...]:
        return tuple(self._points)
