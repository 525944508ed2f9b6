"""The console's source for a finished run: the frames it showed live, read back from the run dir.

No cluster runs: the partition table, node states, clients, chart and results come from the run's
``recording.jsonl``, ``timeline.json``, ``result.json`` and ``report.json`` at the replay clock's second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from kafkalab.admin import ClusterSnapshot
from kafkalab.errors import KafkalabError
from kafkalab.feeds.frames import NodesFrame, RunFrame
from kafkalab.feeds.lab_source import LIVE_PHASES, lab_view, markers, report_view
from kafkalab.feeds.source import Source
from kafkalab.labs.loader import load_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.recording import RecordedRun

SPEEDS = (1.0, 2.0, 4.0)


class ReplayClock:
    """Seconds into the run: moves at ``speed`` times the wall clock unless paused, stays in [start, end]."""

    def __init__(self, start: float, end: float, speed: float = 1.0, wall: Callable[[], float] = time.monotonic):
        self.start, self.end = start, end
        self.speed = speed
        self.paused = False
        self._wall = wall
        self._lock = threading.Lock()
        self._base = start
        self._base_wall = wall()

    def now(self) -> float:
        with self._lock:
            if self.paused:
                return self._base
            return min(self.end, self._base + (self._wall() - self._base_wall) * self.speed)

    def _rebase(self, at: float) -> None:
        self._base, self._base_wall = max(self.start, min(self.end, at)), self._wall()

    def set_speed(self, speed: float) -> None:
        at = self.now()
        with self._lock:
            self.speed = speed
            self._rebase(at)

    def toggle_pause(self) -> None:
        at = self.now()
        with self._lock:
            self.paused = not self.paused
            self._rebase(at)

    def seek(self, delta_s: float) -> None:
        at = self.now()
        with self._lock:
            self._rebase(at + delta_s)

    @property
    def at_end(self) -> bool:
        return self.now() >= self.end


class ReplaySource(Source):
    """A :class:`~kafkalab.feeds.source.Source` over a recorded run: it offers no action (nothing runs)."""

    why_not = "a replay has no cluster or clients to act on: `kafkalab console` runs the lab live"

    def __init__(self, run_dir: Path, speed: float = 1.0) -> None:
        self.recorded = RecordedRun(run_dir)
        self.lab: Lab | None = _lab_of(Path(run_dir))
        title = self.lab.title if self.lab is not None else self.recorded.lab_id
        self.title = f"kafkalab replay · {title}"
        end = max(self.recorded.end, self.recorded.result_at or 0.0)
        self.clock = ReplayClock(self.recorded.start, end, speed)
        self._result = self.recorded.result()
        self.broker_ids = sorted(i.broker_id for i in self.recorded.nodes(end) if i.broker_id is not None)
        self.label = self.recorded.lab_id
        self.node_names = tuple(i.name for i in self.recorded.nodes(end))
        self.voters = self.recorded.voters or (self.lab.cluster.controllers if self.lab is not None else 0)

    def boot(self, progress: Callable[[str], None]) -> None:
        progress(f"replaying {self.recorded.run_dir.name}")

    def nodes(self) -> NodesFrame:
        t = self.clock.now()
        return NodesFrame(tuple(self.recorded.nodes(t)), quorum=self.recorded.quorum(t))

    def snapshot(self) -> ClusterSnapshot:
        t = self.clock.now()
        snap = self.recorded.snapshot(t)
        if snap is None:
            return ClusterSnapshot(self.recorded.started_at + t, False, error="the run's cluster is starting")
        return snap

    def run(self) -> RunFrame:
        t = self.clock.now()
        phase = self.recorded.phase(t)
        producer, consumers = self.recorded.clients(t)
        result_in = self.recorded.result_at is not None and t >= self.recorded.result_at
        faults = self.recorded.faults(t)
        events = ((e["t"], e["kind"], e["detail"]) for e in self.recorded.events_until(t))
        return RunFrame(
            live=phase in LIVE_PHASES, phase=phase, producer=producer, consumers=consumers,
            throughput=self.recorded.throughput(t), markers=markers(events),
            lab=lab_view(self.lab, faults) if self.lab is not None else None,
            report=report_view(self._result if result_in else None),
            settings=dict(self.lab.producer.settings) if self.lab is not None else {},
        )

    def close(self) -> None:
        """Nothing to stop: a replay starts no process."""


def _lab_of(run_dir: Path) -> Lab | None:
    path = run_dir / "lab.toml"
    if not path.is_file():
        return None
    try:
        return load_lab(path, check_name=False)
    except KafkalabError:  # the lab's format moved on since the run: replay without its instructions
        return None
