"""The timeline of a run: faults, node states, leader and ISR changes, producer stalls and errors,
rebalances, each with a timestamp. The console draws it; recordings cite it; expectations count it.

Events are typed records (:mod:`kafkalab.labs.events`). Saved as ``timeline.json``:
``{"lab", "started_at", "events": [{"t", "ts", "kind", "source", "detail", ...}]}`` with ``t`` in seconds since
the run began.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

from kafkalab.admin import ClusterSnapshot
from kafkalab.clients.stats import ClientEvent, ClientState, ProducerStats
from kafkalab.cluster.quorum import QuorumState
from kafkalab.labs.actors import Actors
from kafkalab.labs.events import (
    ClientRecord,
    ControllerChange,
    Event,
    EventKind,
    IsrExpand,
    IsrShrink,
    LeaderChange,
    PartitionEvent,
    ProducerResumed,
    ProducerStalled,
    QuorumLeaderChange,
)
from kafkalab.labs.failover import leader_changes

POLL_S = 0.5
PRODUCER_POLL_S = 0.2
STALL_AFTER_S = 2.0  # no acknowledgment for this long, with records in flight: a stall
FIRST_ACK_STALL_S = 10.0  # the same before the producer's first acknowledgment

EventListener = Callable[[Event], None]
# client event kinds renamed on the timeline, so the watcher's own stall detection is not counted twice
_CLIENT_RENAMES = {"stalled": "blocked", "resumed": "unblocked"}


class _Where(TypedDict):
    """The facts every event of one partition carries."""

    source: str
    topic: str
    partition: int
    leader: int | None
    isr: tuple[int, ...]


class Timeline:
    """Thread-safe list of events with listeners (called in the thread that adds the event)."""

    def __init__(self, lab_id: str, listeners: Iterable[EventListener] = ()) -> None:
        self.lab_id = lab_id
        self.started_at = time.time()
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._listeners: list[EventListener] = list(listeners)
        self.actors = Actors()  # who acts on the nodes and the network: their events say it

    def add_listener(self, listener: EventListener) -> None:
        self._listeners.append(listener)

    def restart_clock(self) -> None:
        """t = 0 from now (the workload's start); what came before (the cluster's start) gets negative t, so
        the kept events stay in time order when sorted by t."""
        with self._lock:
            self.started_at = now = time.time()
            self._events = [replace(e, t=round(e.ts - now, 3)) for e in self._events]

    def now(self) -> float:
        return time.time() - self.started_at

    def add(self, event: Event, ts: float | None = None) -> Event:
        """Record ``event`` as happened at ``ts`` (epoch seconds; now by default); returns it stamped."""
        ts = time.time() if ts is None else ts
        event = replace(event, t=round(ts - self.started_at, 3), ts=round(ts, 3))
        with self._lock:
            self._events.append(event)
        for listener in list(self._listeners):
            listener(event)
        return event

    def say(self, kind: EventKind, source: str, detail: str) -> Event:
        """An event with no facts beyond its words."""
        return self.add(Event(kind=kind, source=source, detail=detail))

    def add_client_event(self, ev: ClientEvent) -> None:
        role = "producer" if ev.client.startswith("producer") else "consumer"
        said = _CLIENT_RENAMES.get(ev.kind, ev.kind) if role == "producer" else ev.kind
        try:
            kind, detail = EventKind(f"{role}-{said}"), ev.detail
        except ValueError:  # a kind this timeline does not know yet: kept, as a note naming it
            kind, detail = EventKind(f"{role}-note"), f"{said}: {ev.detail}"
        self.add(ClientRecord(kind=kind, source=ev.client, detail=detail, partitions=tuple(ev.partitions)), ts=ev.ts)

    def events(self, kind: EventKind | None = None, since: float = float("-inf")) -> list[Event]:
        with self._lock:
            return [e for e in self._events if (kind is None or e.kind == kind) and e.t >= since]

    def count(self, kind: EventKind, topics: set[str] | None = None) -> int:
        """Events of ``kind``; with ``topics``, only partition events of those topics."""
        return sum(1 for e in self.events(kind)
                   if topics is None or (isinstance(e, PartitionEvent) and e.topic in topics))

    def leader_changes(self) -> dict[tuple[str, int], int]:
        """The run's leader changes per partition (:func:`~kafkalab.labs.failover.leader_changes`: until its
        analysis), what its report counts."""
        return leader_changes(self.events()).per_partition()

    def as_dict(self) -> dict[str, Any]:
        return {"lab": self.lab_id, "started_at": self.started_at, "events": [e.as_dict() for e in self.events()]}

    def save(self, path: Path) -> Path:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.as_dict(), indent=1), encoding="utf-8")
        tmp.replace(path)
        return path


class ClusterWatch:
    """Polls the cluster every ``POLL_S`` and the producer's stats every ``PRODUCER_POLL_S``, in two threads,
    and writes what changed.

    The next cluster poll starts only after the last one ended, so polls never pile up while brokers are
    down. The producer has its own thread because a stall happens exactly when brokers are down or paused,
    when an admin snapshot can take seconds: watched after each snapshot, a short stall went unseen.
    """

    def __init__(self, timeline: Timeline, snapshots: Callable[[], ClusterSnapshot],
                 producer_stats: Callable[[], ProducerStats | None],
                 quorum: Callable[[], QuorumState] | None = None) -> None:
        """``snapshots``: the cluster's controller, leaders and ISR (internal topics too, no end offsets; an
        unreachable one is skipped). ``quorum``: KRaft mode's DescribeQuorum; the active controller's changes
        come from it (a KRaft broker names a random broker as "controller" in its metadata, which would look
        like churn)."""
        self.timeline = timeline
        self._snapshots = snapshots
        self._producer_stats = producer_stats
        self._quorum = quorum
        self._quorum_leader: int | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.last: ClusterSnapshot | None = None
        self.last_quorum: QuorumState | None = None
        self._parts: dict[tuple[str, int], tuple[int | None, tuple[int, ...]]] = {}
        self._seen_at: float | None = None  # when the last answered poll ended: a change seen next happened since
        self._controller: int | None = None
        self._acked = -1
        self._acked_since = time.monotonic()
        self._stalled = False

    def start(self) -> None:
        steps = [("cluster", self.poll, POLL_S), ("producer", self._watch_producer, PRODUCER_POLL_S)]
        if self._quorum is not None:
            steps.append(("quorum", self._watch_quorum, POLL_S))
        for name, step, every in steps:
            thread = threading.Thread(target=self._every, args=(step, every), name=f"kafkalab-watch-{name}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _every(self, step: Callable[[], None], seconds: float) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            step()
            self._stop.wait(max(0.05, seconds - (time.monotonic() - started)))

    def poll(self) -> None:
        """One cluster snapshot, its changes on the timeline."""
        snap = self._snapshots()
        if snap.reachable:
            now = time.monotonic()
            self._diff(snap, None if self._seen_at is None else round(now - self._seen_at, 3))
            self._seen_at = now
            self.last = snap

    def _diff(self, snap: ClusterSnapshot, blind_s: float | None) -> None:
        """The changes since the last answered poll, ``blind_s`` seconds ago (None: the first)."""
        tl = self.timeline
        if self._quorum is None and snap.controller is not None and snap.controller != self._controller:
            if self._controller is not None:
                tl.add(ControllerChange(source=f"broker-{snap.controller}", controller=snap.controller,
                                        detail=f"controller {self._controller} -> {snap.controller}"))
            self._controller = snap.controller
        for p in snap.partitions:
            key = (p.topic, p.partition)
            prev = self._parts.get(key)
            self._parts[key] = (p.leader, p.isr)
            if prev is None:
                continue
            leader, isr = prev
            name = f"{p.topic}/{p.partition}"
            where = _Where(source=name, topic=p.topic, partition=p.partition, leader=p.leader, isr=p.isr)
            if p.leader != leader:
                if p.leader is None:
                    tl.add(PartitionEvent(kind=EventKind.OFFLINE, detail=f"{name} has no leader (was {leader})",
                                          **where))
                elif leader is None:
                    tl.add(PartitionEvent(kind=EventKind.ONLINE, detail=f"{name} led by {p.leader} again", **where))
                tl.add(LeaderChange(detail=f"{name} leader {_b(leader)} -> {_b(p.leader)}", previous=leader,
                                    blind_s=blind_s, **where))
            gone, came = set(isr) - set(p.isr), set(p.isr) - set(isr)
            change = f"{name} ISR {_ids(isr)} -> {_ids(p.isr)}"
            if gone:
                tl.add(IsrShrink(detail=change, removed=tuple(sorted(gone)), **where))
            if came:
                tl.add(IsrExpand(detail=change, added=tuple(sorted(came)), **where))

    def _watch_quorum(self) -> None:
        assert self._quorum is not None
        q = self._quorum()
        self.last_quorum = q
        if q.leader is None or q.leader == self._quorum_leader:
            return
        if self._quorum_leader is not None:
            self.timeline.add(QuorumLeaderChange(
                source=f"node-{q.leader}", controller=q.leader, epoch=q.epoch, previous=self._quorum_leader,
                detail=f"active controller {self._quorum_leader} -> {q.leader} (epoch {q.epoch})"))
        self._quorum_leader = q.leader

    def _watch_producer(self) -> None:
        stats = self._producer_stats()
        now = time.monotonic()
        if stats is None:
            return
        if stats.acked != self._acked:
            if self._stalled:
                self._stalled = False
                self.timeline.add(ProducerResumed(
                    source=stats.name, detail=f"acknowledgments again after {now - self._acked_since:.1f}s",
                    stalled_s=round(now - self._acked_since, 2)))
            self._acked, self._acked_since = stats.acked, now
            return
        busy = stats.state in (ClientState.RUNNING, ClientState.BLOCKED, ClientState.FLUSHING) and stats.in_flight > 0
        if not busy and not self._stalled:
            self._acked_since = now  # idle (not started, nothing in flight): the stall clock has not started
            return
        # The first acknowledgment waits for metadata and a producer id (KRaft: from the controller), seconds
        # on a busy laptop: only a producer that never got one for FIRST_ACK_STALL_S has stalled before it.
        patience = STALL_AFTER_S if self._acked > 0 else FIRST_ACK_STALL_S
        if not self._stalled and now - self._acked_since >= patience:  # busy: an idle producer returned above
            self._stalled = True
            self.timeline.add(ProducerStalled(
                source=stats.name, in_flight=stats.in_flight,
                detail=f"no acknowledgment for {patience:.0f}s with {stats.in_flight} records in flight"))


def _b(broker: int | None) -> str:
    return "none" if broker is None else str(broker)


def _ids(ids: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, ids)) + "]"
