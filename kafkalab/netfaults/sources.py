"""Which node opened a connection: the process that owns the connecting socket, looked up among known pids.

On loopback both ends of a TCP connection live on this machine, so the peer's (host, port) is a socket some
local process owns. Only the pids the caller registered are searched (their own sockets, no privilege
needed, unlike a machine-wide ``psutil.net_connections`` on macOS); a socket none of them owns is a client's.
A registered pid is a node (a broker, ZooKeeper, a controller) or a named client (the run's ``producer``, a
``consumer-K``): a named client's connections obey its own rules, then every client's (``clients``).
On Linux the socket's inode is read from ``/proc/net/tcp{,6}`` once and looked for among the nodes' open
files; elsewhere psutil lists each node's connections.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import sys
import threading
from collections.abc import Iterable
from enum import Enum
from pathlib import Path

import psutil

from kafkalab.netfaults.rules import CLIENTS

Address = tuple[str, int]
IPV4_MAPPED = "::ffff:"  # Java's sockets are IPv6 by default, IPv4 peers mapped into it
PROC_TCP = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))  # Linux's socket tables (this network namespace)


class SourceKind(Enum):
    """What a registered source is."""

    NODE = "node"  # one of the cluster's nodes: it is also a target, and never a client
    CLIENT = "client"  # a client process known by name: its own rules first, then every client's


class SourceTable:
    """Source name <-> pid, updated from the control socket while the proxy's threads look sources up."""

    def __init__(self, nodes: dict[str, int] | None = None) -> None:
        self._lock = threading.Lock()
        self._pids: dict[str, int] = dict(nodes or {})
        self._clients: set[str] = set()

    def register(self, node: str, pid: int, kind: SourceKind = SourceKind.NODE) -> None:
        """``node`` is now process ``pid`` (a restarted node, or a client started again, replaces its old pid)."""
        with self._lock:
            self._pids[node] = pid
            if kind is SourceKind.CLIENT:
                self._clients.add(node)
            else:
                self._clients.discard(node)

    def forget(self, node: str) -> None:
        with self._lock:
            self._pids.pop(node, None)
            self._clients.discard(node)

    def snapshot(self) -> dict[str, int]:
        """Every registered source, nodes and named clients."""
        with self._lock:
            return dict(self._pids)

    def of_kind(self, kind: SourceKind) -> dict[str, int]:
        with self._lock:
            return {n: p for n, p in self._pids.items() if (n in self._clients) == (kind is SourceKind.CLIENT)}

    def is_client(self, name: str) -> bool:
        """A named client (``producer``, ``consumer-1``): not ``clients`` itself, never a node."""
        with self._lock:
            return name in self._clients

    def identify(self, peer: Address, local: Address) -> str:
        """The node whose process owns the socket bound to ``peer`` and connected to ``local``; else CLIENTS.
        A named client's descendants are it too: a foreign command's ``java`` runs under its shell (or ``mvn``)."""
        with self._lock:
            pairs = list(self._pids.items())
            clients = set(self._clients)
        candidates = [*pairs, *((name, child) for name, pid in pairs if name in clients for child in descendants(pid))]
        return owner(candidates, peer, local)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (none when it has ended)."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def sockets_visible(pid: int) -> bool:
    """Whether this user can look into ``pid``'s sockets, as :func:`owner` does (a container's JVM run by another
    user, or in another namespace, cannot be looked into)."""
    try:
        if PROC_TCP[0].exists():
            with os.scandir(f"/proc/{pid}/fd") as fds:
                next(fds, None)
        else:
            psutil.Process(pid).net_connections(kind="tcp")
    except (OSError, psutil.Error):
        return False
    return True


def owner(candidates: Iterable[tuple[str, int]], peer: Address, local: Address) -> str:
    pairs = list(candidates)
    if PROC_TCP[0].exists():
        return owner_from_proc(pairs, peer, local)
    for node, pid in pairs:
        try:
            conns = psutil.Process(pid).net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue  # a node that just died or restarted: its old pid owns nothing any more
        for conn in conns:
            if conn.raddr and (plain(conn.laddr.ip), conn.laddr.port) == peer \
                    and (plain(conn.raddr.ip), conn.raddr.port) == local:
                return node
    return CLIENTS


def owner_from_proc(candidates: list[tuple[str, int]], peer: Address, local: Address) -> str:
    """Linux: the socket's inode from /proc/net/tcp{,6} (read once), then the first candidate holding it among
    its open files. psutil's per-process lookup reads every table once per candidate and costs 25-60 ms of
    the proxy's CPU per new connection with four JVMs registered; this costs a few."""
    inode = socket_inode(peer, local)
    if inode is None:
        return CLIENTS  # gone already (or not a TCP socket on this host): nobody's
    wanted = f"socket:[{inode}]"
    for node, pid in candidates:
        fd_dir = f"/proc/{pid}/fd"
        try:
            with os.scandir(fd_dir) as fds:
                for fd in fds:
                    with contextlib.suppress(OSError):  # closed meanwhile
                        if os.readlink(fd.path) == wanted:
                            return node
        except OSError:
            continue  # a node that just died or restarted: its old pid owns nothing any more
    return CLIENTS


def proc_hex(ip: str) -> list[str]:
    """How /proc/net/tcp (IPv4) and tcp6 (IPv4-mapped, as a JVM's sockets are) print ``ip``: 32-bit words in
    host byte order."""
    forms = [ipaddress.IPv4Address(ip).packed, ipaddress.IPv6Address(f"{IPV4_MAPPED}{ip}").packed]
    return ["".join(f"{int.from_bytes(raw[i:i + 4], sys.byteorder):08X}" for i in range(0, len(raw), 4))
            for raw in forms]


def socket_inode(peer: Address, local: Address) -> str | None:
    """The inode of the socket bound to ``peer`` and connected to ``local`` (the connecting end)."""
    wanted = {(f"{a}:{peer[1]:04X}", f"{b}:{local[1]:04X}") for a, b in zip(proc_hex(peer[0]), proc_hex(local[0]),
                                                                           strict=True)}
    for table in PROC_TCP:
        with contextlib.suppress(OSError), table.open() as fh:
            next(fh, None)  # the header
            for line in fh:
                fields = line.split()
                if len(fields) > 9 and (fields[1], fields[2]) in wanted and fields[9] != "0":
                    return fields[9]
    return None


def plain(ip: str) -> str:
    """An IPv4 address as a dual-stack socket shows it (a JVM's: ``::ffff:127.0.0.1``) -> ``127.0.0.1``."""
    return ip.removeprefix(IPV4_MAPPED)
