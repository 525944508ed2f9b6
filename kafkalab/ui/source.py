"""What the console watches and drives, as plain frames built in worker threads.

The app never touches Kafka, processes or Spark itself: a :class:`Source` does, in thread workers, and
hands back frozen frames the panes render. :class:`ClusterSource` is the real one; tests use a fake
feed with the same methods.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kafkalab.admin import Admin, ClusterSnapshot
from kafkalab.clients.stats import ConsumerStats, ProducerStats
from kafkalab.cluster import Cluster, NodeAction, NodeInfo
from kafkalab.cluster.control import ControlServer, write_cluster_file
from kafkalab.cluster.node import zookeeper_command

LOG_LINES_KEPT = 200
SNAPSHOT_WAIT_S = 0.5  # end offsets not given by then show their last known value; the controller '?'
_LOG_READ_MAX = 65536


@dataclass(frozen=True)
class NodesFrame:
    """Every node's info, the log lines each wrote since the previous frame, ZooKeeper's client count."""

    infos: tuple[NodeInfo, ...]
    new_log_lines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    zk_connections: int | None = None
    down_requested: bool = False  # `kafkalab cluster down` asked the console's cluster to stop


@dataclass(frozen=True)
class Marker:
    """A point on the run's time axis worth marking on the chart: a fault, a leader change."""

    at_s: float
    label: str
    kind: str = "fault"  # fault | leader


@dataclass(frozen=True)
class TimelineStep:
    label: str
    done: bool
    detail: str = ""


@dataclass(frozen=True)
class LabView:
    lab_id: str
    title: str
    instructions: str  # markdown
    steps: tuple[TimelineStep, ...] = ()


@dataclass(frozen=True)
class ReportView:
    """The analysis report as the results pane shows it."""

    verdict: str
    ok: bool
    totals: Mapping[str, int]
    per_partition: Mapping[int, Mapping[str, int]]
    samples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFrame:
    live: bool = False
    phase: str = "idle"  # idle, starting, running, draining, analysing, done, failed
    producer: ProducerStats | None = None
    consumers: tuple[ConsumerStats, ...] = ()
    throughput: tuple[tuple[float, float], ...] = ()  # (seconds into the run, acknowledged/s)
    markers: tuple[Marker, ...] = ()
    lab: LabView | None = None
    report: ReportView | None = None
    settings: Mapping[str, str] = field(default_factory=dict)


class Source(Protocol):
    """The console's view of a lab: every method may block and is called from a thread worker."""

    title: str

    def boot(self, progress: Callable[[str], None]) -> None: ...
    def nodes(self) -> NodesFrame: ...
    def snapshot(self) -> ClusterSnapshot: ...
    def run(self) -> RunFrame: ...
    def node_action(self, node: str, action: NodeAction) -> None: ...
    def start_run(self) -> None: ...
    def stop_run(self) -> None: ...
    def reset(self) -> None: ...
    def send_control(self, word: str) -> None: ...
    def change_setting(self, name: str, value: str) -> None: ...
    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> None: ...
    def close(self) -> None: ...


class LogFollower:
    """The lines a node's log gained since the last call (reads only what is new, at most 64 KiB)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = ""

    def new_lines(self) -> tuple[str, ...]:
        try:
            with open(self.path, "rb") as fh:
                size = fh.seek(0, 2)
                if size < self._offset:  # truncated or replaced
                    self._offset, self._partial = 0, ""
                start = max(self._offset, size - _LOG_READ_MAX)
                fh.seek(start)
                data = fh.read().decode("utf-8", "replace")
                self._offset = size
        except FileNotFoundError:
            return ()
        text = self._partial + data
        lines = text.split("\n")
        self._partial = lines.pop()
        return tuple(lines[-LOG_LINES_KEPT:])


ZK_ASK_EVERY_S = 5.0  # each `cons` writes a line to ZooKeeper's log: ask rarely
_zk_asked: dict[int, tuple[float, int | None]] = {}


def zookeeper_connections(port: int) -> int | None:
    """How many clients ZooKeeper serves (the brokers), from its `cons` four-letter word, cached a while."""
    asked_at, count = _zk_asked.get(port, (0.0, None))
    if time.monotonic() - asked_at < ZK_ASK_EVERY_S:
        return count
    text = zookeeper_command(port, "cons", timeout=0.3)
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("/")]
    count = max(0, len(lines) - 1) if text else None  # minus the `cons` connection itself
    _zk_asked[port] = (time.monotonic(), count)
    return count


class ClusterSource:
    """A bare cluster with the console as its owner: nodes, logs, admin snapshots, node controls."""

    def __init__(self, cluster: Cluster, title: str = "kafkalab", owned: bool = True) -> None:
        """``owned=False`` attaches to a cluster someone else started and will shut down."""
        self.cluster = cluster
        self.title = title
        self.owned = owned
        self._admin: Admin | None = None
        self._server: ControlServer | None = None
        self._down = threading.Event()
        self._followers = {n.name: LogFollower(n.log_path) for n in cluster.nodes} if cluster.nodes else {}
        self._closed = False

    def boot(self, progress: Callable[[str], None]) -> None:
        if self.owned:
            self.cluster.start(progress=progress)
            write_cluster_file(self.cluster)
            self._server = ControlServer(self.cluster, self._down)
        self._followers = {n.name: LogFollower(n.log_path) for n in self.cluster.nodes}
        self._admin = Admin(self.cluster.bootstrap)

    def nodes(self) -> NodesFrame:
        if not self.cluster.nodes:
            return NodesFrame(())
        logs = {name: follower.new_lines() for name, follower in self._followers.items()}
        zk = self.cluster.zookeeper
        conns = zookeeper_connections(zk.port) if zk.state.alive else None
        return NodesFrame(tuple(self.cluster.infos()), {k: v for k, v in logs.items() if v}, conns,
                          self._down.is_set())

    def snapshot(self) -> ClusterSnapshot:
        if self._admin is None:
            return ClusterSnapshot(time.time(), False, error="cluster starting")
        return self._admin.snapshot(wait_s=SNAPSHOT_WAIT_S)

    def run(self) -> RunFrame:
        return RunFrame()

    def node_action(self, node: str, action: NodeAction) -> None:
        action.apply(self.cluster.node(node))

    def start_run(self) -> None:
        raise NotImplementedError("no lab loaded: open the console on a lab to run it")

    stop_run = reset = start_run

    def send_control(self, word: str) -> None:
        raise NotImplementedError("no lab loaded: there are no consumers to send to")

    def change_setting(self, name: str, value: str) -> None:
        raise NotImplementedError("no lab loaded: there is no producer or consumer to configure")

    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> None:
        if self._admin is None:
            raise RuntimeError("the cluster is still starting")
        self._admin.ensure_topic(topic, replication_factor, min_isr)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._server is not None:
            self._server.close()
        if self.owned:
            self.cluster.shutdown()

