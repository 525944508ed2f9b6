"""Every consumer group of a cluster described in a helper process, for a view that polls them.

librdkafka 2.16 takes its whole process down when a group's coordinator moves under an admin client's group
request: ``rd_kafka_admin_coord_response_parse`` fails an assertion (``eonce->refcnt > 0``) answering
DescribeConsumerGroups, and ListConsumerGroupOffsets segfaults in ``rd_kafka_cgrp_op`` (see
:mod:`kafkalab.admin.committed`). A console polls its groups while brokers are killed and restarted, just
when coordinators move, and died mid-run so. In a helper such a crash costs one answer: the next call starts
a new helper (:mod:`kafkalab.admin.helper_process`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kafkalab.admin.client import Admin
from kafkalab.admin.groups import GroupDescription, Groups
from kafkalab.admin.helper_process import ClusterGenerations, HelperGone, HelperProcess, serve
from kafkalab.admin.offsets_log import OffsetsLog
from kafkalab.child_python import python_module
from kafkalab.errors import KafkalabError

HELPER_COMMAND = tuple(python_module("kafkalab.admin.group_helper"))


def describe_every_group(groups: Groups, wait_s: float) -> tuple[GroupDescription, ...]:
    """List the groups (those forgotten once their offsets expired too), then describe each within ``wait_s``
    in all; KafkalabError when the list fails."""
    deadline = time.monotonic() + wait_s
    listing = groups.listed_with_gone(wait_s / 3)
    return tuple(groups.describe(g.group_id, wait_s=max(0.2, deadline - time.monotonic())) for g in listing)


class Answerer:
    """The helper's side: one :class:`Groups` per cluster (a new one when the key changes), and a new one after
    an answer in which a group's coordinator did not answer. librdkafka's admin client can hold on to a
    coordinator that moved: once a killed coordinator was back, every DescribeConsumerGroups of that client
    said NOT_COORDINATOR for good, while a new client answered at once."""

    def __init__(self, make: Callable[[str, float, OffsetsLog], Groups] | None = None) -> None:
        self._make = make or (lambda bootstrap, timeout_s, log: Groups(Admin(bootstrap, timeout_s=timeout_s), log))
        self._current: tuple[tuple[str, int], Groups] | None = None
        # kept over new clients of the same cluster: a plain reader, it never holds on to a coordinator, and
        # read afresh it would fetch the whole topic again, on a loaded machine the very poll that replaces one
        self._log: tuple[tuple[str, int], OffsetsLog] | None = None

    def answer(self, bootstrap: str, cluster: int, timeout_s: float, wait_s: float) -> tuple[bool, object]:
        """(True, every group described) or (False, the error's one line); ``cluster`` is the cluster's
        generation (:class:`~kafkalab.admin.helper_process.ClusterGenerations`)."""
        key = (bootstrap, cluster)
        if self._log is None or self._log[0] != key:
            if self._log is not None:
                self._log[1].close()  # the last cluster's reader would go on dialling its gone brokers
            self._log = (key, OffsetsLog(bootstrap))
        if self._current is None or self._current[0] != key:
            self._current = (key, self._make(bootstrap, timeout_s, self._log[1]))
        try:
            described = describe_every_group(self._current[1], wait_s)
        except KafkalabError as exc:
            self._current = None
            return False, str(exc)
        if not all(desc.reachable for desc in described):
            self._current = None
        return True, described

    def wire(self, bootstrap: str, cluster: int, timeout_s: float, wait_s: float) -> tuple[bool, object]:
        """:meth:`answer` as the pipe carries it: the descriptions as JSON-able dicts."""
        ok, answer = self.answer(bootstrap, cluster, timeout_s, wait_s)
        if not ok:
            return False, answer
        assert isinstance(answer, tuple)
        return True, [desc.to_wire() for desc in answer]


class GroupHelper:
    """The console's end: :meth:`describe_all` asks the helper (started on first use, again after a crash)."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self._process = HelperProcess(HELPER_COMMAND, log_path)
        self._clusters = ClusterGenerations()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def describe_all(self, bootstrap: str, key: object, timeout_s: float,
                     wait_s: float) -> tuple[GroupDescription, ...]:
        """Every group of the cluster at ``bootstrap`` (``key`` tells one cluster from the next on the same
        ports); KafkalabError when the cluster does not answer or the helper died answering."""
        try:
            ok, answer = self._process.ask((bootstrap, self._clusters.of(key), timeout_s, wait_s), wait_s)
        except HelperGone as gone:
            raise KafkalabError(f"the group helper process {gone.why}: the next poll starts a new one "
                                f"(its log: {self.log_path})") from None
        if not ok:
            raise KafkalabError(answer)
        return tuple(GroupDescription.from_wire(desc) for desc in answer)

    def close(self) -> None:
        self._process.close()


if __name__ == "__main__":
    serve(Answerer().wire)
