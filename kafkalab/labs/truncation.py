"""Truncations named against a run's timeline: what the brokers' logs say (read by
:mod:`kafkalab.cluster.truncations`, as every view reads them), with the isolation, kill or lost leadership
that led to each, for the run's verdict.

In KRaft mode the active controller says how it elected each new leader (3.9 and 4.x, INFO)::

    [..] INFO Setting new leader for topicId 1s14kQejSX2uKihO0PYlWw, partition 0 to 3 using an unclean election ...

("using ELR" on 4.x for an eligible leader replica, KIP-966), its topic named by an earlier ``Replayed
PartitionRecord for new partition test-topic-0 with topic ID 1s14kQejSX2uKihO0PYlWw`` line. ZooKeeper mode says
nothing of the kind: there a leader from outside the ISR the timeline saw is an unclean election.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from kafkalab.cluster.node import NodeState
from kafkalab.cluster.truncations import Election, Truncation, logged_truncations, stamp_of
from kafkalab.cluster.truncations import broker_logs as logs_of
from kafkalab.labs.events import Event, FaultEvent, LeaderChange, NetEvent, NodeEvent, PartitionEvent
from kafkalab.labs.timeline import Timeline

_NEW_PARTITION = re.compile(r"new partition (?P<tp>\S+) with topic ID (?P<id>[\w-]+)")
_ELECTED = re.compile(r"Setting new leader for topicId (?P<id>[\w-]+), partition (?P<p>\d+) to (?P<leader>\d+) "
                      r"using (?P<how>an unclean election|ELR|a clean election)")
# a node's states that took it away from the cluster, in words (a stop is said from its start)
_DOWN = {NodeState.KILLED: "killed", NodeState.STOPPING: "stopped", NodeState.STOPPED: "stopped",
         NodeState.PAUSED: "paused", NodeState.FAILED: "failed"}
_CUT_OFF = {"isolate": "isolated", "cut": "cut off"}
_Net = NetEvent | FaultEvent


def _cluster_dir(run_dir: Path) -> Path:
    """The run's ``cluster`` dir, or the kept cluster's state dir that ``cluster.txt`` names when it reused one."""
    cluster_dir = run_dir / "cluster"
    note = run_dir / "cluster.txt"
    if not cluster_dir.is_dir() and note.is_file():
        cluster_dir = Path(note.read_text(encoding="utf-8").strip().split(" in ", 1)[-1])
    return cluster_dir


def broker_logs(run_dir: Path) -> dict[int, Path]:
    """Broker id -> its ``server.log``: in the run's ``cluster`` dir, or in the kept cluster's state dir that
    ``cluster.txt`` names when the run reused one."""
    return logs_of(_cluster_dir(run_dir))


def read_elections(lines: Iterable[str], since: float, until: float = float("inf")
                   ) -> list[tuple[float, str, int, int, Election]]:
    """The KRaft controller's elections in one node's log lines stamped from ``since`` to ``until``: (when, topic,
    partition, new leader, how), the topic named from the partition records replayed before (any time)."""
    names: dict[str, str] = {}  # topic id -> name
    out = []
    for line in lines:
        if (m := _NEW_PARTITION.search(line)) is not None:
            names[m.group("id")] = m.group("tp").rpartition("-")[0]
            continue
        if (m := _ELECTED.search(line)) is None or (ts := stamp_of(line)) is None:
            continue
        if since <= ts <= until and m.group("id") in names:
            out.append((round(ts, 3), names[m.group("id")], int(m.group("p")), int(m.group("leader")),
                        Election(m.group("how"))))
    return out


def find_truncations(run_dir: Path, since: float, topics: set[str], until: float = float("inf")) -> list[Truncation]:
    """Every broker's truncations of ``topics`` from ``since`` to ``until``, in time order; in KRaft mode each
    with how its partition's last leader before it was elected, from the controllers' logs."""
    out = logged_truncations(_cluster_dir(run_dir), since, topics, until)
    elections = []
    # dedicated controllers have their own dirs; combined ones write in their broker's log
    for log in sorted(_cluster_dir(run_dir).glob("*/logs/server.log")) if out else ():
        try:
            with open(log, encoding="utf-8", errors="replace") as fh:
                elections += read_elections((line for line in fh if "new partition" in line or "Setting new" in line),
                                            since, until)
        except OSError:
            continue
    return sorted((_with_election(t, elections) for t in out), key=lambda t: (t.ts, t.broker))


def _with_election(t: Truncation, elections: Sequence[tuple[float, str, int, int, Election]]) -> Truncation:
    """``t`` with how its partition's last new leader (another broker) before it was elected, if logged."""
    last = [how for ts, topic, partition, leader, how in sorted(elections)
            if ts <= t.ts and (topic, partition) == (t.topic, t.partition) and leader != t.broker]
    return replace(t, election=last[-1]) if last else t


def run_began(timeline: Timeline) -> float:
    """When the run began (epoch seconds): its first event (the cluster's start, before its clock's zero)."""
    return min([timeline.started_at, *(e.ts for e in timeline.events() if e.ts)])


def truncated_total(truncations: Iterable[Truncation]) -> int:
    """Records removed in all (a truncation of unknown size counts none)."""
    return sum(t.records or 0 for t in truncations)


def describe(t: Truncation, timeline: Timeline, acks: str, topic_named: bool = False, causes: bool = True) -> str:
    """One truncation in words, with what the timeline shows led to it, e.g. ``partition 0: broker-1 truncated
    4,414 records (offsets 1,391-5,804) at 27.3 s, when it rejoined; it had acknowledged them as leader while it
    was isolated (7.7-26.2 s)``. ``acks``: the producer's (0, 1, all), for what its leader's records were.
    ``causes=False`` (an incident, whose cause the attendee finds): what happened when, not what the producer
    had been told of those records."""
    at = t.ts - timeline.started_at
    node = f"broker-{t.broker}"
    events = sorted(timeline.events(), key=lambda e: e.t)
    where = f"{t.topic}/{t.partition}" if topic_named else f"partition {t.partition}"
    n = t.records
    if n is None:
        what = f"truncated its log to offset {t.to_offset:,}"
    else:
        last = t.to_offset + n - 1
        span = f"offset {t.to_offset:,}" if n == 1 else f"offsets {t.to_offset:,}-{last:,}"
        what = f"truncated {n:,} record{'s' if n != 1 else ''} ({span})"
    head = f"{where}: {node} {what} at {at:.1f} s"
    led = _lost_leadership(events, t, at)
    them = "it" if n == 1 else "them"
    # acks=all waits for the ISR only: a leader alone in it acknowledges on its own word, unless min.insync.replicas
    # refuses (not known here); an election from the eligible leader replicas means it did refuse
    alone = _alone_in_isr(events, t, led.t) if (
        led is not None and acks in ("all", "-1") and t.election != Election.ELR) else None
    held = _held(acks, them) if led is not None else f"had {them} in its log only"
    if alone is not None:
        held = (f"had taken {them} as leader alone in its ISR from {alone.t:.1f} s (acks=all: acknowledged, "
                "unless min.insync.replicas refused them)")
    if (cut := _cut_off(events, node, at)) is not None:
        iso, healed = cut
        how = _CUT_OFF.get(iso.action, "cut off")
        window = f"{iso.t:.1f}-{(healed.t if healed is not None else at):.1f} s"
        when = "when it rejoined" if healed is not None else f"while still {how}"
        return f"{head}, {when}; it {held} while it was {how} ({window})" if causes else \
            f"{head}, {when} ({how} {window})"
    if (down := _went_down(events, node, at)) is not None:
        back = f"{head}, when it came back after it was {_DOWN[down.state]} at {down.t:.1f} s"
        return f"{back}; it {held}{'' if alone is not None else ' before'}" if causes else back
    if led is not None:
        lost = f"{head}, after it lost its leadership at {led.t:.1f} s"
        return f"{lost}; it {held}" if causes else lost
    leader = f" broker-{t.leader}'s" if t.leader is not None else " its leader's"
    return f"{head}, to match{leader} log"


def summary(truncations: Sequence[Truncation], timeline: Timeline, acks: str, causes: bool = True) -> str:
    """The findings for the verdict, one line per truncation that removed records (empty: none did), each after
    the unclean election that made it, when the timeline shows one (not in an incident: that is its cause)."""
    shown = [t for t in truncations if t.records != 0]
    topic_named = len({t.topic for t in shown}) > 1
    lines = []
    for t in shown:
        if causes and (unclean := unclean_election(t, timeline, topic_named)) is not None:
            lines.append(unclean)
        lines.append(describe(t, timeline, acks, topic_named, causes))
    return "\n".join(lines)


def unclean_election(t: Truncation, timeline: Timeline, topic_named: bool = False) -> str | None:
    """The election that handed ``t``'s partition to a replica outside its ISR, in words, e.g. ``partition 0:
    broker-3 elected uncleanly at 23.2 s (the ISR was broker-2 alone): it lacked offsets 917-3,846``; None when
    the timeline shows none: the truncating broker lost its leadership to a broker that was not in the last ISR
    seen before (the truncation's offsets are what the new leader's log lacked when it was elected); in KRaft
    mode only when the controller's log says so (Kafka 4.x may elect an eligible leader replica, cleanly)."""
    if t.election is not None and t.election != Election.UNCLEAN:
        return None
    at = t.ts - timeline.started_at
    events = sorted(timeline.events(), key=lambda e: e.t)
    led = _lost_leadership(events, t, at)
    if led is None:
        return None
    mine = [e for e in events if isinstance(e, PartitionEvent) and e.topic == t.topic and e.partition == t.partition]
    isr = next((e.isr for e in reversed(mine) if e.t < led.t), ())
    # the next leader, from the loss on: a partition left offline (leader None) may be given one later
    new = next((e.leader for e in mine if isinstance(e, LeaderChange) and led.t <= e.t <= at and e.leader is not None),
               None)
    if new is None or not isr or new in isr:
        return None
    elected = next(e for e in mine if isinstance(e, LeaderChange) and e.t >= led.t and e.leader == new)
    where = f"{t.topic}/{t.partition}" if topic_named else f"partition {t.partition}"
    names = ", ".join(f"broker-{b}" for b in isr) + (" alone" if len(isr) == 1 else "")
    n = t.records
    lacked = f"offset {t.to_offset:,} on" if n is None else (
        f"offset {t.to_offset:,}" if n == 1 else f"offsets {t.to_offset:,}-{t.to_offset + n - 1:,}")
    return f"{where}: broker-{new} elected uncleanly at {elected.t:.1f} s (the ISR was {names}): it lacked {lacked}"


def _held(acks: str, them: str) -> str:
    """What the producer had of a leader's records, by its acks."""
    if acks == "1":
        return f"had acknowledged {them} as leader"
    if acks == "0":
        return f"had taken {them} as leader (acks=0: never acknowledged)"
    return f"had taken {them} as leader, unacknowledged (acks=all waits for the followers)"


def _alone_in_isr(events: list[Event], t: Truncation, until: float) -> PartitionEvent | None:
    """When ``t``'s broker, leading its partition, was last left alone in the ISR before ``until`` (None: it
    was not, as far as the timeline saw)."""
    alone: PartitionEvent | None = None
    for e in events:
        if (isinstance(e, PartitionEvent) and e.t < until and e.topic == t.topic and e.partition == t.partition):
            alone = (alone or e) if e.leader == t.broker and e.isr == (t.broker,) else None
    return alone


def _cut_off(events: list[Event], node: str, until: float) -> tuple[_Net, _Net | None] | None:
    """The last network isolation (or cut) of ``node`` before ``until``, and the heal after it (None: not yet).
    A cut counts when it cut ``node``'s own links (``cut NODE -> ...``), not only others' links to it."""
    found: tuple[_Net, _Net | None] | None = None
    for e, nodes in _nets(events, until):
        if e.action in _CUT_OFF and node in nodes and _cuts_from(e, node):
            found = (e, None)
        elif e.action == "heal" and found is not None and found[1] is None and (not nodes or node in nodes):
            found = (found[0], e)
    return found


def _cuts_from(e: _Net, node: str) -> bool:
    """Whether network change ``e`` cut ``node`` itself off: an isolation, or a cut rule from it; a lab's fault
    line (an older timeline) or a rule list that does not say is taken as yes."""
    if e.action != "cut" or not isinstance(e, NetEvent) or not e.rules:
        return True
    return any(rule.startswith(f"cut {node} -> ") for rule in e.rules)


def _nets(events: list[Event], until: float) -> Iterator[tuple[_Net, tuple[str, ...]]]:
    """The network changes up to ``until`` and the nodes each names: the proxy's own (a lab fault, a console
    key, `kafkalab net`); a lab's isolate/heal faults too, for timelines written before the proxy's were."""
    nets = [e for e in events if isinstance(e, NetEvent) and e.t <= until]
    if nets:
        return ((e, e.nodes) for e in nets)
    return ((e, e.targets) for e in events if isinstance(e, FaultEvent) and e.t <= until)


def _went_down(events: list[Event], node: str, until: float) -> NodeEvent | None:
    """The first of ``node``'s last run of down states before ``until`` (its kill, stop or pause)."""
    first: NodeEvent | None = None
    was_down = False
    for e in events:
        if isinstance(e, NodeEvent) and e.source == node and e.t <= until:
            if e.state in _DOWN and not was_down:
                first = e
            was_down = e.state in _DOWN
    return first


def _lost_leadership(events: list[Event], t: Truncation, until: float) -> LeaderChange | None:
    """The last leader change of ``t``'s partition away from its broker before ``until``."""
    found = None
    for e in events:
        if (isinstance(e, LeaderChange) and e.t <= until and e.topic == t.topic and e.partition == t.partition
                and e.previous == t.broker):
            found = e
    return found
