"""A fake world for LabRun: cluster, admin, producer and consumers that model just enough of Kafka for a
run's logic (fault order, triggers, drain, judging) to be tested in milliseconds without a JVM.

The tests claim nothing about Kafka with these: leaders are the first running replica, the ISR is the
running replicas, consumers get every partition and process what the producer acknowledged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.analysis.report import Report
from kafkalab.clients.stats import ClientEvent, ClientState, ConsumerStats, EventCallback, ProducerStats
from kafkalab.cluster import ClusterSpec, EndCause, NodeInfo, NodeKind, NodeState
from kafkalab.cluster.node import ActionNode, NodeAction
from kafkalab.cluster.quorum import QuorumState
from kafkalab.errors import KafkalabError
from kafkalab.labs.model import ConsumerPlan, ProducerPlan
from kafkalab.labs.run_deps import RunDeps, RunTiming

FAST = RunTiming(tick_s=0.01, assign_timeout_s=2.0, drain_poll_s=0.01, drain_quiet_s=0.05, node_timeout_s=2.0,
                 cluster_timeout_s=2.0)
NODE_MOVES = {"stop": NodeState.STOPPED, "kill": NodeState.KILLED, "pause": NodeState.PAUSED,
              "resume": NodeState.RUNNING, "start": NodeState.RUNNING, "restart": NodeState.RUNNING}


class FakeNode(ActionNode):
    silence_note = ""

    def __init__(self, world: World, name: str, node_dir: Path) -> None:
        self.world, self.name, self.node_dir = world, name, node_dir
        self.broker_id = int(name.split("-")[1]) if name.startswith("broker-") else None
        self.kind = NodeKind.BROKER if self.broker_id is not None else NodeKind.ZOOKEEPER
        self.state = NodeState.STOPPED
        self.cause: EndCause | None = EndCause.NOT_STARTED

    def stop(self, cause: EndCause = EndCause.STOPPED) -> None:
        self.act(NodeAction.STOP, cause)

    def act(self, action: NodeAction, cause: EndCause | None = None) -> None:
        """``cause``: a stop's, as the real node's (else the one its state implies; none while it runs)."""
        self.world.actions.append((str(action), self.name, self.world.progress()))
        self.state = NODE_MOVES[action]
        self.cause = cause or {NodeState.STOPPED: EndCause.STOPPED, NodeState.KILLED: EndCause.KILLED}.get(self.state)
        if action == "stop" and self.name.startswith("broker-"):
            self.world.stale[int(self.name.split("-")[1])] = self.world.metadata_lag
        for listener in self.world.cluster_listeners:
            listener(self, self.state, str(action))


class FakeCluster:
    def __init__(self, world: World, spec: ClusterSpec) -> None:
        self.world, self.spec = world, spec
        self.state_dir = spec.state_dir
        names = ["zookeeper", *(f"broker-{b}" for b in range(1, spec.brokers + 1))]
        self.nodes = [FakeNode(world, n, spec.state_dir / n) for n in names]
        self.bootstrap = "fake:9092"
        self.net = None  # no network-fault proxy
        self.shut_down = False
        self.shutdown_reason = ""

    def add_listener(self, listener: Callable[[Any, NodeState, str], None]) -> None:
        self.world.cluster_listeners.append(listener)

    def start(self, timeout: float, progress: Callable[[str], None],
              cancelled: Callable[[], bool] = lambda: False, held_back: Collection[int] = ()) -> None:
        deadline = time.monotonic() + self.world.start_s
        while time.monotonic() < deadline:  # as the real start: a cancel acts within a tick
            if cancelled():
                from kafkalab.cluster.node import StartCancelled

                self.shutdown(graceful=False)  # as the real start: a failed start ends what it started
                raise StartCancelled("the start was cancelled")
            time.sleep(0.01)
        for node in self.nodes:
            if node.name in {f"broker-{b}" for b in held_back}:
                continue
            node.state, node.cause = NodeState.RUNNING, None
            for listener in self.world.cluster_listeners:
                listener(node, node.state, "ready")
        progress("fake cluster up")

    def node(self, ref: int | str) -> FakeNode:
        name = f"broker-{ref}" if isinstance(ref, int) else ref
        return next(n for n in self.nodes if n.name == name)

    @property
    def brokers(self) -> list[FakeNode]:
        return self.nodes[1:]

    def running_brokers(self) -> list[int]:
        return [int(n.name.split("-")[1]) for n in self.brokers if n.state == NodeState.RUNNING]

    def infos(self) -> list[NodeInfo]:
        return []

    def quorum(self, timeout_s: float = 2.0) -> QuorumState:
        """KRaft's quorum view: the fake models no quorum, it only answers."""
        return QuorumState(time.time(), False, error="a fake cluster has no quorum")

    def shutdown(self, graceful: bool = True, reason: str = "") -> None:
        self.shut_down, self.shutdown_reason = True, reason
        for node in self.nodes:
            node.state = NodeState.STOPPED


class FakeAdmin:
    def __init__(self, world: World) -> None:
        self.world = world
        self.created = world.topics  # name -> (partitions, replication factor): the cluster's, not the client's

    def snapshot(self, offsets: bool = True, internal: bool = False, wait_s: float | None = None) -> ClusterSnapshot:
        cluster = self.world.cluster
        assert cluster is not None
        listed = cluster.running_brokers()
        live = listed + sorted(b for b, left in self.world.stale.items() if left > 0)  # as the brokers' metadata
        self.world.stale = {b: left - 1 for b, left in self.world.stale.items()}
        parts = []
        for topic, (count, rf) in self.created.items():
            for p in range(count):
                replicas = tuple(1 + (p + i) % cluster.spec.brokers for i in range(rf))
                isr = tuple(b for b in replicas if b in listed)
                parts.append(PartitionState(topic, p, isr[0] if isr else None, replicas, isr))
        return ClusterSnapshot(time.time(), True, controller=listed[0] if listed else None, brokers=tuple(live),
                               partitions=tuple(parts))

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str], timeout_s: float,
                     brokers_up: int = 0) -> None:
        self.world.brokers_up = brokers_up
        self.world.listed_at_create = self.snapshot(offsets=False).brokers
        if name in self.world.deleting:  # as ZooKeeper-mode Kafka: refused once, while the deletion ends
            self.world.deleting.discard(name)
            raise KafkalabError(f"cannot create topic {name}: Topic '{name}' is marked for deletion.")
        self.created[name] = (partitions, rf)

    def topics(self) -> list[str]:
        return sorted(self.created)

    def delete_topic(self, name: str, timeout_s: float = 30.0) -> None:
        del self.created[name]
        self.world.deleted_topics.append(name)
        self.world.deleting.add(name)

    def delete_groups(self, groups: list[str], timeout_s: float = 10.0) -> None:
        self.world.deleted_groups.extend(groups)

    def wait_for_leaders(self, name: str, timeout_s: float = 30.0) -> None:
        pass

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self.world.altered.append((name, dict(configs)))


class FakeWatchSnapshots:
    """The run's watch polling the fake admin in the test's process; tells whether the run closed it."""

    def __init__(self, world: World) -> None:
        self.admin = FakeAdmin(world)
        self.closed = False

    def snapshot(self) -> ClusterSnapshot:
        return self.admin.snapshot(offsets=False, internal=True)

    def close(self) -> None:
        self.closed = True


class FakeProducer:
    """Acknowledges ``world.rate`` records per second until ``total``; ``world.stuck`` holds it at 0."""

    def __init__(self, world: World, plan: ProducerPlan, on_event: EventCallback) -> None:
        self.world = world
        self.total = plan.config.total
        self.on_event = on_event
        self.started_at: float | None = None
        self.stopped_at_acked: int | None = None
        self.paused = False

    def _acked(self) -> int:
        if self.started_at is None or self.world.stuck:
            return 0 if self.stopped_at_acked is None else self.stopped_at_acked
        if self.stopped_at_acked is not None:
            return self.stopped_at_acked
        return min(self.total, int((time.monotonic() - self.started_at) * self.world.rate))

    def start(self) -> None:
        self.started_at = time.monotonic()

    def stop(self, drain: bool = True) -> None:
        self.stopped_at_acked = self._acked()

    def join(self, timeout: float | None = None) -> bool:
        return True

    @property
    def running(self) -> bool:
        return self.started_at is not None and self.stopped_at_acked is None and self._acked() < self.total

    def stats(self) -> ProducerStats:
        acked = self._acked()
        state = (ClientState.STARTING if self.started_at is None
                 else ClientState.RUNNING if self.running else ClientState.FINISHED)
        return ProducerStats("producer", state, acked, acked, {}, 0, 0, 0.0, self.total)


class FakeConsumer:
    """Gets every partition ``world.assign_after_s`` after it started; processes what was acknowledged, unless
    ``world.lagging`` (then its lag never reaches 0)."""

    def __init__(self, world: World, plan: ConsumerPlan, on_event: EventCallback) -> None:
        self.world, self.plan, self.on_event = world, plan, on_event
        self.name = plan.name
        self.started_at: float | None = None
        self.state = ClientState.STARTING
        self.announced = False
        self.stop_calls = 0
        self.end_calls = 0  # ended by the run's stop: no close
        self.paused = False  # SIGSTOP: a paused consumer neither closes nor ends when told

    def start(self) -> None:
        self.started_at = time.monotonic()
        self.state = ClientState.RUNNING

    def stop(self) -> None:
        self.stop_calls += 1
        if not self.paused:
            self.state = ClientState.FINISHED

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def kill(self) -> None:
        self.state = ClientState.CRASHED

    def end(self) -> None:
        self.end_calls += 1
        self.state = ClientState.FINISHED

    def crash(self) -> None:
        self.state = ClientState.CRASHED

    def kill_stopped(self) -> None:
        self.state = ClientState.CRASHED

    def join(self, timeout: float | None = None) -> bool:
        return True

    @property
    def running(self) -> bool:
        return self.state == ClientState.RUNNING

    def _assignment(self) -> tuple[int, ...]:
        if not self.running or self.started_at is None:
            return ()
        if time.monotonic() - self.started_at < self.world.assign_after_s:
            return ()
        parts = tuple(range(self.world.partitions))
        if not self.announced:
            self.announced = True
            self.on_event(ClientEvent(time.time(), self.name, "assigned", partitions=parts))
        return parts

    def stats(self) -> ConsumerStats:
        parts = self._assignment()
        producer = self.world.producer
        processed = producer.stats().acked if producer is not None and parts else 0
        lag = {p: (1 if self.world.lagging else 0) for p in parts}
        return ConsumerStats(self.name, self.plan.group, self.state, "stable", processed, processed, 0.0, parts,
                             lag=lag)


def clean_report(verdict: str) -> Report:
    """A report of nothing lost or duplicated, without partitions: for a run whose analysis a test leaves out."""
    return Report(run=None, totals={}, classes={"lost": 0, "duplicated": 0}, per_partition=[], samples={},
                  verdict=verdict, inputs=[], elapsed_s=0.0)


class World:
    """Everything the fakes share, and what the tests read back."""

    def __init__(self, rate: float = 10000.0, partitions: int = 3) -> None:
        self.rate = rate
        self.partitions = partitions
        self.stuck = False
        self.lagging = False
        self.assign_after_s = 0.0
        self.start_s = 0.0  # how long the fake cluster takes to start
        self.report = clean_report("nothing lost")
        self.cluster: FakeCluster | None = None
        self.producer: FakeProducer | None = None
        self.consumers: list[FakeConsumer] = []
        self.watch_snapshots: list[FakeWatchSnapshots] = []  # one per run that started its clients
        self.cluster_listeners: list[Callable[[Any, NodeState, str], None]] = []
        self.actions: list[tuple[str, str, float]] = []  # (action, node, producer progress then)
        self.altered: list[tuple[str, dict[str, str]]] = []
        self.brokers_up = -1  # what the last topic creation was told of the running brokers
        self.metadata_lag = 0  # snapshots in which a stopped broker is still listed live, as ZooKeeper mode's lag
        self.stale: dict[int, int] = {}  # stopped broker -> snapshots it is still listed in
        self.listed_at_create: tuple[int, ...] = ()  # the live brokers the metadata listed at the last creation
        self.topics: dict[str, tuple[int, int]] = {}  # what the fake cluster holds, across admin clients
        self.deleted_topics: list[str] = []
        self.deleted_groups: list[str] = []
        self.deleting: set[str] = set()  # deleted topics whose next create is refused once
        self.audits: list[int] = []  # per audit read: how many consumers had been stopped by then
        self.during_audit: Callable[[int], None] = lambda _nth: None  # called with each read's number

    def progress(self) -> float:
        return self.producer.stats().acked / self.producer.total if self.producer is not None else 0.0

    def deps(self, timing: RunTiming = FAST) -> RunDeps:
        def cluster(spec: ClusterSpec) -> FakeCluster:
            self.cluster = FakeCluster(self, spec)
            return self.cluster

        def producer(plan: ProducerPlan, _dir: Path, _bootstrap: str, on_event: EventCallback, _seed: int) -> Any:
            self.producer = FakeProducer(self, plan, on_event)
            return self.producer

        def consumer(plan: ConsumerPlan, _dir: Path, _bootstrap: str, on_event: EventCallback) -> Any:
            self.consumers.append(FakeConsumer(self, plan, on_event))
            return self.consumers[-1]

        def watch_snapshots(_bootstrap: str, _run_dir: Path) -> FakeWatchSnapshots:
            self.watch_snapshots.append(FakeWatchSnapshots(self))
            return self.watch_snapshots[-1]

        def audit(_bootstrap: str, _topic: str, run_dir: Path) -> Path:
            self.audits.append(sum(c.stop_calls for c in self.consumers))
            self.during_audit(len(self.audits))
            (run_dir / "audit.csv").write_text("")
            return run_dir / "audit.csv"

        return RunDeps(
            cluster=cluster, admin=lambda _b: FakeAdmin(self), producer=producer,  # type: ignore[arg-type,return-value]
            consumer=consumer, audit=audit, analyze=lambda _d, _a, _l: self.report,
            send_control=lambda _b, _t, _w: self.partitions, reassign=lambda _b, _t, _p: "reassigned",
            watch_snapshots=watch_snapshots, timing=timing,
        )
