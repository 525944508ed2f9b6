"""The fault timeline language: when (``at``), to what (``on``) and what (``do``).

Faults fire one after another, in file order: each waits for its trigger after the previous one fired,
so ``after 3s`` counts from the previous fault and a condition is looked for only once its turn came.

at:  ``start`` | ``after 3s`` | ``at 10s`` (since the run began) | ``progress 20%`` | ``acked 5000`` |
     ``uncommitted 20`` (records of the producer's open transaction the brokers hold) |
     ``uncommitted 10 by processor`` (output records of the processor's batch in hand the brokers acknowledged,
     its input offsets not yet committed: it is in the middle of a batch) |
     ``consumed 200`` | ``consumed 200 by consumer 1`` | ``assigned consumer 2`` (any partition) |
     ``assigned consumer 2 == 6`` (that many partitions) |
     ``isr T/P < 3`` (one partition) | ``isr T == 3`` (every partition) | ``leader-change T/P`` |
     ``controller-change`` (a new active controller) |
     ``offline T/P`` | ``online T/P`` | ``preferred T`` (every partition led by its first replica) |
     ``producer stalled`` | ``producer resumed`` | ``producer finished`` | ``brokers >= 3`` (live brokers)
on:  ``broker 2`` | ``brokers 2,3`` | ``leader T/P`` | ``controller`` (KRaft: the active controller) |
     ``controllers 2,3`` (KRaft voters by number) | ``random follower T/P`` |
     ``followers T/P`` | ``coordinator`` / ``coordinator G`` (the broker coordinating the lab's consumer group,
     or group G, when the fault fires) | ``same`` (the previous node fault's nodes) | ``paused`` | ``down`` |
     ``zookeeper`` | ``clients`` (a network source only) | ``producer`` | ``consumer 1`` (both also a network
     source: that process's links alone) | ``consumers`` | ``processor`` (the lab's [processor]) |
     ``topic T`` | ``group G``
do:  nodes: stop | kill | pause | resume | start | restart;
     the producer, consumers, the processor: start | stop | pause | resume | crash;
     network (``net_proxies`` is turned on for the lab): isolate (from ZooKeeper and the other brokers, clients
     kept) | cut (``to``: the link from each ``on`` node to each ``to`` node; ``both_ways = true``) |
     drop-replies (``to``: requests arrive, answers never come back) | hold (``to``: the bytes kept, delivered on
     heal) | delay (``to``, ``ms``, ``jitter_ms``) | limit (``to``, ``rate``, e.g. "100KB/s"); hold, delay and
     limit take ``direction`` (requests | replies | both, the default) | heal (every link; with ``on``, every
     link of those nodes; with ``on`` and ``to``, those links);
     topics: ``send quit|crash|wait`` | create | alter-config
     (``configs``) | replicate (``replication_factor``) | add-partitions (``partitions``: the new total, more than
     the topic has; a key's new records may then land on another partition) | elect-preferred | type (``records``, each
     ``key:value`` or a value) | abort-transaction (``partition``: its open transaction, as `kafkalab txn abort`
     does; without it, every transaction open on the topic);
     groups: reset-offsets (``reset``: to-earliest, to-latest, to-offset N, shift-by N or to-datetime ISO;
     once the group has no active member);  anything: check (``expect``) | note
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from kafkalab.admin import ClusterSnapshot, ResetTarget
from kafkalab.admin.groups import RESET_MODES
from kafkalab.clients.stats import ClientState
from kafkalab.cluster.netwiring import CONSUMER_PREFIX, PRODUCER, NetAction, parse_ms, parse_rate
from kafkalab.cluster.node import NodeAction, NodeState
from kafkalab.errors import KafkalabError
from kafkalab.labs.events import Event, EventKind, LeaderChange
from kafkalab.labs.expectations import OPS, parse_check
from kafkalab.logformat import CONTROL_VALUES
from kafkalab.netfaults import Direction

NODE_ACTIONS = tuple(a.value for a in NodeAction)
# the producer, a consumer, the processor. pause: SIGSTOP, a hung process (its group session lapses, a transaction
# it has open stays open); resume: SIGCONT; crash: killed, so a paused one ends too
CLIENT_ACTIONS = ("start", "stop", "pause", "resume", "crash")
TOPIC_ACTIONS = ("send", "create", "alter-config", "replicate", "add-partitions", "elect-preferred", "type",
                 "abort-transaction")
GROUP_ACTIONS = ("reset-offsets",)
ANY_ACTIONS = ("check", "note")
# network faults, through the cluster's proxy; LINK_ACTIONS act on the links from ``on`` to ``to``
LINK_ACTIONS = (NetAction.CUT, NetAction.DROP_REPLIES, NetAction.HOLD, NetAction.DELAY, NetAction.LIMIT)
NET_FAULT_ACTIONS = (NetAction.ISOLATE, *LINK_ACTIONS, NetAction.HEAL)
NET_ACTIONS = tuple(a.value for a in NET_FAULT_ACTIONS)
DEFAULT_TIMEOUT_S = 90.0

_TP = r"(?P<topic>[A-Za-z0-9._-]+)(?:/(?P<partition>\d+))?"
_OP = r"(?P<op><=|>=|==|!=|<|>)"


# ---- triggers --------------------------------------------------------------------------------------
class RunView(Protocol):
    """What a trigger looks at: the session exposes this while a run is under way."""

    def elapsed(self) -> float: ...
    def producer_progress(self) -> tuple[float, int, ClientState]: ...  # (fraction done, acked, state)
    def producer_uncommitted(self) -> int: ...  # records of its open transaction the brokers hold
    def processor_uncommitted(self) -> int: ...  # the live processor's batch in hand: output acked, not committed
    def consumed(self, local_id: int | None) -> int: ...
    def assignment(self, local_id: int) -> tuple[int, ...]: ...
    def snapshot(self) -> ClusterSnapshot | None: ...
    def events_since(self, since: float, kind: EventKind) -> list[Event]: ...


class TriggerKind(StrEnum):
    """The first word of an ``at``; see the module's doc for each one's form."""

    START = "start"
    AFTER = "after"
    AT = "at"
    PROGRESS = "progress"
    ACKED = "acked"
    UNCOMMITTED = "uncommitted"  # a transactional producer's open transaction: records written, not committed
    CONSUMED = "consumed"
    ASSIGNED = "assigned"
    ISR = "isr"
    LEADER_CHANGE = "leader-change"
    CONTROLLER_CHANGE = "controller-change"
    OFFLINE = "offline"
    ONLINE = "online"
    PREFERRED = "preferred"
    PRODUCER = "producer"  # stalled, resumed or finished (in ``text``)
    BROKERS = "brokers"


@dataclass(frozen=True)
class Trigger:
    kind: TriggerKind
    value: float = 0.0
    topic: str = ""
    partition: int | None = None
    op: str = ""
    local_id: int | None = None
    text: str = ""
    processor: bool = False  # ``uncommitted N by processor``: the processor's batch in hand, not the producer's

    def due(self, view: RunView, fired_prev_at: float) -> bool:
        """``fired_prev_at``: run-relative seconds when the previous fault fired (0 for the first)."""
        k = self.kind
        if k == TriggerKind.START:
            return True
        if k == TriggerKind.AFTER:
            return view.elapsed() - fired_prev_at >= self.value
        if k == TriggerKind.AT:
            return view.elapsed() >= self.value
        if k in (TriggerKind.PROGRESS, TriggerKind.ACKED, TriggerKind.PRODUCER):
            fraction, acked, state = view.producer_progress()
            if k == TriggerKind.PROGRESS:
                return fraction * 100 >= self.value
            if k == TriggerKind.ACKED:
                return acked >= self.value
            if self.text == "finished":
                return state.ended
            return bool(view.events_since(fired_prev_at, EventKind(f"producer-{self.text}")))
        if k == TriggerKind.UNCOMMITTED:
            return (view.processor_uncommitted() if self.processor else view.producer_uncommitted()) >= self.value
        if k == TriggerKind.CONSUMED:
            return view.consumed(self.local_id) >= self.value
        if k == TriggerKind.ASSIGNED:
            count = len(view.assignment(self.local_id or 0))
            return OPS[self.op](count, self.value) if self.op else count > 0
        if k == TriggerKind.CONTROLLER_CHANGE:
            return bool(view.events_since(fired_prev_at, EventKind.CONTROLLER_CHANGE))
        if k == TriggerKind.LEADER_CHANGE:
            return any(isinstance(e, LeaderChange) and e.topic == self.topic and self.partition in (None, e.partition)
                       for e in view.events_since(fired_prev_at, EventKind.LEADER_CHANGE))
        snap = view.snapshot()
        if snap is None or not snap.reachable:
            return False
        if k == TriggerKind.BROKERS:
            return OPS[self.op](len(snap.brokers), self.value)
        parts = [p for p in snap.topic(self.topic) if self.partition in (None, p.partition)]
        if not parts:
            return False
        if k == TriggerKind.ISR:
            return all(OPS[self.op](len(p.isr), self.value) for p in parts)
        if k == TriggerKind.OFFLINE:
            return all(p.leader is None for p in parts)
        if k == TriggerKind.ONLINE:
            return all(p.leader is not None for p in parts)
        if k == TriggerKind.PREFERRED:
            return all(p.replicas and p.leader == p.replicas[0] and len(p.isr) == len(p.replicas) for p in parts)
        raise AssertionError(k)


def parse_trigger(text: str) -> Trigger:
    s = " ".join(text.strip().split())
    if s == "start":
        return Trigger(TriggerKind.START, text=s)
    if m := re.fullmatch(r"(after|at) (\d+(?:\.\d+)?) ?s", s):
        return Trigger(TriggerKind(m[1]), float(m[2]), text=s)
    if m := re.fullmatch(r"progress (\d+(?:\.\d+)?) ?%", s):
        pct = float(m[1])
        if not 0 <= pct <= 100:
            raise ValueError(f"progress {pct:g}% is not within 0..100%")
        return Trigger(TriggerKind.PROGRESS, pct, text=s)
    if m := re.fullmatch(r"(acked|uncommitted) (\d+)", s):
        return Trigger(TriggerKind(m[1]), int(m[2]), text=s)
    if m := re.fullmatch(r"uncommitted (\d+) by processor", s):
        return Trigger(TriggerKind.UNCOMMITTED, int(m[1]), text=s, processor=True)
    if m := re.fullmatch(r"consumed (\d+)(?: by consumer (\d+))?", s):
        return Trigger(TriggerKind.CONSUMED, int(m[1]), local_id=int(m[2]) if m[2] else None, text=s)
    if m := re.fullmatch(rf"assigned consumer (?P<id>\d+)(?: ?{_OP} ?(?P<n>\d+))?", s):
        return Trigger(TriggerKind.ASSIGNED, int(m["n"] or 0), local_id=int(m["id"]), op=m["op"] or "", text=s)
    if m := re.fullmatch(rf"isr {_TP} ?{_OP} ?(?P<n>\d+)", s):
        return Trigger(TriggerKind.ISR, int(m["n"]), m["topic"], _part(m), m["op"], text=s)
    if m := re.fullmatch(rf"(?P<kind>leader-change|offline|online|preferred) {_TP}", s):
        return Trigger(TriggerKind(m["kind"]), 0, m["topic"], _part(m), text=s)
    if m := re.fullmatch(rf"brokers ?{_OP} ?(?P<n>\d+)", s):
        return Trigger(TriggerKind.BROKERS, int(m["n"]), op=m["op"], text=s)
    if s == "controller-change":
        return Trigger(TriggerKind.CONTROLLER_CHANGE, text=s)
    if m := re.fullmatch(r"producer (stalled|resumed|finished)", s):
        return Trigger(TriggerKind.PRODUCER, text=m[1])
    raise ValueError(
        f"{text!r} is not a trigger: write start, 'after 3s', 'at 10s', 'progress 20%', 'acked 5000', "
        "'uncommitted 20 [by processor]', 'consumed 200 [by consumer 1]', 'assigned consumer 2 [== 6]', 'isr T/P < 3', "
        "'leader-change T/P', 'controller-change', 'offline T/P', 'online T/P', 'preferred T', 'brokers >= 3' or "
        "'producer stalled|resumed|finished'"
    )


def _part(m: re.Match[str]) -> int | None:
    return int(m["partition"]) if m["partition"] is not None else None


# ---- targets ---------------------------------------------------------------------------------------
class TargetCategory(StrEnum):
    """What a target is, as far as the actions allowed on it go."""

    NODES = "nodes"
    PRODUCER = "producer"
    CONSUMERS = "consumers"
    PROCESSOR = "processor"
    TOPIC = "topic"
    GROUP = "group"
    CLIENTS = "clients"  # every client process, as the source of network links
    NONE = "none"


class TargetKind(StrEnum):
    """What an ``on`` names; see the module's doc for each one's form."""

    BROKERS = "brokers"
    LEADER = "leader"
    CONTROLLER = "controller"
    CONTROLLERS = "controllers"
    RANDOM_FOLLOWER = "random-follower"
    FOLLOWERS = "followers"
    COORDINATOR = "coordinator"  # the broker coordinating a consumer group (``group``; "" the lab's only one)
    SAME = "same"
    PAUSED = "paused"
    DOWN = "down"
    ZOOKEEPER = "zookeeper"
    CLIENTS = "clients"
    PRODUCER = "producer"
    CONSUMER = "consumer"
    CONSUMERS = "consumers"
    PROCESSOR = "processor"
    TOPIC = "topic"
    GROUP = "group"
    NONE = "none"  # a fault with no ``on``: a check or a note

    @property
    def category(self) -> TargetCategory:
        others = {TargetKind.PRODUCER: TargetCategory.PRODUCER, TargetKind.CONSUMER: TargetCategory.CONSUMERS,
                  TargetKind.CONSUMERS: TargetCategory.CONSUMERS, TargetKind.TOPIC: TargetCategory.TOPIC,
                  TargetKind.PROCESSOR: TargetCategory.PROCESSOR,
                  TargetKind.GROUP: TargetCategory.GROUP, TargetKind.NONE: TargetCategory.NONE,
                  TargetKind.CLIENTS: TargetCategory.CLIENTS}
        return others.get(self, TargetCategory.NODES)


@dataclass(frozen=True)
class Target:
    kind: TargetKind
    brokers: tuple[int, ...] = ()
    topic: str = ""
    group: str = ""
    partition: int | None = None
    local_id: int | None = None
    text: str = ""

    @property
    def category(self) -> TargetCategory:
        """Which actions apply."""
        return self.kind.category

    def nodes(self, snap: ClusterSnapshot | None, previous: Sequence[str], rng: random.Random,
              states: Mapping[str, NodeState], active_controller: str | None = None,
              coordinator: str | None = None) -> list[str]:
        """The node names (``broker-N``, ``zookeeper``, ``controller-N``) this target means now; [] when nobody is.

        ``states``: node name -> state (paused, stopped, killed, ...), for ``paused`` and ``down``.
        ``active_controller``: in KRaft mode, the node of the quorum's leader (``controller`` means it there).
        ``coordinator``: the node coordinating the target's group now (``coordinator`` means it).
        """
        k = self.kind
        if k == TargetKind.COORDINATOR:
            return [coordinator] if coordinator is not None else []
        if k == TargetKind.PAUSED:
            return [n for n, s in states.items() if s == NodeState.PAUSED]
        if k == TargetKind.DOWN:
            return [n for n, s in states.items() if s in (NodeState.STOPPED, NodeState.KILLED, NodeState.FAILED)]
        if k == TargetKind.BROKERS:
            return [f"broker-{b}" for b in self.brokers]
        if k == TargetKind.ZOOKEEPER:
            return ["zookeeper"]
        if k == TargetKind.CLIENTS:
            return ["clients"]
        if k == TargetKind.PRODUCER:  # as a network source: the run's producer process
            return [PRODUCER]
        if k == TargetKind.CONSUMER:
            return [f"{CONSUMER_PREFIX}{self.local_id}"]
        if k == TargetKind.CONTROLLERS:
            return [f"controller-{c}" for c in self.brokers]
        if k == TargetKind.CONTROLLER and active_controller is not None:
            return [active_controller]
        if k == TargetKind.SAME:
            return list(previous)
        if snap is None or not snap.reachable:
            return []
        if k == TargetKind.CONTROLLER:
            return [f"broker-{snap.controller}"] if snap.controller is not None else []
        part = snap.partition(self.topic, self.partition or 0)
        if part is None:
            return []
        if k == TargetKind.LEADER:
            return [f"broker-{part.leader}"] if part.leader is not None else []
        followers = [b for b in part.isr if b != part.leader]
        if k == TargetKind.FOLLOWERS:
            return [f"broker-{b}" for b in followers]
        if k == TargetKind.RANDOM_FOLLOWER:
            return [f"broker-{rng.choice(followers)}"] if followers else []
        raise AssertionError(k)


def parse_target(text: str, brokers: int) -> Target:
    s = " ".join(text.strip().split())
    if m := re.fullmatch(r"brokers? (\d+(?:, ?\d+)*)", s):
        ids = tuple(int(x) for x in m[1].replace(" ", "").split(","))
        bad = [b for b in ids if not 1 <= b <= brokers]
        if bad:
            raise ValueError(f"broker {bad[0]} does not exist: this lab has brokers 1..{brokers}")
        return Target(TargetKind.BROKERS, brokers=ids, text=s)
    if m := re.fullmatch(r"controllers? (\d+(?:, ?\d+)*)", s):
        ids = tuple(int(x) for x in m[1].replace(" ", "").split(","))
        if any(not 1 <= c <= 3 for c in ids):
            raise ValueError(f"{s!r}: KRaft controllers are numbered 1..3")
        return Target(TargetKind.CONTROLLERS, brokers=ids, text=s)
    if s in ("controller", "coordinator", "same", "zookeeper", "clients", "producer", "consumers", "processor",
             "paused", "down"):
        return Target(TargetKind(s), text=s)
    if m := re.fullmatch(r"coordinator ([A-Za-z0-9._-]+)", s):
        return Target(TargetKind.COORDINATOR, group=m[1], text=s)
    if m := re.fullmatch(r"consumer (\d+)", s):
        return Target(TargetKind.CONSUMER, local_id=int(m[1]), text=s)
    if m := re.fullmatch(rf"(?P<kind>leader|random follower|followers) {_TP}", s):
        return Target(TargetKind(m["kind"].replace(" ", "-")), topic=m["topic"], partition=_part(m) or 0, text=s)
    if m := re.fullmatch(r"topic ([A-Za-z0-9._-]+)", s):
        return Target(TargetKind.TOPIC, topic=m[1], text=s)
    if m := re.fullmatch(r"group ([A-Za-z0-9._-]+)", s):
        return Target(TargetKind.GROUP, group=m[1], text=s)
    raise ValueError(
        f"{text!r} is not a target: write 'broker 2', 'brokers 2,3', 'leader T/P', 'controller', 'controllers 2,3', "
        "'random follower T/P', 'followers T/P', 'coordinator [G]', 'same', 'paused', 'down', 'zookeeper', "
        "'clients', 'producer', 'consumer N', 'consumers', 'processor', 'topic T' or 'group G'"
    )


# ---- faults ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fault:
    at: Trigger
    action: str
    target: Target
    word: str = ""  # the control word of `send`
    configs: Mapping[str, str] = field(default_factory=dict)
    replication_factor: int = 0
    partitions: int = 0  # add-partitions: the topic's new partition count
    # add-partitions: the count a change to the topic's plan created it with, when at least ``partitions``: adds none
    planned: int | None = None
    partition: int | None = None  # abort-transaction: the partition (None: every one of the topic)
    expect: str = ""
    note: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S
    line: int = 0
    fails: bool = False  # the lesson is that this step fails (e.g. no topic without a KRaft quorum)
    reset: ResetTarget | None = None  # reset-offsets: where to
    records: tuple[str, ...] = ()  # type: the lines typed, each key:value or a value
    to: Target | None = None  # network faults: the far end of each link from ``target``
    both_ways: bool = False  # cut: the links back from ``to`` too
    ms: int = 0  # delay
    jitter_ms: int = 0  # delay
    bytes_per_s: int = 0  # limit
    direction: Direction = Direction.BOTH  # hold, delay, limit: which bytes of each link

    @property
    def net_action(self) -> NetAction | None:
        """The network fault this is, or None for any other fault."""
        return NetAction(self.action) if self.action in NET_ACTIONS else None

    def describe(self) -> str:
        what = f"{self.action} {self.word}".strip()
        on = f" {self.target.text}" if self.target.text else ""
        if self.partition is not None:  # abort-transaction's: "topic T/0"
            on += f"/{self.partition}"
        to = f" to {self.to.text}" if self.to is not None else ""
        checked = f" {self.expect}" if self.expect else ""  # a check says what it checks
        return f"{what}{checked}{on}{to} {self.when}"

    @property
    def when(self) -> str:
        """"at progress 20%", "after 12s" (never "at after 12s")."""
        return self.at.text if self.at.text.startswith("after") else f"at {self.at.text}"

    def doing(self) -> str:
        """What it does, without when, as a sentence names it: "kill broker 2", "a note"."""
        if self.action in ANY_ACTIONS:
            return f"a {self.action}"
        return self.describe().removesuffix(f" {self.when}")


def parse_action(text: str, target: Target) -> tuple[str, str]:
    """(action, control word) for ``do``, checked against what ``on`` names."""
    s = " ".join(text.strip().split())
    word = ""
    if s.startswith("send"):
        word = s.removeprefix("send").strip()
        if word not in CONTROL_VALUES:
            raise ValueError(f"{text!r}: send takes a control word: send {' | send '.join(CONTROL_VALUES)}")
        s = "send"
    source_actions = (*(a.value for a in LINK_ACTIONS), NetAction.HEAL.value)  # a client as a network source
    allowed = {
        TargetCategory.NODES: NODE_ACTIONS + NET_ACTIONS, TargetCategory.PRODUCER: CLIENT_ACTIONS + source_actions,
        TargetCategory.CONSUMERS: CLIENT_ACTIONS + source_actions, TargetCategory.TOPIC: TOPIC_ACTIONS,
        TargetCategory.PROCESSOR: CLIENT_ACTIONS,
        TargetCategory.GROUP: GROUP_ACTIONS, TargetCategory.NONE: (NetAction.HEAL.value,),
        TargetCategory.CLIENTS: source_actions,
    }[target.category] + ANY_ACTIONS
    if s not in allowed:
        on = target.text or "nothing"
        raise ValueError(f"{text!r} cannot be done on {on}: there do one of {', '.join(allowed)}")
    return s, word


def make_fault(raw: Mapping[str, Any], brokers: int, line: int = 0) -> Fault:
    """A fault from its table (keys already checked); ValueError names the bad field as ``field: why``."""
    def field_error(name: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None

    trigger = field_error("at", lambda: parse_trigger(str(raw["at"])))
    on = raw.get("on")
    target = field_error("on", lambda: parse_target(str(on), brokers)) if on is not None else Target(TargetKind.NONE)
    action, word = field_error("do", lambda: parse_action(str(raw["do"]), target))
    if action == "check":
        if not raw.get("expect"):
            raise ValueError("expect: a check needs expect = \"NAME OP VALUE\"")
        field_error("expect", lambda: parse_check(str(raw["expect"])))
    if action == "alter-config" and not raw.get("configs"):
        raise ValueError("configs: alter-config needs configs = { name = \"value\" }")
    rf = int(raw.get("replication_factor", 0))
    if action == "replicate" and not 1 <= rf <= brokers:
        raise ValueError(f"replication_factor: replicate needs a replication_factor within 1..{brokers}")
    partitions = field_error("partitions", lambda: _partitions(raw.get("partitions"))) \
        if action == "add-partitions" else 0
    reset = field_error("reset", lambda: parse_reset(str(raw.get("reset", "to-earliest")))) \
        if action == "reset-offsets" else None
    partition = field_error("partition", lambda: _partition(raw.get("partition"))) \
        if action == "abort-transaction" else None
    if action != "abort-transaction" and "partition" in raw:
        raise ValueError("partition: only abort-transaction takes a partition: leave it out")
    records = raw.get("records", [])
    if action == "type" and (not isinstance(records, list) or not records or not all(
            isinstance(r, str) and r for r in records)):
        raise ValueError("records: type needs records = [\"key:value\", ...] (lines, not empty)")
    timeout = float(raw.get("timeout", DEFAULT_TIMEOUT_S))
    if timeout <= 0:
        raise ValueError("timeout: must be > 0 seconds")
    net = _net_fields(raw, action, target, brokers)
    return Fault(
        at=trigger, action=action, target=target, word=word,
        configs={str(k): str(v) for k, v in dict(raw.get("configs", {})).items()},
        replication_factor=rf, partitions=partitions, partition=partition, expect=str(raw.get("expect", "")),
        note=str(raw.get("note", "")),
        timeout_s=timeout, line=line, fails=bool(raw.get("fails", False)), reset=reset,
        records=tuple(records) if action == "type" else (), **net,
    )


# the fields only a network fault takes, and the actions that take each
_NET_FIELDS = {"to": NET_ACTIONS, "both_ways": (NetAction.CUT.value,),
               "ms": (NetAction.DELAY.value,), "jitter_ms": (NetAction.DELAY.value,), "rate": (NetAction.LIMIT.value,),
               "direction": (NetAction.HOLD.value, NetAction.DELAY.value, NetAction.LIMIT.value)}
_NET_TARGETS = (TargetKind.BROKERS, TargetKind.LEADER, TargetKind.CONTROLLER, TargetKind.RANDOM_FOLLOWER,
                TargetKind.FOLLOWERS, TargetKind.COORDINATOR, TargetKind.SAME, TargetKind.ZOOKEEPER, TargetKind.CLIENTS,
                TargetKind.PRODUCER, TargetKind.CONSUMER, TargetKind.NONE)
_CLIENT_SOURCES = (TargetKind.CLIENTS, TargetKind.PRODUCER, TargetKind.CONSUMER)  # sources only, never a `to`


def _net_fields(raw: Mapping[str, Any], action: str, target: Target, brokers: int) -> dict[str, Any]:
    """A network fault's own fields, checked (``field: why`` on the first problem); {} for any other fault."""
    for name, takers in _NET_FIELDS.items():
        if name in raw and action not in takers:
            raise ValueError(f"{name}: only {', '.join(takers)} take{'s' if len(takers) == 1 else ''} {name}, "
                             f"not {action}: leave it out")
    if action not in NET_ACTIONS:
        return {}
    net = NetAction(action)
    if target.kind == TargetKind.CONSUMERS:
        raise ValueError(f"on: {net.value} acts on one client's links: name it, 'consumer 1', or every client "
                         "process with 'clients'")
    if target.kind not in _NET_TARGETS:
        raise ValueError(f"on: {net.value} acts on brokers or ZooKeeper ('broker 2', 'leader T/P', 'followers T/P', "
                         f"'zookeeper'; 'clients', 'producer', 'consumer K' as a source), not {target.text}")
    to: Target | None = None
    if "to" in raw:
        if net is NetAction.ISOLATE:
            raise ValueError("to: isolate cuts a node from every other node: leave to out, or do = \"cut\"")
        if target.kind == TargetKind.NONE:
            raise ValueError("to: a heal with a link names both ends: add on = \"broker N\" (the source)")
        try:
            to = parse_target(str(raw["to"]), brokers)
        except ValueError as exc:
            raise ValueError(f"to: {exc}") from None
        if to.kind not in _NET_TARGETS or to.kind in (*_CLIENT_SOURCES, TargetKind.NONE):
            source_only = " (a client is only a source)" if to.kind in _CLIENT_SOURCES else ""
            raise ValueError(f"to: {to.text!r} is not a node a link goes to{source_only}: name brokers or zookeeper "
                             "('broker 1', 'leader T/P', 'followers T/P', 'coordinator', 'zookeeper')")
        both = to.kind == TargetKind.BROKERS and target.kind == TargetKind.BROKERS
        if (both and set(to.brokers) & set(target.brokers)) or (
                to.kind == target.kind == TargetKind.COORDINATOR and to.group == target.group):
            raise ValueError(f"to: {to.text} -> itself is no link: a node's connections to itself are not proxied")
    elif net in LINK_ACTIONS:
        raise ValueError(f"to: {net.value} acts on links: name their far end, e.g. to = \"leader T/P\" "
                         "(the connections each 'on' node opens to it)")
    if net in LINK_ACTIONS and target.kind == TargetKind.ZOOKEEPER:
        raise ValueError("on: ZooKeeper opens no connection to the brokers: cut the link from the broker "
                         "(on = \"broker N\", to = \"zookeeper\")")
    if net in LINK_ACTIONS and target.kind in _CLIENT_SOURCES and to is not None and to.kind == TargetKind.ZOOKEEPER:
        raise ValueError(f"to: {target.text} do{'' if target.kind == TargetKind.CLIENTS else 'es'} not reach "
                         "ZooKeeper through the proxy: name a broker")
    fields: dict[str, Any] = {"to": to, "both_ways": bool(raw.get("both_ways", False))}
    if "both_ways" in raw and not isinstance(raw["both_ways"], bool):
        raise ValueError("both_ways: give true or false")
    if net is NetAction.DELAY:
        if "ms" not in raw:
            raise ValueError("ms: delay needs ms = 200 (milliseconds) or ms = \"1.5s\"")
        fields["ms"] = _amount("ms", lambda: parse_ms(str(raw["ms"])))
        jitter = raw.get("jitter_ms", 0)
        fields["jitter_ms"] = _amount("jitter_ms", lambda: parse_ms(str(jitter), "a jitter")) if jitter else 0
        if fields["jitter_ms"] > fields["ms"]:
            raise ValueError(f"jitter_ms: {fields['jitter_ms']} ms is more than the delay ({fields['ms']} ms): "
                             "give at most ms")
    if "direction" in raw:
        fields["direction"] = _direction(raw["direction"])
    if net is NetAction.LIMIT:
        if "rate" not in raw:
            raise ValueError("rate: limit needs rate = \"100KB/s\" (bytes per second)")
        fields["bytes_per_s"] = _amount("rate", lambda: parse_rate(str(raw["rate"])))
    return fields


def _partitions(value: object) -> int:
    """add-partitions' ``partitions``: the topic's new total (the loader checks it is more than the lab's)."""
    if value is None:
        raise ValueError("add-partitions needs partitions = N, the topic's new partition count")
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit() or int(value) < 2:
        raise ValueError(f"{value!r} is not a partition count: give the new total, a whole number above the "
                         "topic's partitions")
    return int(value)


def _partition(value: object) -> int | None:
    """abort-transaction's ``partition``: a partition number, or none (every partition of the topic)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        raise ValueError(f"{value!r} is not a partition: give its number (0, 1, ...), or leave partition out "
                         "for every transaction open on the topic")
    return int(value)


def _direction(value: object) -> Direction:
    """``direction = "requests"`` (from ``on`` to ``to``), ``"replies"`` or ``"both"``."""
    try:
        return Direction(value)
    except ValueError:
        raise ValueError(f"direction: {value!r} is not a direction: give \"requests\" (from on to to), "
                         "\"replies\" or \"both\"") from None


def _amount(name: str, parse: Callable[[], int]) -> int:
    try:
        return parse()
    except KafkalabError as exc:
        raise ValueError(f"{name}: {exc}") from None


def parse_reset(text: str) -> ResetTarget:
    """``to-earliest`` | ``to-latest`` | ``to-offset N`` | ``shift-by N`` | ``to-datetime ISO``, as the CLI takes."""
    mode, _, value = " ".join(text.split()).partition(" ")
    if mode not in RESET_MODES:
        raise ValueError(f"{text!r}: write one of to-earliest, to-latest, to-offset N, shift-by N, to-datetime ISO")
    if (mode in ("to-earliest", "to-latest")) == bool(value):
        raise ValueError(f"{text!r}: {mode} takes {'no value' if value else 'a value'}")
    try:
        return ResetTarget(mode, value)
    except KafkalabError as exc:
        raise ValueError(str(exc)) from None
