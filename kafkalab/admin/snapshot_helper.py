"""Cluster snapshots asked in a helper process (:mod:`kafkalab.admin.helper_process`): the console's partition
table and a lab run's cluster watch.

Both poll a cluster's snapshot every second, while brokers are killed and leaders move: a librdkafka crash
under that poll (a segfault ended a leader-failover console at 94%, its cluster with it) now costs one poll.
The console's log is ``snapshots-<console pid>.log`` under the state root's ``helpers`` directory; a run's is
``snapshot-helper.log`` in its run dir.
"""

from __future__ import annotations

import os
import time
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from kafkalab.admin.client import REQUEST_TIMEOUT_S, Admin
from kafkalab.admin.helper_process import ClusterGenerations, HelperClosed, HelperGone, HelperProcess, serve
from kafkalab.admin.snapshot import ClusterSnapshot
from kafkalab.child_python import python_module
from kafkalab.paths import state_root

HELPER_COMMAND = tuple(python_module("kafkalab.admin.snapshot_helper"))


@dataclass(frozen=True)
class SnapshotRequest:
    """One :meth:`Admin.snapshot` asked across the helper's pipe (as a JSON list, in field order)."""

    bootstrap: str
    cluster: int  # tells one cluster from the next on the same ports (ClusterGenerations)
    timeout_s: float
    wait_s: float
    offsets: bool = True
    internal: bool = False

    def to_wire(self) -> list[Any]:
        return list(astuple(self))

    @classmethod
    def from_wire(cls, wire: list[Any]) -> SnapshotRequest:
        return cls(*wire)


class Answerer:
    """The helper's side: one :class:`Admin` per cluster, a new one when the key changes. A lab's next run may
    start a new cluster on the same ports, and a librdkafka client crossing from one cluster to the next at
    the same address aborted a console once (see :class:`kafkalab.feeds.groups_feed.AdminGroupsFeed`)."""

    def __init__(self) -> None:
        self._current: tuple[tuple[str, int], Admin] | None = None

    def answer(self, *wire: Any) -> dict[str, Any]:
        ask = SnapshotRequest.from_wire(list(wire))
        if self._current is None or self._current[0] != (ask.bootstrap, ask.cluster):
            self._current = ((ask.bootstrap, ask.cluster), Admin(ask.bootstrap, timeout_s=ask.timeout_s))
        return self._current[1].snapshot(offsets=ask.offsets, internal=ask.internal, wait_s=ask.wait_s).to_wire()


class SnapshotHelper:
    """The console's end: :meth:`snapshot` asks the helper (started on first use, again after a crash)."""

    def __init__(self, log_path: Path | None = None) -> None:
        self._process = HelperProcess(HELPER_COMMAND,
                                      log_path or state_root() / "helpers" / f"snapshots-{os.getpid()}.log")
        self._clusters = ClusterGenerations()

    @property
    def pid(self) -> int | None:
        """The helper's process id (None before its first start, once its death was told, after close)."""
        return self._process.pid

    def snapshot(self, bootstrap: str, key: object, wait_s: float, timeout_s: float = REQUEST_TIMEOUT_S, *,
                 offsets: bool = True, internal: bool = False) -> ClusterSnapshot:
        """What :meth:`Admin.snapshot` says of the cluster at ``bootstrap`` (``key`` tells one cluster from the next
        on the same ports); while the helper is dead, an unreachable snapshot that says so (the next call starts
        a new helper)."""
        ask = SnapshotRequest(bootstrap, self._clusters.of(key), timeout_s, wait_s, offsets, internal)
        try:
            return ClusterSnapshot.from_wire(self._process.ask(ask.to_wire(), wait_s))
        except HelperGone as gone:
            return ClusterSnapshot(time.time(), False, error=f"the admin helper {gone.why}: asking again",
                                   helper_failed=True)
        except HelperClosed as closed:  # a poll under way as the console closes: nobody sees it
            return ClusterSnapshot(time.time(), False, error=str(closed))

    def close(self) -> None:
        self._process.close()


if __name__ == "__main__":
    serve(Answerer().answer)
