"""Which node opened a connection: the process that owns the connecting socket, looked up among known pids.

On loopback both ends of a TCP connection live on this machine, so the peer's (host, port) is a socket some
local process owns. Only the pids the caller registered are searched (their own sockets, no privilege
needed, unlike a machine-wide ``psutil.net_connections`` on macOS); a socket none of them owns is a client's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import psutil

from kafkalab.netfaults.rules import CLIENTS

Address = tuple[str, int]
IPV4_MAPPED = "::ffff:"  # Java's sockets are IPv6 by default, IPv4 peers mapped into it


class SourceTable:
    """Node name <-> pid, updated from the control socket while the proxy's threads look sources up."""

    def __init__(self, nodes: dict[str, int] | None = None) -> None:
        self._lock = threading.Lock()
        self._pids: dict[str, int] = dict(nodes or {})

    def register(self, node: str, pid: int) -> None:
        """``node`` is now process ``pid`` (a restarted node replaces its old pid)."""
        with self._lock:
            self._pids[node] = pid

    def forget(self, node: str) -> None:
        with self._lock:
            self._pids.pop(node, None)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._pids)

    def identify(self, peer: Address, local: Address) -> str:
        """The node whose process owns the socket bound to ``peer`` and connected to ``local``; else CLIENTS."""
        return owner(self.snapshot().items(), peer, local)


def owner(candidates: Iterable[tuple[str, int]], peer: Address, local: Address) -> str:
    for node, pid in candidates:
        try:
            conns = psutil.Process(pid).net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue  # a node that just died or restarted: its old pid owns nothing any more
        for conn in conns:
            if conn.raddr and (plain(conn.laddr.ip), conn.laddr.port) == peer \
                    and (plain(conn.raddr.ip), conn.raddr.port) == local:
                return node
    return CLIENTS


def plain(ip: str) -> str:
    """An IPv4 address as a dual-stack socket shows it (a JVM's: ``::ffff:127.0.0.1``) -> ``127.0.0.1``."""
    return ip.removeprefix(IPV4_MAPPED)
