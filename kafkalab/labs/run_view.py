"""A run as its faults see it: :class:`RunControls` is the trigger's view (RunView) and what a fault may do
(FaultHost), over one :class:`~kafkalab.labs.run.LabRun`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafkalab.admin import ClusterSnapshot, plan_replicas
from kafkalab.clients import ClientState
from kafkalab.cluster import NodeAction, NodeState
from kafkalab.labs.events import Event, EventKind

if TYPE_CHECKING:
    from kafkalab.labs.run import LabRun
    from kafkalab.labs.run_clients import RunClients


class RunControls:
    def __init__(self, run: LabRun) -> None:
        self.run = run

    @property
    def _clients(self) -> RunClients:
        assert self.run.clients is not None
        return self.run.clients

    # ---- what triggers look at -------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.run.timeline.now()

    def producer_progress(self) -> tuple[float, int, ClientState]:
        stats = self.run.producer_stats()
        return (0.0, 0, ClientState.STARTING) if stats is None else (stats.progress, stats.acked, stats.state)

    def consumed(self, local_id: int | None) -> int:
        return self._clients.consumed(local_id)

    def assignment(self, local_id: int) -> tuple[int, ...]:
        return self._clients.assignment(local_id)

    def snapshot(self) -> ClusterSnapshot | None:
        return self.run.snapshot()

    def events_since(self, since: float, kind: EventKind) -> list[Event]:
        return self.run.timeline.events(kind, since=since)

    # ---- what faults may do ----------------------------------------------------------------------
    def node_states(self) -> Mapping[str, NodeState]:
        assert self.run.cluster is not None
        return {n.name: n.state for n in self.run.cluster.nodes}

    def fresh_snapshot(self) -> ClusterSnapshot | None:
        assert self.run.admin is not None
        snap = self.run.admin.snapshot(offsets=False)
        return snap if snap.reachable else self.run.snapshot()  # a paused broker can make a fresh one fail

    def node_action(self, name: str, action: NodeAction) -> None:
        assert self.run.cluster is not None
        action.apply(self.run.cluster.node(name))

    def producer_action(self, start: bool) -> None:
        self._clients.start_producer() if start else self._clients.stop_producer()

    def consumer_action(self, local_id: int, action: str) -> bool:
        if action == "start":
            self._clients.start_consumer(self.run.lab.consumer(local_id))
            return True
        return self._clients.end_consumer(local_id, crash=action == "crash")

    def send_control(self, topic: str, word: str) -> int:
        assert self.run.cluster is not None
        return self.run.deps.send_control(self.run.cluster.bootstrap, topic, word)

    def create_topic(self, topic: str) -> None:
        self.run.create_topic(topic)

    def alter_topic(self, topic: str, configs: Mapping[str, str]) -> None:
        assert self.run.admin is not None
        self.run.admin.alter_topic_configs(topic, dict(configs))

    def replicate(self, topic: str, replication_factor: int) -> str:
        assert self.run.admin is not None and self.run.cluster is not None
        snap = self.run.admin.snapshot(offsets=False)
        plan = plan_replicas(snap.topic(topic), list(snap.brokers), replication_factor)
        return self.run.deps.reassign(self.run.cluster.bootstrap, topic, plan)

    def elect_preferred(self, topic: str) -> None:
        assert self.run.admin is not None
        partitions = next(t.partitions for t in self.run.lab.topics if t.name == topic)
        self.run.admin.elect_preferred(topic, partitions)

    def live_metrics(self) -> dict[str, float]:
        return self._clients.live_metrics()
