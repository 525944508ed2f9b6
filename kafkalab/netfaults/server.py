"""The proxy process's main: listeners, the control socket (JSON lines), the parent watch, SIGTERM.

Requests, one JSON object a line, each answered by one line ``{"ok": true, ...}`` or
``{"ok": false, "error": "one line"}``:

- ``{"op": "apply", "rule": {...}}`` (see :func:`kafkalab.netfaults.rules.rule_from_json`)
- ``{"op": "heal", "source": NAME?, "target": NAME?}`` (both left out: every rule)
- ``{"op": "status"}``
- ``{"op": "register", "node": NAME, "pid": PID, "kind": "node"|"client"}`` (kind left out: a node) /
  ``{"op": "forget", "node": NAME}``
- ``{"op": "down", "target": NAME}`` / ``{"op": "up", "target": NAME}``
- ``{"op": "stop"}``
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from typing import Any

import psutil

from kafkalab.netfaults.config import ProxyConfig
from kafkalab.netfaults.engine import Proxy
from kafkalab.netfaults.rules import Flow, Link, NetFaultsError, check_name, enum_value, rule_from_json, rule_to_json
from kafkalab.netfaults.sources import SourceKind

PARENT_POLL_S = 0.5  # how often the parent's pid is looked at (a timer this slow costs no measurable CPU)


def status_json(proxy: Proxy) -> dict[str, Any]:
    rules = proxy.book.rules()
    links = sorted({*proxy.link_stats, *(r.link for r in rules)}, key=lambda link: (link.target, link.source))
    rows = []
    for link in links:
        stats = proxy.link_stats.get(link)
        conns = [c for c in proxy.connections if Link(c.source, c.port.target) == link]

        def flow(f: Flow, stats_: Any = stats, conns_: list[Any] = conns) -> dict[str, int]:
            pipes = [c.pipes[0 if f is Flow.REQUESTS else 1] for c in conns_]
            return {"forwarded": stats_.forwarded[f] if stats_ else 0, "dropped": stats_.dropped[f] if stats_ else 0,
                    "held": sum(p.held for p in pipes), "delayed": sum(p.delayed_bytes for p in pipes)}

        rows.append({
            "source": link.source, "target": link.target,
            "rules": [rule_to_json(r) for r in rules if r.link == link],
            "connections_open": stats.connections_open if stats else 0,
            "connections_total": stats.connections_total if stats else 0,
            "connections_refused": stats.connections_refused if stats else 0,
            "connections_reset": stats.connections_reset if stats else 0,
            "upstream_failures": stats.upstream_failures if stats else 0,
            "requests": flow(Flow.REQUESTS), "replies": flow(Flow.REPLIES),
        })
    targets = [{"name": t, "down": t in proxy.down,
                "listen_ports": [p.listen for p in proxy.config.ports if p.target == t]} for t in proxy.config.targets]
    return {"pid": os.getpid(), "targets": targets, "nodes": proxy.sources.of_kind(SourceKind.NODE),
            "clients": proxy.sources.of_kind(SourceKind.CLIENT), "links": rows}


def optional_name(request: dict[str, Any], key: str) -> str | None:
    value = request.get(key)
    return None if value is None else check_name(value, key)


class Server:
    """One proxy process: serves until SIGTERM, a ``stop`` request, or its parent's death."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.stopped = asyncio.Event()
        self.proxy = Proxy(config)

    async def answer(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            raise NetFaultsError(f"a request must be a JSON object, not {request!r}")
        op = request.get("op")
        proxy = self.proxy
        if op == "apply":
            rule = rule_from_json(request.get("rule"))
            proxy.apply(rule)
            return {"rule": rule_to_json(rule)}
        if op == "heal":
            healed = proxy.heal(optional_name(request, "source"), optional_name(request, "target"))
            return {"healed": [rule_to_json(r) for r in healed]}
        if op == "status":
            return {"status": status_json(proxy)}
        if op == "register":
            pid = request.get("pid")
            if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
                raise NetFaultsError(f"register needs a pid, not {pid!r}")
            kind = enum_value(SourceKind, request.get("kind", SourceKind.NODE.value), "register's kind")
            proxy.register(check_name(request.get("node"), "register's node"), pid, kind)
            return {}
        if op == "forget":
            proxy.sources.forget(check_name(request.get("node"), "forget's node"))
            return {}
        if op in ("down", "up"):
            await proxy.set_down(check_name(request.get("target"), f"{op}'s target"), op == "down")
            return {}
        if op == "stop":
            self.stopped.set()
            return {}
        raise NetFaultsError(f"unknown op {op!r}: apply, heal, status, register, forget, down, up or stop")

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    reply = {"ok": True, **await self.answer(json.loads(line))}
                except json.JSONDecodeError as exc:
                    reply = {"ok": False, "error": f"a request must be one JSON line ({exc.msg})"}
                except NetFaultsError as exc:
                    reply = {"ok": False, "error": str(exc)}
                writer.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def watch_parent(self) -> None:
        parent = self.config.parent_pid
        born_of = os.getppid()
        while True:
            await asyncio.sleep(PARENT_POLL_S)
            # the parent's death re-parents this process (getppid changes), even after a SIGKILL
            gone = os.getppid() != born_of if parent in (None, born_of) else not psutil.pid_exists(parent or 0)
            if gone:
                self.stopped.set()
                return

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.stopped.set)
        for sig in (signal.SIGINT, signal.SIGHUP):
            # a terminal's Ctrl-C reaches the whole group: the parent stops the proxy in order
            loop.add_signal_handler(sig, lambda: None)
        await self.proxy.start()
        path = self.config.socket_path
        path.unlink(missing_ok=True)
        control = await asyncio.start_unix_server(self.control, path=str(path))
        watch = asyncio.create_task(self.watch_parent())
        try:
            await self.stopped.wait()
        finally:
            watch.cancel()
            control.close()
            path.unlink(missing_ok=True)
            await self.proxy.close()
            with contextlib.suppress(asyncio.CancelledError):
                await watch


def main(config: ProxyConfig) -> None:
    asyncio.run(Server(config).serve())
