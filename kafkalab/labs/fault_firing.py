"""Fires a lab's faults in file order, each once its trigger is due, through :class:`FaultHost`: the few
things a fault may do to a run. Statuses (pending, waiting, fired, missed, failed) and checks are kept
here for the run's state and result.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from kafkalab.admin import ClusterSnapshot, ResetTarget
from kafkalab.cluster import NodeAction, NodeState
from kafkalab.cluster.control_socket import NETWORK
from kafkalab.cluster.netwiring import NetAction, NetRequest
from kafkalab.errors import KafkalabError
from kafkalab.labs.events import Actor, CheckEvent, EventKind, FaultEvent, FaultProblem
from kafkalab.labs.expectations import parse_check
from kafkalab.labs.faults import Fault, RunView, Target, TargetCategory, TargetKind
from kafkalab.labs.measured import Measured, num
from kafkalab.labs.results import ExpectationResult, FaultState, FaultStatus
from kafkalab.labs.timeline import Timeline
from kafkalab.labs.wording import amount, trigger_words
from kafkalab.netfaults import Direction

# node targets resolved from a fresh snapshot of the cluster
_SNAPSHOT_TARGETS = (TargetKind.LEADER, TargetKind.CONTROLLER, TargetKind.RANDOM_FOLLOWER, TargetKind.FOLLOWERS)


def held(direction: Direction) -> str:
    """What a hold keeps, for its timeline line: 'the requests', 'the replies', 'the bytes both ways'."""
    return "the bytes both ways" if direction is Direction.BOTH else f"the {direction.value}"


class FaultHost(Protocol):
    """What a fault may do to the run."""

    def node_states(self) -> Mapping[str, NodeState]: ...
    def fresh_snapshot(self) -> ClusterSnapshot | None: ...  # the last one seen when the cluster does not answer
    def node_action(self, name: str, action: NodeAction) -> None: ...
    def producer_action(self, start: bool) -> None: ...
    def pause_producer(self, pause: bool) -> None: ...  # SIGSTOP / SIGCONT: hung, not stopped (nothing closes)
    def crash_producer(self) -> None: ...  # killed, paused or not: a transaction it has open stays open
    def consumer_action(self, local_id: int, action: str) -> bool: ...  # False: nothing to do (not running)
    def processor_action(self, action: str) -> bool: ...  # the same for the lab's processor
    def send_control(self, topic: str, word: str) -> int: ...
    def active_controller(self) -> str | None: ...  # KRaft: the quorum leader's node; None in ZooKeeper mode
    def group_coordinator(self, group: str) -> str: ...  # the broker node coordinating group ("": the run's) now
    def create_topic(self, topic: str, timeout_s: float) -> None: ...
    def alter_topic(self, topic: str, configs: Mapping[str, str]) -> None: ...
    def replicate(self, topic: str, replication_factor: int) -> str: ...
    def add_partitions(self, topic: str, partitions: int) -> str: ...  # says what changed: "6 -> 8 partitions ..."
    def abort_transactions(self, topic: str, partition: int | None) -> str: ...  # says which it aborted
    def elect_preferred(self, topic: str) -> None: ...
    def reset_offsets(self, group: str, target: ResetTarget, timeout_s: float) -> str: ...
    def type_records(self, topic: str, lines: Sequence[str]) -> str: ...
    def live_metrics(self) -> dict[str, Measured]: ...
    def net(self, request: NetRequest) -> list[str]: ...  # through the cluster's proxy: the rules applied or healed


class FaultFiring:
    def __init__(self, faults: Sequence[Fault], timeline: Timeline, rng: random.Random,
                 consumer_ids: Sequence[int], attendee: bool = False) -> None:
        """``attendee``: these are a fix attempt's live actions, not the lab's faults."""
        self.faults = list(faults)
        self.timeline = timeline
        self.rng = rng
        self.consumer_ids = list(consumer_ids)
        self.statuses = [FaultStatus(i, f.describe(), attendee=attendee, what=f.doing())
                         for i, f in enumerate(self.faults)]
        self.actor = Actor.ATTENDEE if attendee else Actor.LAB
        self.checks: list[ExpectationResult] = []

    @property
    def went_wrong(self) -> int:
        return sum(f.went_wrong for f in self.statuses)

    @property
    def failed(self) -> int:
        """Faults fired that could not be done (or, expected to fail, did not)."""
        return sum(f.state == FaultState.FAILED for f in self.statuses)

    def run(self, host: FaultHost, view: RunView, sleep: Callable[[float], None], tick_s: float,
            past_deadline: Callable[[], bool]) -> None:
        """Every fault in turn, done through ``host`` once its trigger is due in ``view``; a fault whose trigger
        never came ends the timeline (the rest are missed)."""
        previous_nodes: list[str] = []
        fired_prev_at = 0.0
        for i, fault in enumerate(self.faults):
            status = self.statuses[i]
            status.state = FaultState.WAITING
            turn = time.monotonic()
            while not fault.at.due(view, fired_prev_at):
                if time.monotonic() - turn > fault.timeout_s:
                    self._missed(i, f"it waited {amount(fault.timeout_s, ' s')} for {trigger_words(fault.at)}")
                    return
                if past_deadline():
                    self._missed(i, f"the run's time was up while it waited for {trigger_words(fault.at)}")
                    return
                sleep(tick_s)
            fired_prev_at = self.timeline.now()
            status.fired_at = round(fired_prev_at, 2)
            try:
                targets = self.fire(host, fault, previous_nodes)
            except KafkalabError as exc:
                if fault.fails:  # the lab's lesson: this step cannot succeed now
                    status.state, status.detail = FaultState.FIRED, f"failed, as the lab expects: {exc}"
                    self.timeline.add(FaultEvent(source="lab", action=fault.action, targets=(), trigger=fault.at.text,
                                                 detail=f"fault {i + 1} ({fault.describe()}) {status.detail}",
                                                 actor=self.actor))
                    continue
                self._failed(i, fault, str(exc))
                continue
            if fault.fails:
                self._failed(i, fault, "succeeded, but the lab expects it to fail")
                continue
            status.state, status.targets = FaultState.FIRED, targets
            if fault.target.category == TargetCategory.NODES and targets:
                previous_nodes = targets

    def _failed(self, index: int, fault: Fault, detail: str) -> None:
        status = self.statuses[index]
        status.state, status.detail = FaultState.FAILED, detail
        self.timeline.add(FaultProblem(kind=EventKind.FAULT_FAILED, source="lab", index=index,
                                       detail=f"fault {index + 1} ({fault.describe()}): {detail}"))

    def _missed(self, index: int, detail: str) -> None:
        status = self.statuses[index]
        status.state, status.detail = FaultState.MISSED, detail
        self.timeline.add(FaultProblem(kind=EventKind.FAULT_MISSED, source="lab", detail=f"fault {index + 1}: {detail}",
                                       index=index))
        for rest in self.statuses[index + 1:]:
            rest.state, rest.detail = FaultState.MISSED, "an earlier fault never fired"

    def fire(self, host: FaultHost, fault: Fault, previous_nodes: list[str]) -> list[str]:
        """Do one fault now; returns what it acted on."""
        category, action = fault.target.category, fault.action
        if action == "note":
            self.timeline.say(EventKind.NOTE, "lab", fault.note or fault.at.text)
            return []
        if action == "check":
            self._check(host, fault)
            return []
        if fault.net_action is not None:
            return self._net(host, fault, fault.net_action, previous_nodes)
        if category == TargetCategory.NODES:
            targets = self._nodes(host, fault, previous_nodes)
        elif category == TargetCategory.PRODUCER:
            if action in ("pause", "resume"):
                host.pause_producer(action == "pause")
            elif action == "crash":
                host.crash_producer()
            else:
                host.producer_action(action == "start")
            targets = ["producer"]
        elif category == TargetCategory.CONSUMERS:
            ids = [fault.target.local_id] if fault.target.kind == TargetKind.CONSUMER else self.consumer_ids
            targets = [f"consumer-{i}" for i in ids if i is not None and host.consumer_action(i, action)]
        elif category == TargetCategory.PROCESSOR:
            targets = ["processor"] if host.processor_action(action) else []
        elif category == TargetCategory.GROUP:
            assert fault.reset is not None
            detail = host.reset_offsets(fault.target.group, fault.reset, fault.timeout_s)
            targets = [f"group {fault.target.group}"]
            self._event(fault, targets, detail)
            return targets
        else:
            return self._topic(host, fault)
        self._event(fault, targets)
        return targets

    def _nodes(self, host: FaultHost, fault: Fault, previous_nodes: list[str]) -> list[str]:
        names = self._resolve(host, fault.target, previous_nodes)
        action = NodeAction(fault.action)
        for name in names:
            with self.timeline.actors.acting(name, self.actor, action):  # the node's changes say whose fault
                host.node_action(name, action)
        return names

    def _resolve(self, host: FaultHost, target: Target, previous_nodes: list[str]) -> list[str]:
        snap = host.fresh_snapshot() if target.kind in _SNAPSHOT_TARGETS else None
        states = host.node_states()
        active = host.active_controller() if target.kind == TargetKind.CONTROLLER else None
        coordinator = host.group_coordinator(target.group) if target.kind == TargetKind.COORDINATOR else None
        names = target.nodes(snap, previous_nodes, self.rng, states, active, coordinator)
        if not names:
            raise KafkalabError(f"{target.text} names no node right now")
        return names

    def _net(self, host: FaultHost, fault: Fault, action: NetAction, previous_nodes: list[str]) -> list[str]:
        """A network fault through the cluster's proxy: isolate each node, act on each link from an ``on`` node
        to a ``to`` node, or heal. Returns the ``on`` nodes (what ``same`` means next); the event names the links."""
        sources = [] if fault.target.kind == TargetKind.NONE else self._resolve(host, fault.target, previous_nodes)
        ends = self._resolve(host, fault.to, previous_nodes) if fault.to is not None else []
        requests: list[NetRequest] = []
        if action is NetAction.ISOLATE or (action is NetAction.HEAL and not ends):
            requests = [NetRequest(action, (node,)) for node in sources] or [NetRequest(action)]
            shown = ", ".join(sources) or "every link"
        else:
            links = [(s, e) for s in sources for e in ends if s != e]
            if not links:
                raise KafkalabError(f"{fault.target.text} to {fault.to.text if fault.to else ''} names no link right "
                                    f"now: both name {', '.join(sources)}")
            requests = [NetRequest(action, (s, e), ms=fault.ms, jitter_ms=fault.jitter_ms,
                                   bytes_per_s=fault.bytes_per_s, direction=fault.direction,
                                   both_ways=fault.both_ways) for s, e in links]
            arrow = "<->" if fault.both_ways else "->"
            shown = ", ".join(f"{s} {arrow} {e}" for s, e in links)
        with self.timeline.actors.acting(NETWORK, self.actor):
            rules = [rule for request in requests for rule in host.net(request)]
        amount = {NetAction.DELAY: f" {fault.ms} ms" + (f" +/- {fault.jitter_ms} ms" if fault.jitter_ms else ""),
                  NetAction.LIMIT: f" {fault.bytes_per_s:,} B/s",
                  NetAction.HOLD: f", {held(fault.direction)} kept by the proxy until healed"}.get(action, "")
        if action in (NetAction.DELAY, NetAction.LIMIT) and fault.direction is not Direction.BOTH:
            amount += f" ({fault.direction.value} only)"
        count = f"{len(rules)} rule{'' if len(rules) == 1 else 's'}"
        self._event(fault, [shown], f"{count}{' healed' if action is NetAction.HEAL else ''}{amount}")
        return sources

    def _topic(self, host: FaultHost, fault: Fault) -> list[str]:
        topic, action, detail = fault.target.topic, fault.action, ""
        if action == "send":
            detail = f"{fault.word!r} sent to {host.send_control(topic, fault.word)} partitions"
        elif action == "create":  # bounded by the fault's timeout: a lab may show that creation fails
            host.create_topic(topic, min(60.0, fault.timeout_s))
        elif action == "alter-config":
            host.alter_topic(topic, fault.configs)
            detail = ", ".join(f"{k}={v}" for k, v in fault.configs.items())
        elif action == "replicate":
            detail = host.replicate(topic, fault.replication_factor)
        elif action == "add-partitions":
            detail = (f"{topic} already has {fault.planned} partitions: none added" if fault.planned is not None
                      else host.add_partitions(topic, fault.partitions))
        elif action == "abort-transaction":
            detail = host.abort_transactions(topic, fault.partition)
        elif action == "elect-preferred":
            host.elect_preferred(topic)
        elif action == "type":
            detail = host.type_records(topic, fault.records)
        targets = [f"topic {topic}"]
        self._event(fault, targets, detail)
        return targets

    def _event(self, fault: Fault, targets: list[str], detail: str = "") -> None:
        label = f"{fault.action} {fault.word}".strip()
        text = f"{label} {', '.join(targets)}".strip() + (f": {detail}" if detail else "")
        self.timeline.add(FaultEvent(source="lab", detail=text, action=fault.action, targets=tuple(targets),
                                     trigger=fault.at.text, actor=self.actor))

    def _check(self, host: FaultHost, fault: Fault) -> None:
        expectation = parse_check(fault.expect, fault.line)
        held, actual, wanted = expectation.evaluate(host.live_metrics())
        self.checks.append(ExpectationResult(expectation.text, held, actual, wanted, fault.line,
                                             round(self.timeline.now(), 2)))
        self.timeline.add(CheckEvent(source="lab", held=held, detail=f"{expectation.text}: "
                                     f"{'held' if held else 'did not hold'} (was {num(actual)})"))
