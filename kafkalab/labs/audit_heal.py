"""The nodes a late audit must bring back to read the lab's topic, and the lab's state put back once it read.

After a run the cluster is the incident's evidence (the design's rule: never repaired behind the attendee's
back): the brokers the lab stopped or killed stay down, and nothing appears that the lab's state would not
hold. So the audit touches a node only when a partition of the topic cannot be read without it (no leader, or
a leader that is not running): then it brings back that partition's replicas that are down (and ZooKeeper or
the controllers, should they be down: the election needs them), and once it has read, stops each again with
the end cause :attr:`~kafkalab.cluster.EndCause.AUDIT` (a paused one is paused again). A node the lab never
started (a KRaft broker held back) holds nothing and is never started: started, it would stay registered.

Why bring brokers back rather than read their partition files (Kafka's DumpLogSegments)? "What the brokers
hold" is what the cluster serves once they are back: a returning old leader truncates what its successor never
had, an unclean election keeps only the new leader's log. Kafka's own election and truncation say that; a
replica's files only say what it wrote. Why only the replicas a partition needs? The audit's client is
librdkafka's consumer, which confluent-kafka creates only with a group.id and which then looks up its group's
coordinator though it only assigns partitions: the first lookup while as many brokers run as
offsets.topic.replication.factor creates ``__consumer_offsets``. Bringing back only what a read needs keeps
the running brokers where the lab left them, unless those replicas alone reach that factor.
"""

from __future__ import annotations

from kafkalab.cluster import EndCause, Node, NodeAction, NodeKind, NodeState
from kafkalab.labs.events import Actor
from kafkalab.labs.interruptible import in_thread
from kafkalab.labs.run_context import RunContext

IN_TRANSIT = (NodeState.STARTING, NodeState.STOPPING)
SETTLED = tuple(s for s in NodeState if s not in IN_TRANSIT)


class AuditHeal:
    """:meth:`bring_back` what the read needs; :meth:`put_back` in a ``finally`` after the read."""

    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.brought: list[tuple[Node, NodeState]] = []  # each node brought back, and the state the lab left it in

    def bring_back(self) -> None:
        """The down replicas of every partition without a running leader running again, and leaders elected."""
        run = self.run
        timeout = run.deps.timing.node_timeout_s
        for node in run.cluster.nodes:  # a start or stop the lab asked for ends first: its outcome is the lab's
            run.wait_node(node.name, SETTLED, timeout)
        needed = self.needed()
        if not needed:
            return
        run.say(f"bringing {', '.join(n.name for n in needed)} back for the audit (partitions of "
                f"{run.lab.topic} cannot be read without them): down again once it has read")
        for node in needed:  # kafkalab's own moves: the timeline and the chart say so
            self.brought.append((node, node.state))
            paused = node.state == NodeState.PAUSED
            with run.timeline.actors.acting(node.name, Actor.KAFKALAB,
                                            NodeAction.RESUME if paused else NodeAction.START):
                if paused:
                    node.resume()
                else:
                    node.start()
        for node in needed:
            run.wait_node(node.name, (NodeState.RUNNING,), timeout)
        in_thread(lambda: run.admin.wait_for_leaders(run.lab.topic, timeout_s=60), run.sleep,
                  run.deps.timing.tick_s, "audit-leaders")

    def needed(self) -> list[Node]:
        """The nodes a read of the lab's topic needs back: the replicas, not running, of each partition whose
        leader is not running, with ZooKeeper and the controllers when down; every down node when no broker
        answers (nothing to tell them apart by). A node the lab never started is never needed."""
        run = self.run
        snapshot = in_thread(lambda: run.admin.snapshot(offsets=False), run.sleep, run.deps.timing.tick_s,
                             "audit-metadata")
        down = [n for n in run.cluster.nodes if n.state != NodeState.RUNNING and n.cause != EndCause.NOT_STARTED]
        if not snapshot.reachable:
            return down
        running = {n.broker_id for n in run.cluster.brokers if n.state == NodeState.RUNNING}
        unread = [p for p in snapshot.topic(run.lab.topic) if p.leader not in running]
        if not unread:
            return []
        replicas = {b for p in unread for b in p.replicas}
        return [n for n in down if n.kind != NodeKind.BROKER or n.broker_id in replicas]

    def put_back(self) -> None:
        """Every node brought back down again as the lab left it, brokers before the ZooKeeper or controllers
        they report to (the reverse of their start), each waited for."""
        run = self.run
        while self.brought:
            node, was = self.brought.pop()
            if was == NodeState.PAUSED:
                with run.timeline.actors.acting(node.name, Actor.KAFKALAB, NodeAction.PAUSE):
                    node.pause()
                run.wait_node(node.name, (NodeState.PAUSED,), run.deps.timing.node_timeout_s)
            else:
                node.stop(cause=EndCause.AUDIT)
                run.wait_node(node.name, (NodeState.STOPPED, NodeState.KILLED), run.deps.timing.node_timeout_s)
