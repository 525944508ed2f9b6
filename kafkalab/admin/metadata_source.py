"""Whose metadata a snapshot shows: every broker is asked for its own, and the view taken is one the cluster's
live brokers agree on, never a cut-off broker's.

A broker isolated from ZooKeeper (or the KRaft controllers) and from the other brokers still answers clients
from the cache it had: itself leader, every ISR whole, the controller it last heard of (or itself). The
controller meanwhile dropped it (ZooKeeper mode: its session expired and /brokers/ids lost it; KRaft: the quorum
fenced it), moved its leaderships and shrank the ISRs, and told the other brokers, whose answers now leave it
out. So a broker counts as alive when most of the brokers that answered list it; only a view of such a broker
is shown, and a broker that answers but is not alive to the others is named as *disowned*, its view left out.
Of the live brokers' views the newest is shown: the controller raises a partition's leader epoch with every
leader it elects, and its updates reach the brokers a few milliseconds apart; between equals, the controller's
own (where the others' come from).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from kafkalab.admin.broker_wire import BrokerMetadata, Unanswered, ask_end_offsets, ask_metadata
from kafkalab.admin.snapshot import PartitionState


@dataclass(frozen=True)
class ClusterMetadata:
    view: BrokerMetadata  # the view taken for the cluster's
    answered_by: int | None  # the broker whose view it is
    disowned: tuple[int, ...] = ()  # brokers that answer from a cache the cluster's live brokers no longer share
    answering: tuple[str, ...] = ()  # the addresses that answered

    def topics(self, internal: bool) -> list[str]:
        """The topics' names, sorted; internal ones (``__consumer_offsets``) only if ``internal``."""
        return sorted(name for name in self.view.topics if internal or not name.startswith("__"))

    def partitions(self, topics: list[str], min_isr: dict[str, int]) -> list[PartitionState]:
        """``topics``' partitions as the chosen view has them (ISR sorted), with their topics' min.insync.replicas."""
        return [PartitionState(topic=name, partition=p.partition, leader=p.leader, replicas=p.replicas,
                               isr=tuple(sorted(p.isr)), min_isr=min_isr.get(name, 1), leader_epoch=p.leader_epoch)
                for name in topics for p in self.view.topics[name]]


def choose(views: Sequence[BrokerMetadata]) -> ClusterMetadata:
    """The view to show among the brokers' own (at least one): see the module's doc. A split with no majority
    (two brokers each listing only itself) cannot be judged: every view counts then."""
    answers = {_identity(v, views): v for v in views}
    voters = len(answers)
    alive = [b for b in answers if b is not None and 2 * sum(b in v.brokers for v in answers.values()) > voters]
    trusted = [answers[b] for b in sorted(alive)] or list(answers.values())
    named = Counter(v.controller for v in trusted if v.controller is not None).most_common(1)
    own = max(trusted, key=lambda v: (_epochs(v), bool(named) and _identity(v, views) == named[0][0]))
    disowned = tuple(sorted(b for b in answers if b is not None and b not in alive)) if alive else ()
    return ClusterMetadata(own, _identity(own, views), disowned, tuple(v.address for v in views))


def _epochs(view: BrokerMetadata) -> int:
    """How far a view has come: its leader epochs summed (each only ever rises)."""
    return sum(p.leader_epoch or 0 for partitions in view.topics.values() for p in partitions)


def _identity(view: BrokerMetadata, views: Iterable[BrokerMetadata]) -> int | None:
    """Which broker gave ``view``: the id any answer lists at the address it was asked at (a broker need not
    list itself), else at its port alone (a host named differently from the bootstrap's)."""
    if view.broker is not None:
        return view.broker
    listed = {address: b for v in views for b, address in v.brokers.items()}
    if view.address in listed:
        return listed[view.address]
    port = view.address.rpartition(":")[2]
    same_port = {b for address, b in listed.items() if address.rpartition(":")[2] == port}
    return same_port.pop() if len(same_port) == 1 else None


REST_GRACE_S = 0.3  # once most brokers answered: loopback answers take milliseconds, a paused broker never


class MetadataSource:
    """Asks every broker for its metadata at once (the bootstrap's addresses and those the answers listed), each
    with a short timeout: a killed broker refuses at once, a paused one costs ``timeout_s``, in parallel."""

    def __init__(self, bootstrap: str, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._addresses = tuple(dict.fromkeys(a.strip() for a in bootstrap.split(",") if a.strip()))
        self._answering: frozenset[str] = frozenset()

    def read(self) -> tuple[ClusterMetadata, bool]:
        """The cluster's metadata, and whether a broker that answered last time did not now (a paused broker
        keeps its connections open and never answers: a client that talked to it would wait on it again);
        :class:`Unanswered` when no broker answers."""
        answers = self._gather()
        views = [a for a in answers if isinstance(a, BrokerMetadata)]
        failures = [a for a in answers if isinstance(a, Unanswered)]
        if not views:
            reasons = ", ".join(dict.fromkeys(f.reason for f in failures))
            raise Unanswered(f"no broker answered ({reasons})" if reasons else "no broker to ask")
        chosen = choose(views)
        answering = frozenset(chosen.answering)
        went_silent = bool(self._answering - answering)
        self._answering = answering
        # brokers added after the bootstrap was written are asked from the next read on (by port: a broker may
        # advertise its host under another name than the bootstrap's)
        ports = {a.rpartition(":")[2] for a in self._addresses}
        self._addresses += tuple(a for a in chosen.view.brokers.values() if a.rpartition(":")[2] not in ports)
        return chosen, went_silent

    def _gather(self) -> list[BrokerMetadata | Unanswered]:
        """Every broker's answer, asked at once; once most brokers answered, the rest get only a short grace: a
        paused broker never answers, and waiting out its timeout made every snapshot (the console's table, a
        run's watch) take seconds while one was paused."""
        pool = ThreadPoolExecutor(max_workers=max(1, len(self._addresses)))
        try:
            pending = {pool.submit(self._ask, address) for address in self._addresses}
            deadline = time.monotonic() + self.timeout_s
            answers: list[BrokerMetadata | Unanswered] = []
            most = len(pending) // 2 + 1
            while pending:
                views = sum(isinstance(a, BrokerMetadata) for a in answers)
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                done, pending = wait(pending, timeout=min(left, REST_GRACE_S) if views >= most else left,
                                     return_when=FIRST_COMPLETED)
                if not done:  # the grace (or the timeout) ran out: the silent ones answered nothing
                    break
                answers += [f.result() for f in done]
            return answers
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # a silent broker's ask ends on its own timeout

    def _ask(self, address: str) -> BrokerMetadata | Unanswered:
        try:
            return ask_metadata(address, self.timeout_s)
        except Unanswered as failure:
            return failure


def end_offsets(meta: ClusterMetadata, partitions: list[PartitionState], wait_s: float) -> dict[tuple[str, int], int]:
    """The end offsets of ``partitions`` that their leaders, as ``meta`` names them and at its leader epochs, give
    within ``wait_s`` (all asked at once): never a cut-off broker's, which still takes itself for the leader."""
    by_leader: dict[str, dict[tuple[str, int], int | None]] = {}
    for p in partitions:
        if p.leader is not None and p.leader in meta.view.brokers:
            by_leader.setdefault(meta.view.brokers[p.leader], {})[(p.topic, p.partition)] = p.leader_epoch
    if not by_leader:
        return {}

    def ask(address: str) -> dict[tuple[str, int], int]:
        try:
            return ask_end_offsets(address, by_leader[address], max(0.05, wait_s))
        except Unanswered:  # a leader killed or paused since the metadata: its partitions' ends not known
            return {}

    with ThreadPoolExecutor(max_workers=len(by_leader)) as pool:
        return {tp: end for ends in pool.map(ask, by_leader) for tp, end in ends.items()}
