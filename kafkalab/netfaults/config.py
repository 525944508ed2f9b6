"""What one proxy process serves: its listen ports on loopback, each forwarding to one node's address.

The config travels as JSON (a file or an argv string), so the process that starts the proxy and the proxy
itself agree on one typed shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.netfaults.rules import ANY_SOURCE, CLIENTS, NetFaultsError, check_name

LISTEN_HOST = "127.0.0.1"
SOCKET_NAME = "netfaults.sock"
LOG_NAME = "netfaults.log"
# a unix socket's path is at most 107 bytes on Linux (103 on macOS): a deep dir cannot hold the control socket
MAX_SOCKET_PATH = 100


@dataclass(frozen=True)
class PortSpec:
    """``listen`` on 127.0.0.1 forwards to ``upstream_host:upstream_port``, which is node ``target``."""

    listen: int
    target: str
    upstream_port: int
    upstream_host: str = LISTEN_HOST

    def __post_init__(self) -> None:
        for name, port in (("listen", self.listen), ("upstream_port", self.upstream_port)):
            if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
                raise NetFaultsError(f"a proxy port's {name} must be 1..65535, not {port!r}")
        check_name(self.target, "a proxy port's target")
        if self.target in (CLIENTS, ANY_SOURCE):
            raise NetFaultsError(f"{self.target!r} is reserved for sources: name the target node otherwise")
        if (self.upstream_host, self.upstream_port) == (LISTEN_HOST, self.listen):
            raise NetFaultsError(f"proxy port {self.listen} forwards to itself: give the node's own port")


@dataclass(frozen=True)
class ProxyConfig:
    """Every port of one proxy process, the dir of its control socket and log, and the pid it dies with."""

    control_dir: Path
    ports: tuple[PortSpec, ...]
    parent_pid: int | None = None  # None: the process that started the proxy
    nodes: dict[str, int] = field(default_factory=dict)  # node name -> pid, known from the start

    def __post_init__(self) -> None:
        if not self.ports:
            raise NetFaultsError("a proxy needs at least one port to listen on")
        listens = [p.listen for p in self.ports]
        clash = sorted({p for p in listens if listens.count(p) > 1})
        if clash:
            raise NetFaultsError(f"listen port {clash[0]} is given twice: each proxy port forwards to one node")
        if len(str(self.socket_path)) > MAX_SOCKET_PATH:
            raise NetFaultsError(f"control dir {self.control_dir} is too deep for a unix socket: use a shorter path")

    @property
    def socket_path(self) -> Path:
        return self.control_dir / SOCKET_NAME

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.target for p in self.ports))

    def to_json(self) -> dict[str, Any]:
        return {"control_dir": str(self.control_dir), "parent_pid": self.parent_pid, "nodes": self.nodes,
                "ports": [{"listen": p.listen, "target": p.target, "upstream_host": p.upstream_host,
                           "upstream_port": p.upstream_port} for p in self.ports]}

    @classmethod
    def from_json(cls, data: object) -> ProxyConfig:
        if not isinstance(data, dict):
            raise NetFaultsError(f"a proxy config must be a JSON object, not {data!r}")
        ports = data.get("ports")
        if not isinstance(ports, list) or not all(isinstance(p, dict) for p in ports):
            raise NetFaultsError("a proxy config's ports must be a list of {listen, target, upstream_port} objects")
        try:
            specs = tuple(PortSpec(p["listen"], p["target"], p["upstream_port"], p.get("upstream_host", LISTEN_HOST))
                          for p in ports)
        except KeyError as exc:
            raise NetFaultsError(f"a proxy port lacks {exc.args[0]!r}: give listen, target and upstream_port") from None
        nodes = data.get("nodes") or {}
        if not isinstance(nodes, dict) or not all(isinstance(v, int) for v in nodes.values()):
            raise NetFaultsError("a proxy config's nodes must map node names to pids")
        parent = data.get("parent_pid")
        if parent is not None and not isinstance(parent, int):
            raise NetFaultsError(f"a proxy config's parent_pid must be a pid, not {parent!r}")
        control_dir = data.get("control_dir")
        if not isinstance(control_dir, str) or not control_dir:
            raise NetFaultsError("a proxy config needs control_dir: the dir for its control socket and log")
        return cls(Path(control_dir), specs, parent, dict(nodes))

    @classmethod
    def parse(cls, text: str) -> ProxyConfig:
        """From JSON text, or from ``@FILE`` holding it."""
        if text.startswith("@"):
            try:
                text = Path(text[1:]).read_text(encoding="utf-8")
            except OSError as exc:
                raise NetFaultsError(f"cannot read the proxy config {text[1:]}: {exc.strerror}") from None
        try:
            return cls.from_json(json.loads(text))
        except json.JSONDecodeError as exc:
            raise NetFaultsError(f"the proxy config is not JSON ({exc.msg}, line {exc.lineno} col {exc.colno})") \
                from None
