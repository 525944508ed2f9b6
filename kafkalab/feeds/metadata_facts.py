"""What the node panes show of the metadata layer: ZooKeeper's client count, or the KRaft quorum."""

from __future__ import annotations

import time

from kafkalab.cluster import NodeState
from kafkalab.cluster.node import zookeeper_command
from kafkalab.cluster.quorum import QuorumState
from kafkalab.cluster.view import ClusterView

QUORUM_WAIT_S = 1.0  # while the active controller is dead, the quorum answers late or not at all
ZK_ASK_EVERY_S = 5.0  # each `cons` writes a line to ZooKeeper's log: ask rarely


class MetadataFacts:
    """One source's view of the metadata layer, with ZooKeeper's client count asked at most every few seconds."""

    def __init__(self) -> None:
        self._zk_asked: dict[int, tuple[float, int | None]] = {}

    def of(self, cluster: ClusterView) -> tuple[int | None, QuorumState | None]:
        """ZooKeeper's client count, or in KRaft mode the quorum (a bounded wait)."""
        if cluster.spec.kraft:
            return None, cluster.quorum(timeout_s=QUORUM_WAIT_S)
        zk = cluster.zookeeper
        return (self.zookeeper_connections(zk.port) if zk.state == NodeState.RUNNING else None), None

    def zookeeper_connections(self, port: int) -> int | None:
        """How many clients ZooKeeper serves (the brokers), from its `cons` four-letter word."""
        asked_at, count = self._zk_asked.get(port, (0.0, None))
        if time.monotonic() - asked_at < ZK_ASK_EVERY_S:
            return count
        text = zookeeper_command(port, "cons", timeout=0.3)
        lines = [ln for ln in text.splitlines() if ln.strip().startswith("/")]
        count = max(0, len(lines) - 1) if text else None  # minus the `cons` connection itself
        self._zk_asked[port] = (time.monotonic(), count)
        return count
