"""Real TCP peers for the network-fault proxy's tests, each run as its own process so the proxy identifies its
source from a real socket owner: ``server PORT`` and ``client PORT``.

Both speak JSON lines on stdout (and the client takes commands on stdin), so a test sees what reached each
end from outside the proxy's own bookkeeping. The wire protocol is lines: the server answers ``echo:LINE``
for a short line and ``len:N`` for a long one (a bulk transfer).
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import sys
import threading
import time
from typing import Any

SHORT = 100  # a line at least this long is answered with its length, not echoed

_out = threading.Lock()


def say(item: dict[str, Any]) -> None:
    with _out:
        sys.stdout.write(json.dumps(item) + "\n")
        sys.stdout.flush()


def watch_parent() -> None:
    """Die with the test process, whatever happens to it."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(3)


def serve(port: int) -> None:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            for raw in self.rfile:
                line = raw.rstrip(b"\n").decode(errors="replace")
                if not line.isprintable():  # no peer of the test: a client elsewhere dialling a reused port
                    return  # (once, a Kafka client's ApiVersions request, a test's broker port reused here)
                say({"got": line if len(line) < SHORT else f"<{len(line)} bytes>", "at": time.monotonic()})
                reply = f"echo:{line}" if len(line) < SHORT else f"len:{len(line)}"
                try:
                    self.wfile.write(reply.encode() + b"\n")
                except OSError:
                    return

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer.daemon_threads = True
    with socketserver.ThreadingTCPServer(("127.0.0.1", port), Handler) as server:
        say({"listening": port})
        server.serve_forever()


def error_name(exc: BaseException) -> str:
    return type(exc).__name__


class Client:
    """One connection at a time to 127.0.0.1:port, driven by commands."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.buf = b""

    def connect(self) -> dict[str, Any]:
        self.close()
        try:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        except OSError as exc:
            return {"error": error_name(exc)}
        self.buf = b""
        return {"ok": True}

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def send(self, text: str, wait: float) -> dict[str, Any]:
        """Send one line, then wait up to ``wait`` s for one line back; the round trip in ms."""
        if self.sock is None:
            return {"error": "NotConnected"}
        start = time.monotonic()
        try:
            self.sock.sendall(text.encode() + b"\n")
        except OSError as exc:
            return {"error": error_name(exc)}
        return self.recv(wait, start)

    def recv(self, wait: float, start: float | None = None) -> dict[str, Any]:
        if self.sock is None:
            return {"error": "NotConnected"}
        start = time.monotonic() if start is None else start
        deadline = time.monotonic() + wait
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"timeout": True}
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return {"timeout": True}
            except OSError as exc:
                return {"error": error_name(exc)}
            if not chunk:
                return {"error": "EOF"}
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return {"reply": line.decode(), "ms": (time.monotonic() - start) * 1000}


def client(port: int) -> None:
    peer = Client(port)
    say({"pid": os.getpid()})
    for raw in sys.stdin:
        cmd = json.loads(raw)
        op = cmd["op"]
        if op == "connect":
            say(peer.connect())
        elif op == "send":
            say(peer.send(cmd["text"], cmd.get("wait", 2.0)))
        elif op == "recv":
            say(peer.recv(cmd.get("wait", 2.0)))
        elif op == "close":
            peer.close()
            say({"ok": True})


if __name__ == "__main__":
    threading.Thread(target=watch_parent, daemon=True).start()
    role, port_text = sys.argv[1], sys.argv[2]
    serve(int(port_text)) if role == "server" else client(int(port_text))
