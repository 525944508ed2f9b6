"""What the console's consumer-group and records panes show, fetched in thread workers.

:class:`AdminGroupsFeed` describes every group of the cluster (in a helper process, which a librdkafka
crash may end without ending the console; each group's total lag is kept over time for the sparkline),
plans and applies offset resets, follows the records of one topic/partition and sends typed records.
Every method may block briefly and is called from a thread worker, never from the event loop; an
unreachable cluster is a frame that says so.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kafkalab.admin import Admin, GroupDescription, Groups, OffsetMove, ResetTarget
from kafkalab.admin.group_helper import GroupHelper
from kafkalab.clients.records import CommittedReach, Outcome, Record, RecordTail, RecordTyper, TxnView
from kafkalab.errors import KafkalabError
from kafkalab.feeds.source import HasBootstrap
from kafkalab.paths import state_root

LAG_POINTS = 60  # the sparkline's width in polls
RECORDS_KEPT = 200
TAIL_START = 20  # the records pane starts this many records before each partition's end
_OFFSET_TAIL_BASE = -2000  # librdkafka's RD_KAFKA_OFFSET_TAIL(n) is -2000 - n
GROUPS_WAIT_S = 1.5


@dataclass(frozen=True)
class GroupsFrame:
    groups: tuple[GroupDescription, ...] = ()
    lag_history: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    error: str = ""  # the cluster did not answer (the panes keep their last values)


@dataclass(frozen=True)
class RecordsFrame:
    topic: str = ""
    partition: int | None = None  # None: every partition
    records: tuple[Record, ...] = ()  # the newest last, at most RECORDS_KEPT
    error: str = ""
    txn: tuple[TxnView, ...] = ()  # each record as a read_committed reader sees it (empty: not known)


class GroupsFeed(Protocol):
    def groups(self) -> GroupsFrame: ...
    def plan_reset(self, group: str, topic_specs: list[str], target: ResetTarget) -> list[OffsetMove]: ...
    def apply_reset(self, group: str, moves: list[OffsetMove]) -> None: ...
    def watch(self, topic: str, partition: int | None) -> None: ...
    def records(self) -> RecordsFrame: ...
    def type_record(self, line: str, key_sep: str | None = ":") -> Outcome: ...
    def close(self) -> None: ...


class AdminGroupsFeed:
    """Groups and records of the cluster ``cluster()`` gives (asked at every call: labs start new clusters).

    Each cluster gets its own admin client, even on the same ports as the last: a client whose coordinator
    requests crossed from one cluster to the next at the same address aborted the whole console inside
    librdkafka (an assertion in rd_kafka_enq_once_del_source_return, the third run of two console sittings).
    """

    def __init__(self, cluster: Callable[[], HasBootstrap | None], timeout_s: float = 1.0) -> None:
        self._cluster = cluster
        self._admin_of: HasBootstrap | None = None
        self._timeout_s = timeout_s
        self._admin: Admin | None = None
        self._lags: dict[str, deque[int]] = {}
        self._answered: HasBootstrap | None = None  # the cluster whose groups the last frame showed
        self._lock = threading.Lock()
        self._watch: tuple[str, int | None] | None = None
        self._tail: RecordTail | None = None
        self._committed: CommittedReach | None = None
        self._tail_for: tuple[HasBootstrap, str, int | None] | None = None
        self._records: deque[Record] = deque(maxlen=RECORDS_KEPT)
        self._typer: RecordTyper | None = None
        self._typer_for: tuple[HasBootstrap, str] | None = None
        self._helper = GroupHelper(state_root() / "helpers" / f"groups-{os.getpid()}.log")

    def _current(self) -> HasBootstrap:
        """The cluster now; a new one gets a new lag history (and admin client, when one is asked for)."""
        cluster = self._cluster()
        if cluster is None:
            raise KafkalabError("no cluster yet")
        if self._admin_of is not cluster:
            self._admin, self._admin_of = None, cluster
            self._lags.clear()
        return cluster

    def _groups(self) -> Groups:
        """For the occasional reset and watch: an in-process client made on first use (the polls use helpers)."""
        cluster = self._current()
        if self._admin is None:
            self._admin = Admin(cluster.bootstrap, timeout_s=self._timeout_s)
        return Groups(self._admin)

    # ---- groups ----------------------------------------------------------------------------------
    def groups(self) -> GroupsFrame:
        """Every group described, in the helper process (:mod:`kafkalab.admin.group_helper`)."""
        try:
            cluster = self._current()
            described = self._helper.describe_all(cluster.bootstrap, cluster, self._timeout_s, GROUPS_WAIT_S)
        except KafkalabError as exc:
            if self._answered is not None and self._answered is not self._cluster():
                # a fresh cluster (or none) not answering yet: the pane would keep the last cluster's groups as
                # "last values"; they are no values of this one, which has no group yet
                self._answered = None
                return GroupsFrame()
            return GroupsFrame(error=str(exc), lag_history=self._history())
        self._answered = cluster
        for desc in described:
            if desc.total_lag is not None:
                self._lags.setdefault(desc.group_id, deque(maxlen=LAG_POINTS)).append(desc.total_lag)
        return GroupsFrame(described, self._history())

    def _history(self) -> dict[str, tuple[int, ...]]:
        return {g: tuple(points) for g, points in self._lags.items()}

    def plan_reset(self, group: str, topic_specs: list[str], target: ResetTarget) -> list[OffsetMove]:
        return self._groups().plan_reset(group, topic_specs, target)

    def apply_reset(self, group: str, moves: list[OffsetMove]) -> None:
        self._groups().apply_reset(group, moves)

    # ---- records ---------------------------------------------------------------------------------
    def watch(self, topic: str, partition: int | None) -> None:
        """Follow ``topic`` (one partition, or all): checked here, switched at the next :meth:`records`."""
        ids = self._groups().partition_ids(topic)
        if partition is not None and partition not in ids:
            raise KafkalabError(f"topic {topic} has no partition {partition}: its partitions are 0..{len(ids) - 1}")
        with self._lock:
            self._watch = (topic, partition)

    def records(self) -> RecordsFrame:
        with self._lock:
            watch = self._watch
        cluster = self._cluster()
        if watch is None or cluster is None:
            return RecordsFrame()
        topic, partition = watch
        if self._tail_for != (cluster, topic, partition):
            self._close_tail()
            try:
                ids = [partition] if partition is not None else self._groups().partition_ids(topic)
            except KafkalabError as exc:
                return RecordsFrame(topic, partition, error=str(exc))
            start = _OFFSET_TAIL_BASE - TAIL_START
            self._tail = RecordTail(cluster.bootstrap, topic, ids, start=start)
            self._committed = CommittedReach(cluster.bootstrap, topic, ids, start)  # its start <= the tail's
            self._tail_for = (cluster, topic, partition)
        assert self._tail is not None and self._committed is not None
        try:
            self._records.extend(self._tail.poll(0.2))
            self._committed.poll(self._records)
        except KafkalabError as exc:
            return RecordsFrame(topic, partition, tuple(self._records), error=str(exc))
        records = tuple(self._records)
        return RecordsFrame(topic, partition, records, txn=tuple(self._committed.view(r) for r in records))

    def type_record(self, line: str, key_sep: str | None = ":") -> Outcome:
        """Send ``key:value`` (or a plain value) to the watched topic and wait for its outcome."""
        with self._lock:
            watch = self._watch
        cluster = self._cluster()
        if watch is None or cluster is None:
            return Outcome(line, error="pick a topic first (topic or topic:partition)")
        if self._typer_for != (cluster, watch[0]):
            if self._typer is not None:
                self._typer.close()
            self._typer = RecordTyper(cluster.bootstrap, watch[0])
            self._typer_for = (cluster, watch[0])
        assert self._typer is not None
        return self._typer.send(line, key_sep if key_sep and key_sep in line else None)

    def _close_tail(self) -> None:
        if self._tail is not None:
            self._tail.close()
        if self._committed is not None:
            self._committed.close()
        self._tail, self._committed, self._tail_for = None, None, None
        self._records.clear()

    def close(self) -> None:
        self._helper.close()
        self._close_tail()
        if self._typer is not None:
            self._typer.close()
            self._typer = None
