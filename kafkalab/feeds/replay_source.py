"""The console's source for a finished run: the frames it showed live, read back from the run dir.

No cluster runs: the partition table, node states, clients, chart and results come from the run's
``recording.jsonl``, ``timeline.json``, ``result.json`` and ``report.json`` at the replay clock's second.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafkalab.admin import ClusterSnapshot
from kafkalab.cluster import NodeState
from kafkalab.errors import KafkalabError
from kafkalab.feeds.frames import CLUSTER_STARTING, Marker, MarkerKind, NodesFrame, RunFrame
from kafkalab.feeds.lab_source import LIVE_PHASES, lab_view, markers, report_view
from kafkalab.feeds.net_view import NetView
from kafkalab.feeds.source import Source
from kafkalab.labs.events import event_from_dict
from kafkalab.labs.failover import lab_topics, leadership
from kafkalab.labs.loader import load_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.recording import RecordedRun


class ReplayClock:
    """Seconds into the run: moves at ``speed`` times the wall clock unless paused (by hand) or held (while a
    modal screen is up), stays in [start, end]. ``jumps`` counts the seeks: a frame read before the last one
    is of a second the replay has left."""

    def __init__(self, start: float, end: float, speed: float = 1.0, wall: Callable[[], float] = time.monotonic):
        self.start, self.end = start, end
        self.speed = speed
        self.paused = False
        self.held = False
        self.jumps = 0
        self._wall = wall
        self._lock = threading.Lock()
        self._base = start
        self._base_wall = wall()

    def now(self) -> float:
        with self._lock:
            if self.paused or self.held:
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

    def hold(self, held: bool) -> None:
        """Stop the clock while a question or the help is up (the run must not play on behind it), or let it go
        on; a pause by hand stays."""
        at = self.now()
        with self._lock:
            self.held = held
            self._rebase(at)

    def seek(self, delta_s: float) -> None:
        self.seek_to(self.now() + delta_s)

    def seek_to(self, at: float) -> None:
        with self._lock:
            self._rebase(at)
            self.jumps += 1

    @property
    def at_end(self) -> bool:
        return self.now() >= self.end


STOP_KINDS = (MarkerKind.FAULT, MarkerKind.NET, MarkerKind.LEADER)  # another topic's leader change is no stop
STOP_GROUP_S = 1.0  # events this close after a stop's first are that stop (a kill's leader changes come together)
SETTLE_S = 0.5  # a stop lands this long after its first event: the recording has what the event changed by then
NEAR_S = 0.05  # the replay this close to a stop is at it: the next and previous stops are the ones beyond


@dataclass(frozen=True)
class Stop:
    """Where a jump to the previous or next event lands (``at``), and the chart's marks there (none: the
    verdict)."""

    at: float
    markers: tuple[Marker, ...] = ()


def event_stops(marks: Sequence[Marker], verdict_at: float | None, end: float) -> tuple[Stop, ...]:
    """The stops of a recorded run, in time order: its faults, network changes and leader changes, grouped when
    close, and its verdict."""
    groups: list[list[Marker]] = []
    for m in sorted((m for m in marks if m.kind in STOP_KINDS), key=lambda m: m.at_s):
        if groups and m.at_s - groups[-1][0].at_s <= STOP_GROUP_S:
            groups[-1].append(m)
        else:
            groups.append([m])
    stops = [Stop(min(end, g[0].at_s + SETTLE_S), tuple(g)) for g in groups]
    if verdict_at is not None:
        stops.append(Stop(min(end, verdict_at + SETTLE_S)))
    return tuple(sorted(stops, key=lambda s: s.at))


@dataclass(frozen=True)
class Instant:
    """Everything the console shows at second ``t`` of a recorded run, as a console opened then would come to
    show it: the nodes, the snapshots in the order it was shown them (none of a cluster yet; when the cluster
    did not answer at ``t``, the last it answered, kept greyed; ``t``'s), the run."""

    t: float
    nodes: NodesFrame
    snapshots: tuple[ClusterSnapshot, ...]
    run: RunFrame


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
        # a node before the recording names it: not started, as the recording's first line of nodes says
        self._not_started = {i.name: dataclasses.replace(i, state=NodeState.STOPPED, reason="not started", pid=None,
                                                         uptime_s=0.0, restarts=0, cause=None)
                             for i in self.recorded.nodes(end)}
        self.voters = self.recorded.voters or (self.lab.cluster.controllers if self.lab is not None else 0)
        self.stops = event_stops(self.run(end).markers, self.recorded.result_at, end)  # the marks the chart shows

    def next_stop(self) -> Stop | None:
        now = self.clock.now()
        return next((s for s in self.stops if s.at > now + NEAR_S), None)

    def previous_stop(self) -> Stop | None:
        now = self.clock.now()
        return next((s for s in reversed(self.stops) if s.at < now - NEAR_S), None)

    def stop_here(self) -> int | None:
        """The index of the stop the replay is at, if it is at one."""
        now = self.clock.now()
        return next((i for i, s in enumerate(self.stops) if abs(s.at - now) <= NEAR_S), None)

    @property
    def closing(self) -> str:
        return "closing the replay ..."

    def boot(self, progress: Callable[[str], None]) -> None:
        progress(f"replaying {self.recorded.run_dir.name}")

    def instant(self) -> Instant:
        """The clock's second whole (a jump shows it so, not as changes from the second left)."""
        t = self.clock.now()
        now = self.snapshot(t)
        kept = self.recorded.last_answered(t) if not now.reachable else None
        starting = ClusterSnapshot(self.recorded.started_at + t, False, error=CLUSTER_STARTING)
        return Instant(t, self.nodes(t), (starting, *((kept,) if kept is not None else ()), now), self.run(t))

    def nodes(self, at: float | None = None) -> NodesFrame:
        """Every node at ``at`` (default: the clock's second), those the recording does not name yet as not
        started: a frame leaves a node it lacks as it was, which after a jump back was a later second's."""
        t = self.clock.now() if at is None else at
        named = {i.name: i for i in self.recorded.nodes(t)}
        infos = tuple(named.get(name, info) for name, info in self._not_started.items())
        net = self.recorded.net(t)
        return NodesFrame(infos + tuple(i for i in named.values() if i.name not in self._not_started),
                          quorum=self.recorded.quorum(t), net=NetView(*net) if net is not None else None)

    def snapshot(self, at: float | None = None) -> ClusterSnapshot:
        t = self.clock.now() if at is None else at
        snap = self.recorded.snapshot(t)
        if snap is None:  # no answer recorded yet: the run's cluster was starting, not unreachable
            return ClusterSnapshot(self.recorded.started_at + t, False, error=CLUSTER_STARTING)
        return snap

    def run(self, at: float | None = None) -> RunFrame:
        t = self.clock.now() if at is None else at
        phase = self.recorded.phase(t)
        producer, consumers = self.recorded.clients(t)
        result_in = self.recorded.result_at is not None and t >= self.recorded.result_at
        faults = self.recorded.faults(t)
        events = [event_from_dict(e) for e in self.recorded.events_until(t)]  # typed, as the live run's
        topics = lab_topics(self.lab) if self.lab is not None else None
        live = phase in LIVE_PHASES
        said = self.recorded.at("message", t)
        return RunFrame(
            live=live, phase=phase, producer=producer, consumers=consumers, processor=self.recorded.processor(t),
            throughput=self.recorded.throughput(t), markers=markers(events, topics),
            leadership=leadership(events, topics, self.recorded.snapshot(t) if live else None, t),
            lab=lab_view(self.lab, faults) if self.lab is not None else None,
            report=report_view(self._result if result_in else None),
            settings=dict(self.lab.producer.settings) if self.lab is not None else {},
            message=said["message"] if said is not None else "",
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
