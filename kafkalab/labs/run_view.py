"""A run as its faults see it: :class:`RunControls` is the trigger's view (RunView) and what a fault may do
(FaultHost), over a run's :class:`~kafkalab.labs.run_context.RunContext`."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from kafkalab.admin import ClusterSnapshot, Groups, ResetTarget, replication_plan
from kafkalab.admin.coordinator import group_coordinator
from kafkalab.admin.transactions import abort_transactions, aborted_line
from kafkalab.clients import ClientState
from kafkalab.clients.records import RecordTyper
from kafkalab.cluster import NodeAction, NodeState
from kafkalab.cluster.netwiring import NetRequest
from kafkalab.errors import KafkalabError
from kafkalab.labs.events import Event, EventKind
from kafkalab.labs.measured import Measured
from kafkalab.labs.run_context import RunContext


class RunControls:
    def __init__(self, run: RunContext) -> None:
        self.run = run
        self._clients = run.clients

    # ---- what triggers look at -------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.run.timeline.now()

    def producer_progress(self) -> tuple[float, int, ClientState]:
        stats = self._clients.producer_stats()
        return (0.0, 0, ClientState.STARTING) if stats is None else (stats.progress, stats.acked, stats.state)

    def producer_uncommitted(self) -> int:
        stats = self._clients.producer_stats()
        return 0 if stats is None else stats.uncommitted

    def processor_uncommitted(self) -> int:
        running = [s for s in self._clients.processor_stats() if not s.state.halted]
        return running[-1].uncommitted if running else 0

    def consumed(self, local_id: int | None) -> int:
        return self._clients.consumed(local_id)

    def assignment(self, local_id: int) -> tuple[int, ...]:
        return self._clients.assignment(local_id)

    def snapshot(self) -> ClusterSnapshot | None:
        return self.run.watch.last

    def events_since(self, since: float, kind: EventKind) -> list[Event]:
        return self.run.timeline.events(kind, since=since)

    # ---- what faults may do ----------------------------------------------------------------------
    def node_states(self) -> Mapping[str, NodeState]:
        return {n.name: n.state for n in self.run.cluster.nodes}

    def fresh_snapshot(self) -> ClusterSnapshot | None:
        snap = self.run.admin.snapshot(offsets=False)
        return snap if snap.reachable else self.run.watch.last  # a paused broker can make a fresh one fail

    def node_action(self, name: str, action: NodeAction) -> None:
        action.apply(self.run.cluster.node(name))

    def producer_action(self, start: bool) -> None:
        self._clients.start_producer() if start else self._clients.stop_producer()

    def pause_producer(self, pause: bool) -> None:
        """SIGSTOP (or SIGCONT): a hung producer, as a long GC pause or a stopped VM leaves it, its open
        transaction kept open (nothing is closed, nothing aborted); its pane says PAUSED meanwhile."""
        producer = self._clients.producer
        if producer is None or not producer.running:
            raise KafkalabError(f"the producer is not running: nothing to {'pause' if pause else 'resume'}")
        producer.pause() if pause else producer.resume()

    def crash_producer(self) -> None:
        """The producer killed (SIGKILL), as a supervisor ends a hung process: its log left partial, a transaction
        it has open left to its timeout. Not the crash word: a paused producer would send again before reading it."""
        producer = self._clients.producer
        if producer is None or not producer.running:
            raise KafkalabError("the producer is not running: nothing to crash")
        producer.kill()

    def consumer_action(self, local_id: int, action: str) -> bool:
        if action == "start":
            self._clients.start_consumer(self.run.lab.consumer(local_id))
            return True
        return self._clients.act_on_consumer(local_id, action)

    def processor_action(self, action: str) -> bool:
        return self._clients.processor_action(action)

    def send_control(self, topic: str, word: str) -> int:
        return self.run.deps.send_control(self.run.cluster.bootstrap, topic, word)

    def active_controller(self) -> str | None:
        """KRaft: the node hosting the quorum's leader (None in ZooKeeper mode)."""
        cluster = self.run.cluster
        if not cluster.spec.kraft:
            return None
        deadline = time.monotonic() + self.run.deps.timing.active_controller_wait_s
        while (quorum := cluster.quorum(timeout_s=3.0)).leader is None:
            if time.monotonic() > deadline:
                raise KafkalabError(f"no active KRaft controller to act on: {quorum.error or 'no leader'}")
            self.run.sleep(self.run.deps.timing.tick_s)
        return cluster.node(quorum.leader).name

    def group_coordinator(self, group: str) -> str:
        """The broker coordinating ``group`` now ("": the group of the run's consumers), from the cluster's
        metadata (:mod:`kafkalab.admin.coordinator`); KafkalabError when there is none to act on."""
        if not group:
            groups = sorted({c.group for c in self.run.lab.consumers})
            if len(groups) != 1:
                raise KafkalabError(f"'coordinator' needs a group: this run's consumers are in "
                                    f"{', '.join(groups) or 'no group'}")
            group = groups[0]
        found = group_coordinator(self.run.admin.snapshot(offsets=False, internal=True), group)
        if found.broker is None:
            raise KafkalabError(f"group {group} has no coordinator right now: {found.describe()}")
        return self.run.cluster.node(found.broker).name

    def create_topic(self, topic: str, timeout_s: float) -> None:
        self.run.create_topic(topic, timeout_s)

    def alter_topic(self, topic: str, configs: Mapping[str, str]) -> None:
        self.run.admin.alter_topic_configs(topic, dict(configs))

    def replicate(self, topic: str, replication_factor: int) -> str:
        plan = replication_plan(self.run.admin, topic, replication_factor)
        return self.run.deps.reassign(self.run.cluster.bootstrap, topic, plan)

    def add_partitions(self, topic: str, partitions: int) -> str:
        return self.run.admin.add_partitions(topic, partitions)

    def abort_transactions(self, topic: str, partition: int | None) -> str:
        """As `kafkalab txn abort`: the open transaction on the partition, or every one open on the topic."""
        cluster = self.run.cluster
        aborted = abort_transactions(cluster.dist, cluster.bootstrap, topic, partition)
        return "; ".join(aborted_line(t) for t in aborted)

    def elect_preferred(self, topic: str) -> None:
        partitions = next(t.partitions for t in self.run.lab.topics if t.name == topic)
        self.run.admin.elect_preferred(topic, partitions)

    def reset_offsets(self, group: str, target: ResetTarget, timeout_s: float) -> str:
        """Reset the group's offsets on the topics it has offsets for (else the lab's), once it is inactive."""
        groups = Groups(self.run.admin)
        topics = sorted({p.topic for p in groups.describe(group, wait_s=5.0).partitions}) or \
            [t.name for t in self.run.lab.topics]
        moves = groups.reset_when_inactive(group, topics, target, timeout_s)
        again = sum(max(0, m.current - m.new) for m in moves if m.current is not None)
        return f"{len(moves)} partition(s) {target.describe()}: {again:,} record(s) to read again"

    def type_records(self, topic: str, lines: Sequence[str]) -> str:
        """Send each line as a record (``key:value`` has a key), as `kafkalab type --key-sep :` does."""
        typer = RecordTyper(self.run.cluster.bootstrap, topic)
        try:
            outcomes = [typer.send(line, ":" if ":" in line else None) for line in lines]
        finally:
            typer.close()
        return "; ".join(f"{o.line} -> {o.describe()}" for o in outcomes)

    def live_metrics(self) -> dict[str, Measured]:
        return self._clients.live_metrics()

    def net(self, request: NetRequest) -> list[str]:
        """One network fault through the cluster's proxy (its change reaches the timeline as a NetEvent)."""
        net = self.run.cluster.net
        if net is None:
            raise KafkalabError("this cluster runs without the network-fault proxy: a lab with a network fault "
                                "turns [cluster] net_proxies on; with a kept cluster, end it (kafkalab cluster down)")
        reply = net.handle(request)
        return [str(rule) for rule in reply.get("applied", reply.get("healed", []))]
