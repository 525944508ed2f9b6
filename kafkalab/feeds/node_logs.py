"""Following the nodes' log files: the lines each gained since the last poll."""

from __future__ import annotations

from pathlib import Path

from kafkalab.cluster.node import read_tail
from kafkalab.cluster.view import ClusterView

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
    may be none."""

    def __init__(self) -> None:
        self._followers: dict[str, LogFollower] = {}

    def new_lines(self, cluster: ClusterView) -> dict[str, tuple[str, ...]]:
        """Each node's new lines, for the nodes that have some."""
        for node in cluster.nodes:
            if node.name not in self._followers:
                self._followers[node.name] = LogFollower(node.log_path)
        lines = {name: follower.new_lines() for name, follower in self._followers.items()}
        return {name: new for name, new in lines.items() if new}
