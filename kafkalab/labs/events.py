"""The timeline's events as typed records: one small dataclass per shape of facts, an enum of kinds.

``as_dict`` is what ``timeline.json`` holds for each: ``{"t", "ts", "kind", "source", "detail", ...facts}``;
:func:`event_from_dict` reads one back (a replay shows what the live run showed, from the same typed events).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, dataclass_transform

from kafkalab.cluster.node import EndCause, NodeState


class EventKind(StrEnum):
    PHASE = "phase"
    NODE = "node"
    NOTE = "note"
    FAULT = "fault"
    NET = "net"  # a network fault applied or healed (a lab fault, a console key or `kafkalab net`)
    FAULT_MISSED = "fault-missed"
    FAULT_FAILED = "fault-failed"
    CHECK = "check"
    CONTROLLER_CHANGE = "controller-change"
    LEADER_CHANGE = "leader-change"
    OFFLINE = "offline"
    ONLINE = "online"
    ISR_SHRINK = "isr-shrink"
    ISR_EXPAND = "isr-expand"
    # seen by the run's watch: no acknowledgment for a while with records in flight, and the end of that
    PRODUCER_STALLED = "producer-stalled"
    PRODUCER_RESUMED = "producer-resumed"
    # told by the producer itself (its own "stalled"/"resumed": send buffer full, then not)
    PRODUCER_BLOCKED = "producer-blocked"
    PRODUCER_UNBLOCKED = "producer-unblocked"
    PRODUCER_STARTED = "producer-started"
    PRODUCER_NOTE = "producer-note"
    PRODUCER_ERROR = "producer-error"
    PRODUCER_FINISHED = "producer-finished"
    PRODUCER_CRASHED = "producer-crashed"
    CONSUMER_LAUNCH = "consumer-launch"
    CONSUMER_STARTED = "consumer-started"
    CONSUMER_ASSIGNED = "consumer-assigned"
    CONSUMER_REVOKED = "consumer-revoked"
    CONSUMER_LOST = "consumer-lost"
    CONSUMER_NOTE = "consumer-note"
    CONSUMER_ERROR = "consumer-error"
    CONSUMER_QUIT = "consumer-quit"
    CONSUMER_WAIT = "consumer-wait"
    # told by a read_committed consumer: read to the last stable offset with an open transaction past it, then not
    CONSUMER_HELD = "consumer-held"
    CONSUMER_RELEASED = "consumer-released"
    CONSUMER_FINISHED = "consumer-finished"
    CONSUMER_CRASHED = "consumer-crashed"


class Actor(StrEnum):
    """Who did something to a node or the network: a lab's scripted fault, a person (a console key, `kafkalab
    broker` or `kafkalab net` in another terminal, a fix's live actions), or kafkalab itself (the run's start and
    end, the audit bringing brokers back to read them)."""

    LAB = "lab"
    ATTENDEE = "attendee"
    KAFKALAB = "kafkalab"

    @property
    def words(self) -> str:
        return {Actor.LAB: "by the lab", Actor.ATTENDEE: "by hand", Actor.KAFKALAB: "by kafkalab"}[self]


def by_whom(actor: Actor | None) -> str:
    """' by hand', ' by kafkalab', or '' for the lab's own step (what a lab's run is made of) and for nobody."""
    return f" {actor.words}" if actor is not None and actor != Actor.LAB else ""


@dataclass_transform(kw_only_default=True, frozen_default=True)
@dataclass(frozen=True, kw_only=True)
class Event:
    """Something that happened; ``t`` and ``ts`` are set by the timeline that records it.

    A subclass is a frozen, keyword-only dataclass of its facts; one whose events have one kind says it as
    the default of ``kind``.
    """

    kind: EventKind
    source: str = ""
    detail: str = ""
    t: float = 0.0  # seconds since the run began
    ts: float = 0.0  # epoch seconds

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True, kw_only=True)(cls)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t": self.t, "ts": self.ts, "kind": str(self.kind), "source": self.source,
                               "detail": self.detail}
        for f in fields(self)[5:]:  # the facts of a subclass, after the five common fields
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


class NodeEvent(Event):
    """A node's new state, and the one it left (``was``); ``actor``: who caused it (None: nobody, e.g. a crash,
    or not known: an older timeline); ``cause``: why a node is down or going down, as the node says it."""

    kind: EventKind = EventKind.NODE
    state: NodeState
    was: NodeState | None = None
    actor: Actor | None = None
    cause: EndCause | None = None


class FaultEvent(Event):
    kind: EventKind = EventKind.FAULT
    action: str
    targets: tuple[str, ...]
    trigger: str
    actor: Actor | None = None  # the lab's, or a fix's live action (the attendee's); None in an older timeline


class NetEvent(Event):
    """A network change on the cluster's proxies: ``action`` (isolate, cut, drop-replies, delay, limit, heal),
    the nodes named, and each rule applied or healed."""

    kind: EventKind = EventKind.NET
    action: str
    nodes: tuple[str, ...]
    rules: tuple[str, ...]
    actor: Actor | None = None


class FaultProblem(Event):
    """A fault missed (its trigger never came) or failed (it could not be done)."""

    index: int


class CheckEvent(Event):
    kind: EventKind = EventKind.CHECK
    held: bool


class ControllerChange(Event):
    kind: EventKind = EventKind.CONTROLLER_CHANGE
    controller: int


class QuorumLeaderChange(ControllerChange):
    """KRaft: a new active controller (the metadata quorum's leader) in a new epoch; ``previous`` the active
    controller before it (None in a timeline written before it was kept)."""

    epoch: int | None
    previous: int | None = None


class PartitionEvent(Event):
    """A partition went offline or online; its leader and ISR after."""

    topic: str
    partition: int
    leader: int | None
    isr: tuple[int, ...]


class LeaderChange(PartitionEvent):
    """``blind_s``: seconds since the watch's poll before the one that saw the change, which happened within
    them (None in a timeline written before it was kept)."""

    kind: EventKind = EventKind.LEADER_CHANGE
    previous: int | None
    blind_s: float | None = None


class IsrShrink(PartitionEvent):
    kind: EventKind = EventKind.ISR_SHRINK
    removed: tuple[int, ...]


class IsrExpand(PartitionEvent):
    kind: EventKind = EventKind.ISR_EXPAND
    added: tuple[int, ...]


class ProducerStalled(Event):
    kind: EventKind = EventKind.PRODUCER_STALLED
    in_flight: int


class ProducerResumed(Event):
    kind: EventKind = EventKind.PRODUCER_RESUMED
    stalled_s: float


class ClientRecord(Event):
    """What a producer or consumer told: assigned, revoked, error... with the partitions it concerns."""

    partitions: tuple[int, ...] = ()


_SHAPES: dict[EventKind, type[Event]] = {
    EventKind.NODE: NodeEvent, EventKind.FAULT: FaultEvent, EventKind.NET: NetEvent,
    EventKind.FAULT_MISSED: FaultProblem, EventKind.FAULT_FAILED: FaultProblem, EventKind.CHECK: CheckEvent,
    EventKind.CONTROLLER_CHANGE: ControllerChange, EventKind.LEADER_CHANGE: LeaderChange,
    EventKind.OFFLINE: PartitionEvent, EventKind.ONLINE: PartitionEvent, EventKind.ISR_SHRINK: IsrShrink,
    EventKind.ISR_EXPAND: IsrExpand, EventKind.PRODUCER_STALLED: ProducerStalled,
    EventKind.PRODUCER_RESUMED: ProducerResumed,
}
_TYPED = {"state": NodeState, "was": NodeState, "actor": Actor, "cause": EndCause}


def event_from_dict(d: Mapping[str, Any]) -> Event:
    """An event as ``timeline.json`` holds it (:meth:`Event.as_dict`), typed again. A kind this version does not
    know comes back as a note, and facts it lacks (an older timeline) as the plain event with its words."""
    kind = EventKind(d["kind"]) if d["kind"] in EventKind._value2member_map_ else EventKind.NOTE
    shape = _SHAPES.get(kind, ClientRecord if kind.startswith(("producer-", "consumer-")) else Event)
    if shape is ControllerChange and "epoch" in d:
        shape = QuorumLeaderChange
    names = {f.name for f in fields(shape)}
    values = {name: _typed(name, value) for name, value in d.items() if name in names and name != "kind"}
    values["kind"] = kind
    try:
        return shape(**values)
    except TypeError:  # a fact missing: written before this version kept it
        return Event(**{k: v for k, v in values.items() if k in ("kind", "source", "detail", "t", "ts")})


def _typed(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _TYPED:
        return _TYPED[name](value)
    return tuple(value) if isinstance(value, list) else value
