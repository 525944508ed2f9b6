"""Following the nodes' log files: the lines each gained since the last poll, and the frame of a cluster's nodes
made from them."""

from __future__ import annotations

import time
from pathlib import Path

from kafkalab.cluster.node import read_tail
from kafkalab.cluster.truncations import TruncationWatch
from kafkalab.cluster.view import ClusterView
from kafkalab.feeds.frames import NodesFrame
from kafkalab.feeds.metadata_facts import MetadataFacts
from kafkalab.feeds.net_view import net_view

LOG_LINES_KEPT = 200
_LOG_READ_MAX = 65536


class LogFollower:
    """The lines a node's log gained since the last call (reads only what is new, at most 64 KiB)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = ""

    def new_lines(self) -> tuple[str, ...]:
        end, data = read_tail(self.path, self._offset, _LOG_READ_MAX)
        if end < self._offset:  # truncated, replaced or gone: its start is not the rest of the line held back
            self._partial = ""
        self._offset = end
        text = self._partial + data
        lines = text.split("\n")
        self._partial = lines.pop()
        return tuple(lines[-LOG_LINES_KEPT:])


class NodeLogs:
    """A follower per node log of a cluster, made as its nodes appear: a cluster builds its nodes in
    ``start()`` (in KRaft mode after formatting the storage, seconds later), so the nodes a console first sees
    may be none. Its brokers' truncations are read as the lines come: those logged before it began are not news
    (a cluster attached to, or kept from an earlier console)."""

    def __init__(self) -> None:
        self._followers: dict[str, LogFollower] = {}
        self.truncations = TruncationWatch(since=time.time())

    def new_lines(self, cluster: ClusterView) -> dict[str, tuple[str, ...]]:
        """Each node's new lines, for the nodes that have some."""
        for node in cluster.nodes:
            if node.name not in self._followers:
                self._followers[node.name] = LogFollower(node.log_path)
        lines = {name: follower.new_lines() for name, follower in self._followers.items()}
        return {name: new for name, new in lines.items() if new}


def nodes_frame(cluster: ClusterView, logs: NodeLogs, facts: MetadataFacts, down_requested: bool) -> NodesFrame:
    """Every node of ``cluster``, the lines its logs gained and the truncations they tell (read here, in the
    source's thread: the console only says them), the metadata layer and the network faults in force."""
    if not cluster.nodes:
        return NodesFrame(())
    lines = logs.new_lines(cluster)
    conns, quorum = facts.of(cluster)
    return NodesFrame(tuple(cluster.infos()), lines, conns, down_requested, quorum, net_view(cluster.net),
                      tuple(logs.truncations.feed(lines)))
