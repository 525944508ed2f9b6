"""Start a proxy process and drive it: :class:`NetFaultsProcess` (spawn, wait ready, stop) and
:class:`NetFaultsClient` (the control socket's requests as typed methods)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from kafkalab.child_python import python_module
from kafkalab.netfaults.config import LOG_NAME, ProxyConfig
from kafkalab.netfaults.rules import NetFaultsError, Rule, rule_from_json, rule_to_json
from kafkalab.netfaults.sources import SourceKind
from kafkalab.netfaults.status import ProxyStatus

REQUEST_TIMEOUT_S = 5.0
READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0


class NetFaultsClient:
    """Requests to a running proxy through its control socket: one connection per request."""

    def __init__(self, socket_path: Path, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.socket_path = socket_path
        self.timeout_s = timeout_s

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout_s)
                sock.connect(str(self.socket_path))
                sock.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
                with sock.makefile("rb") as answers:
                    line = answers.readline()
        except OSError as exc:
            raise NetFaultsError(f"no network-fault proxy answers on {self.socket_path} ({exc.strerror or exc}): "
                                 "is the cluster up with its proxies?") from None
        if not line:
            raise NetFaultsError(f"the network-fault proxy on {self.socket_path} closed without an answer")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise NetFaultsError(str(reply.get("error", "the proxy refused the request")))
        return reply

    def apply(self, rule: Rule) -> None:
        self.request("apply", rule=rule_to_json(rule))

    def heal(self, source: str | None = None, target: str | None = None) -> list[Rule]:
        """Heal the links from ``source`` to ``target`` (either left out: any); returns the rules removed."""
        fields = {k: v for k, v in (("source", source), ("target", target)) if v is not None}
        return [rule_from_json(r) for r in self.request("heal", **fields)["healed"]]

    def status(self) -> ProxyStatus:
        return ProxyStatus.from_json(self.request("status")["status"])

    def register(self, node: str, pid: int, kind: SourceKind = SourceKind.NODE) -> None:
        """Connections from process ``pid`` are now ``node``'s (call again when the node restarts); a
        ``SourceKind.CLIENT`` is a client known by name, whose connections obey the ``clients`` rules too."""
        self.request("register", node=node, pid=pid, kind=kind.value)

    def forget(self, node: str) -> None:
        self.request("forget", node=node)

    def down(self, target: str) -> None:
        """``target``'s ports refuse new connections and its open ones are reset, until :meth:`up`."""
        self.request("down", target=target)

    def up(self, target: str) -> None:
        self.request("up", target=target)


class NetFaultsProcess:
    """One proxy process: spawned in a session of its own, writing only to its log in the control dir."""

    def __init__(self, config: ProxyConfig, popen: subprocess.Popen[bytes]) -> None:
        self.config = config
        self.popen = popen
        self.client = NetFaultsClient(config.socket_path)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def log_path(self) -> Path:
        return self.config.control_dir / LOG_NAME

    @classmethod
    def start(cls, config: ProxyConfig, ready_timeout_s: float = READY_TIMEOUT_S) -> NetFaultsProcess:
        """Spawn the proxy and return once it answers; a NetFaultsError with its own words if it cannot start."""
        config = replace(config, parent_pid=config.parent_pid or os.getpid())
        config.control_dir.mkdir(parents=True, exist_ok=True)
        config.socket_path.unlink(missing_ok=True)
        with (config.control_dir / LOG_NAME).open("ab") as log:
            popen = subprocess.Popen(
                [*python_module("kafkalab.netfaults"), "--config", json.dumps(config.to_json())],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        proc = cls(config, popen)
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if popen.poll() is not None:
                raise NetFaultsError(proc.last_words() or f"the network-fault proxy exited ({popen.returncode})")
            if config.socket_path.exists():
                try:
                    proc.client.status()
                    return proc
                except NetFaultsError:
                    pass
            if time.monotonic() > deadline:
                proc.stop()
                raise NetFaultsError(f"the network-fault proxy did not answer within {ready_timeout_s:g} s: "
                                     f"see {proc.log_path}")
            time.sleep(0.02)

    def last_words(self) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1].removeprefix("netfaults: ") if lines else ""

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM, then SIGKILL if it lingers; returns the exit status. Leaves no socket file behind."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.config.socket_path.unlink(missing_ok=True)
        return self.popen.returncode
