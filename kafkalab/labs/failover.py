"""A run's leadership facts, computed once from its timeline and rendered as they are by every view (the chart's
legend, Results, the verdict, the report, result.json, the top bar, presenter mode):

- :class:`LeaderChanges`: the leader changes of the lab's topics, those of other topics (``__consumer_offsets``)
  kept apart, so a view shows them only labelled as theirs;
- :class:`Failover`: a partition whose leader a fault took away (a kill, stop, pause or crash, or a network
  isolation) and whose leadership another broker took: from whom to whom, and how long after the fault;
- :class:`Election`: while the run goes on, partitions whose leader a fault took away and that the cluster has
  not yet given another (the metadata still names the old leader, or none).

A run's leader changes are those seen until its analysis began: the report's per-partition counts are taken
then, and a change the watch sees later (while Spark runs) would make the views disagree.

Timing: a new leader is seen by the cluster watch's poll (every 0.5 s), so a failover's seconds run from the
fault to the poll that saw it. Each leader change keeps how long the watch was blind before it (``blind_s``):
when that is more than a poll, the time is said as "within".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from kafkalab.admin import ClusterSnapshot
from kafkalab.cluster.netwiring import NetAction
from kafkalab.cluster.node import NodeState
from kafkalab.labs.events import Actor, Event, EventKind, LeaderChange, NetEvent, NodeEvent, by_whom
from kafkalab.labs.model import Lab
from kafkalab.labs.results import Phase

Partition = tuple[str, int]
# the states in which a node is gone from the cluster, by a fault or on its own
DOWN = (NodeState.KILLED, NodeState.STOPPING, NodeState.STOPPED, NodeState.PAUSED, NodeState.FAILED)
FINE_S = 1.0  # a watch blind no longer than this (a poll and its answer) times a change to the poll


def lab_topics(lab: Lab) -> set[str]:
    """The topics whose leader changes are the run's: the producer's and those the lab plans."""
    return {lab.topic, *(t.name for t in lab.topics)}


def partition_names(keys: Sequence[Partition]) -> str:
    """'test-topic/0, 3, 6': the topic named once per run of its partitions."""
    out: list[str] = []
    topic = None
    for name, partition in keys:
        out.append(f"{partition}" if name == topic else f"{name}/{partition}")
        topic = name
    return ", ".join(out)


def broker_node(broker_id: int) -> str:
    return f"broker-{broker_id}"


@dataclass(frozen=True)
class NodeFault:
    """What took a node away from the cluster, when (seconds into the run) and who did it: its last run of down
    states (a stop counts from its SIGTERM), or its network isolation."""

    node: str
    how: str  # the node's state ("killed", "stopping", "paused", "failed"), or "isolated"
    t: float
    actor: Actor | None = None

    @property
    def words(self) -> str:
        """'killed', 'stopped', 'isolated by hand'."""
        return ("stopped" if self.how == NodeState.STOPPING else self.how) + by_whom(self.actor)  # from its SIGTERM

    @property
    def when(self) -> str:
        """'killed at 23.0 s'."""
        return f"{self.words} at {self.t:.1f} s"

    @property
    def broker(self) -> str:
        """'broker 2' for broker-2; a node's name otherwise."""
        return self.node.replace("-", " ") if self.node.startswith("broker-") else self.node


def went_away(events: Sequence[Event], node: str, until: float) -> NodeFault | None:
    """When, how and by whom ``node`` was last taken from the cluster up to ``until`` (``events`` in time order):
    the first of its last run of down states (`stopping` then `stopped`: the stopping), or its network isolation
    not healed by then; None if it was up and reachable then."""
    down: NodeEvent | None = None
    isolated: NetEvent | None = None
    for e in events:
        if e.t > until:
            break
        if isinstance(e, NodeEvent) and e.source == node:
            down = (down or e) if e.state in DOWN else None
        elif isinstance(e, NetEvent) and e.action == NetAction.ISOLATE and node in e.nodes:
            isolated = isolated or e
        elif isinstance(e, NetEvent) and e.action == NetAction.HEAL and (not e.nodes or node in e.nodes):
            isolated = None
    if down is not None and (isolated is None or down.t <= isolated.t):
        return NodeFault(node, down.state.value, down.t, down.actor)
    return NodeFault(node, "isolated", isolated.t, isolated.actor) if isolated is not None else None


@dataclass(frozen=True)
class LeaderChanges:
    """The leader changes of the run: of the lab's topics (``lab``), and of other topics (``other``), in time order."""

    lab: tuple[LeaderChange, ...] = ()
    other: tuple[LeaderChange, ...] = ()

    @property
    def total(self) -> int:
        return len(self.lab)

    def per_partition(self) -> dict[Partition, int]:
        return dict(Counter((e.topic, e.partition) for e in self.lab))

    def other_by_topic(self) -> dict[str, int]:
        return dict(Counter(e.topic for e in self.other))


def other_words(counts: dict[str, int]) -> str:
    """' (+1 in __consumer_offsets)': other topics' leader changes, labelled as theirs."""
    return f" ({', '.join(f'+{n} in {topic}' for topic, n in sorted(counts.items()))})" if counts else ""


@dataclass(frozen=True)
class Failover:
    """The leader of ``topic``/``partition`` moved from ``previous``, which ``fault`` took away, to ``leader``, as
    the poll at ``seen_t`` saw (the watch blind ``blind_s`` before it)."""

    topic: str
    partition: int
    previous: int
    leader: int
    fault: NodeFault
    seen_t: float
    blind_s: float | None = None

    @property
    def seconds(self) -> float:
        return round(self.seen_t - self.fault.t, 3)

    @property
    def coarse(self) -> bool:
        """The watch saw it late: it was blind for longer than a poll, so the failover took at most this long."""
        return self.blind_s is not None and self.blind_s > FINE_S

    @property
    def line(self) -> str:
        """'leader of test-topic/0: broker 2 -> 3 in 2.4 s (killed at 23.0 s)'."""
        return (f"leader of {self.topic}/{self.partition}: broker {self.previous} -> {self.leader} "
                f"{took(self.seconds, self.coarse)} ({self.fault.when})")


def took(seconds: float, coarse: bool) -> str:
    """'in 2.4 s', or 'within 2.4 s' when the watch saw it late."""
    return f"{'within' if coarse else 'in'} {seconds:.1f} s"


@dataclass(frozen=True)
class Leaderless:
    """A partition whose leader ``fault`` took away and that no broker led by the end: no failover, ever."""

    topic: str
    partition: int
    previous: int
    fault: NodeFault


@dataclass(frozen=True)
class Election:
    """Partitions whose leader ``fault`` took away ``ago_s`` seconds ago, not yet led by another broker."""

    partitions: tuple[Partition, ...]
    fault: NodeFault
    ago_s: float
    stuck: bool = False  # no other replica is in sync and up: none can be elected

    @property
    def line(self) -> str:
        """'electing a leader for test-topic/0 (broker 2 killed 1.2 s ago)'."""
        names = partition_names(self.partitions)
        why = f"{self.fault.broker} {self.fault.words} {self.ago_s:.1f} s ago"
        if self.stuck:
            return f"no leader for {names} ({why}; no other replica in sync)"
        many = len(self.partitions) > 1
        return f"electing {'leaders' if many else 'a leader'} for {names} ({why})"


@dataclass(frozen=True)
class Leadership:
    """Every leadership fact of a run (see the module's doc), computed by :func:`leadership`."""

    changes: LeaderChanges = field(default_factory=LeaderChanges)
    failovers: tuple[Failover, ...] = ()
    leaderless: tuple[Leaderless, ...] = ()
    elections: tuple[Election, ...] = ()  # while the run goes on

    @property
    def longest(self) -> Failover | None:
        return max(self.failovers, key=lambda f: f.seconds, default=None)

    def lines(self) -> list[str]:
        """The failovers in words, a line per fault (several partitions moved by one fault said together)."""
        by_fault: dict[NodeFault, list[Failover]] = {}
        for f in self.failovers:
            by_fault.setdefault(f.fault, []).append(f)
        return [fault_line(group) for group in by_fault.values()]


def fault_line(group: Sequence[Failover]) -> str:
    """'leader of test-topic/0: broker 2 -> 3 in 2.4 s (killed at 23.0 s)', or for one fault that moved several:
    'leaders of test-topic/0, 3, 6: broker 2 -> 3, 1, 3 in 2.4-2.5 s (killed at 23.0 s)'."""
    if len(group) == 1:
        return group[0].line
    first, times = group[0], [f"{s:.1f}" for s in sorted(f.seconds for f in group)]
    span = f"{times[0]}-{times[-1]}" if times[0] != times[-1] else times[0]
    names = partition_names([(f.topic, f.partition) for f in group])
    to = ", ".join(str(f.leader) for f in group)
    within = "within" if any(f.coarse for f in group) else "in"
    return f"leaders of {names}: broker {first.previous} -> {to} {within} {span} s ({first.fault.when})"


def run_events(events: Iterable[Event]) -> list[Event]:
    """``events`` in time order, up to the analysis (see the module's doc)."""
    ordered = sorted(events, key=lambda e: e.t)
    cut = next((e.t for e in ordered if e.kind == EventKind.PHASE and e.detail == Phase.ANALYZING), None)
    return ordered if cut is None else [e for e in ordered if e.t <= cut]


def leader_changes(events: Iterable[Event], topics: Collection[str] | None = None) -> LeaderChanges:
    """The run's leader changes, of ``topics`` (None: every topic) and of the others."""
    changes = [e for e in run_events(events) if isinstance(e, LeaderChange)]
    return LeaderChanges(tuple(e for e in changes if topics is None or e.topic in topics),
                         tuple(e for e in changes if topics is not None and e.topic not in topics))


def leadership(events: Iterable[Event], topics: Collection[str] | None = None,
               snapshot: ClusterSnapshot | None = None, now: float | None = None) -> Leadership:
    """The facts of ``events`` (a timeline's, in any order) for ``topics`` (None: every topic); with the cluster's
    latest ``snapshot`` and the run's time ``now``, the elections under way too."""
    ordered = run_events(events)
    changes = leader_changes(ordered, topics)
    failovers: list[Failover] = []
    lost: dict[Partition, tuple[int, NodeFault]] = {}  # leader taken away by a fault, none since
    for e in changes.lab:
        key = (e.topic, e.partition)
        if e.previous is not None:  # a leader left: taken away by a fault, or handed over (preferred leader)
            fault = went_away(ordered, broker_node(e.previous), e.t)
            if fault is not None:
                lost[key] = (e.previous, fault)
            else:
                lost.pop(key, None)
        if e.leader is not None and key in lost:
            previous, fault = lost.pop(key)
            if e.leader != previous:  # the same broker back is a recovery, not a failover
                failovers.append(Failover(e.topic, e.partition, previous, e.leader, fault, e.t, e.blind_s))
    leaderless = tuple(Leaderless(k[0], k[1], prev, fault) for k, (prev, fault) in lost.items())
    elections = () if snapshot is None or now is None else _elections(ordered, topics, snapshot, now, lost)
    return Leadership(changes, tuple(failovers), leaderless, elections)


def _elections(ordered: Sequence[Event], topics: Collection[str] | None, snapshot: ClusterSnapshot, now: float,
               lost: dict[Partition, tuple[int, NodeFault]]) -> tuple[Election, ...]:
    """The partitions ``snapshot`` shows led by a broker a fault took away (its metadata lags: a killed broker's
    session has not expired yet), or by none since a fault took their leader (``lost``), by fault."""
    waiting: dict[NodeFault, list[tuple[Partition, bool]]] = {}
    for p in snapshot.partitions:
        if topics is not None and p.topic not in topics:
            continue
        key = (p.topic, p.partition)
        if p.leader is not None:
            fault, gone = went_away(ordered, broker_node(p.leader), now), p.leader
        elif key in lost:
            gone, fault = lost[key]
        else:
            continue
        if fault is not None:
            stuck = not any(r != gone and r in snapshot.brokers for r in p.isr)
            waiting.setdefault(fault, []).append((key, stuck))
    return tuple(Election(tuple(k for k, _ in found), fault, round(now - fault.t, 1), all(s for _, s in found))
                 for fault, found in waiting.items())
