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
from typing import Any, Protocol

from kafkalab.admin import Admin, ClusterSnapshot
from kafkalab.admin.quorum import QuorumState
from kafkalab.clients.stats import ConsumerStats, ProducerStats
from kafkalab.cluster import Cluster, NodeAction, NodeInfo, NodeState
from kafkalab.cluster.control import ControlServer, write_cluster_file
from kafkalab.cluster.node import zookeeper_command
from kafkalab.errors import KafkalabError

# snapshot errors that are states, not failures: the table says them plainly, not as UNREACHABLE
NO_CLUSTER_YET = "no cluster yet: g starts the lab's run and its cluster"
CLUSTER_STARTING = "the cluster is starting"
PORTS_TAKEN = "ports taken: choose free ports, attach or quit"
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
    quorum: QuorumState | None = None  # KRaft mode: the controllers' quorum (None in ZooKeeper mode)


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
    analysed: bool = True  # False: the run ended (failed, stopped) before its analysis; the verdict says why


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
    message: str = ""  # what the run does now ("creating topic test-topic ...", "reusing the running cluster")


CLOSING = "stopping every process the console started ..."  # what the console says while it closes
RUN_ACTIONS = frozenset({"start_run", "stop_run", "reset_lab", "send_control", "edit_setting", "edit_topic"})


class Source(Protocol):
    """The console's view of a lab: every method may block and is called from a thread worker.

    ``offers`` names the console actions (of :data:`RUN_ACTIONS`) this source can carry out; the console
    neither shows nor runs the others.
    """

    title: str
    offers: frozenset[str]

    def boot(self, progress: Callable[[str], None]) -> None: ...
    def nodes(self) -> NodesFrame: ...
    def snapshot(self) -> ClusterSnapshot: ...
    def run(self) -> RunFrame: ...
    def node_action(self, node: str, action: NodeAction) -> None: ...
    def start_run(self) -> str | None: ...
    def stop_run(self) -> None: ...
    def reset(self) -> None: ...
    def send_control(self, word: str) -> None: ...
    def change_setting(self, name: str, value: str) -> None: ...
    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> str | None: ...
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


class NodeLogs:
    """A follower per node log of a cluster, made as its nodes appear: a cluster builds its nodes in
    ``start()`` (in KRaft mode after formatting the storage, seconds later), so the nodes a console first sees
    may be none."""

    def __init__(self) -> None:
        self._followers: dict[str, LogFollower] = {}

    def new_lines(self, cluster: Cluster) -> dict[str, tuple[str, ...]]:
        """Each node's new lines, for the nodes that have some."""
        for node in cluster.nodes:
            if node.name not in self._followers:
                self._followers[node.name] = LogFollower(node.log_path)
        lines = {name: follower.new_lines() for name, follower in self._followers.items()}
        return {name: new for name, new in lines.items() if new}


QUORUM_WAIT_S = 1.0  # while the active controller is dead, the quorum answers late or not at all
ZK_ASK_EVERY_S = 5.0  # each `cons` writes a line to ZooKeeper's log: ask rarely
_zk_asked: dict[int, tuple[float, int | None]] = {}


def metadata_facts(cluster: Cluster) -> tuple[int | None, QuorumState | None]:
    """ZooKeeper's client count, or in KRaft mode the quorum (a bounded wait)."""
    if cluster.spec.kraft:
        return None, cluster.quorum(timeout_s=QUORUM_WAIT_S)
    zk = cluster.zookeeper
    return (zookeeper_connections(zk.port) if zk.state == NodeState.RUNNING else None), None


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
    """A bare cluster with the console as its owner: nodes, logs, admin snapshots, node controls, and the
    default workload (the demo topic, a producer and a consumer) on `g` / `x`."""

    offers = frozenset({"start_run", "stop_run", "edit_topic"})
    reports = False  # the default workload is not analysed: no report in Results

    def __init__(self, cluster: Cluster, title: str = "kafkalab", owned: bool = True, note: str = "",
                 label: str = "no lab") -> None:
        """``owned=False`` attaches to a cluster someone else started and will shut down; ``note`` is said
        first when the console boots (e.g. why the cluster took free ports); ``label`` names it in the top
        bar where a lab's id would be."""
        self.note = note
        self.label = label
        from kafkalab.ui.workload import Workload

        self.cluster = cluster
        self.workload = Workload(cluster.spec.state_dir / "workload")
        self.title = title
        self.owned = owned
        self._admin: Admin | None = None
        self._server: ControlServer | None = None
        self._down = threading.Event()
        self._logs = NodeLogs()
        self._closed = False

    def boot(self, progress: Callable[[str], None]) -> None:
        if self.note:
            progress(self.note)
        if self.owned:
            self.cluster.start(progress=progress)
            write_cluster_file(self.cluster)
            self._server = ControlServer(self.cluster, self._down)
        admin = Admin(self.cluster.bootstrap, timeout_s=5.0)
        from kafkalab.ui.workload import DEMO_TOPIC, ensure_demo_topic

        progress(ensure_demo_topic(admin, len(self.cluster.spec.broker_ids)))
        progress(f"{DEMO_TOPIC} ready: g runs a producer and a consumer")
        self._admin = Admin(self.cluster.bootstrap)

    def nodes(self) -> NodesFrame:
        if not self.cluster.nodes:
            return NodesFrame(())
        logs = self._logs.new_lines(self.cluster)
        conns, quorum = metadata_facts(self.cluster)
        return NodesFrame(tuple(self.cluster.infos()), logs, conns, self._down.is_set(), quorum)

    def snapshot(self) -> ClusterSnapshot:
        if self._admin is None:
            return ClusterSnapshot(time.time(), False, error=CLUSTER_STARTING)
        return self._admin.snapshot(wait_s=SNAPSHOT_WAIT_S)

    def run(self) -> RunFrame:
        return self.workload.frame()

    def node_action(self, node: str, action: NodeAction) -> None:
        action.apply(self.cluster.node(node))

    def start_run(self) -> None:
        self.workload.start(self.cluster.bootstrap)

    def stop_run(self) -> None:
        self.workload.stop()

    def reset(self) -> None:
        raise NotImplementedError("no lab loaded: open the console on a lab to reset it")

    def send_control(self, word: str) -> None:
        raise NotImplementedError("no lab loaded: send-control needs a lab's consumers")

    def change_setting(self, name: str, value: str) -> None:
        raise NotImplementedError("no lab loaded: settings belong to a lab's clients")

    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
        if self._admin is None:
            raise KafkalabError("the cluster is still starting: try again in a moment")
        return alter_topic(self._admin, topic, replication_factor, min_isr)

    def reassign_topic(self, topic: str, replication_factor: int) -> str:
        if self._admin is None:
            raise KafkalabError("the cluster is still starting: try again in a moment")
        return reassign_topic(self.cluster, self._admin, topic, replication_factor)

    @property
    def closing(self) -> str:
        """What the console says while it closes."""
        if self.owned:
            return CLOSING
        return "closing the console (its workload only): the attached cluster keeps running ..."

    @property
    def after_quit(self) -> str:
        """What is still running once the console is gone (an attached cluster) and how to stop it."""
        if self.owned:
            return ""
        state_dir = self.cluster.spec.state_dir
        return (f"the cluster in {state_dir} keeps running: `kafkalab cluster down --state-dir {state_dir}` "
                f"stops it, `kafkalab console --attach {state_dir}` shows it again")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.workload.stop()
        if self._server is not None:
            self._server.close()
        if self.owned:
            self.cluster.shutdown()


class NeedsReassignment(KafkalabError):
    """A replication factor change on an existing topic: only a partition reassignment does it."""

    def __init__(self, topic: str, current: int, wanted: int) -> None:
        super().__init__(f"{topic} has RF {current}: changing it to {wanted} needs a partition reassignment")
        self.topic, self.current, self.wanted = topic, current, wanted


def alter_topic(admin: Admin, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
    """Create the topic when missing (6 partitions), else set its min.insync.replicas; says what it did.

    An RF change on an existing topic raises :class:`NeedsReassignment` (after any min ISR change).
    """
    configs: dict[str, Any] = {} if min_isr is None else {"min.insync.replicas": str(min_isr)}
    snapshot = admin.snapshot(offsets=False)
    live = len(snapshot.brokers)
    if topic not in admin.topics():
        rf = replication_factor or min(3, live) or 1
        if snapshot.reachable and rf > live:
            raise KafkalabError(f"rf={rf} is more than the {live} brokers running: give rf={live} or fewer")
        admin.create_topic(topic, 6, rf, configs, timeout_s=30)
        return f"created {topic}: 6 partitions, RF {rf}" + (f", min.insync.replicas {min_isr}" if min_isr else "")
    if configs:
        admin.alter_topic_configs(topic, configs)
    current = max((len(p.replicas) for p in snapshot.topic(topic)), default=0)
    if replication_factor is not None and current and replication_factor != current:
        raise NeedsReassignment(topic, current, replication_factor)
    return f"{topic}: min.insync.replicas {min_isr}" if configs else f"{topic} unchanged"


def reassign_topic(cluster: Cluster, admin: Admin, topic: str, replication_factor: int) -> str:
    """Move ``topic`` to ``replication_factor`` replicas per partition (Kafka's reassignment, via the jars)."""
    from kafkalab.admin.reassign import plan_replicas, reassign

    snapshot = admin.snapshot(offsets=False)
    plan = plan_replicas(snapshot.topic(topic), snapshot.brokers, replication_factor)
    reassign(cluster.dist, cluster.bootstrap, topic, plan)
    return f"{topic}: reassignment to RF {replication_factor} submitted; the ISR column shows it complete"
