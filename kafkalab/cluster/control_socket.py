"""Drive a running cluster from another process: a JSON-lines protocol on a unix socket in the state dir.

The process that owns the cluster (`kafkalab cluster up`, the console, a lab run) serves the socket, so
`kafkalab broker kill 2` in a second terminal acts on the same node objects the owner watches.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from kafkalab.cluster.cluster import Cluster
from kafkalab.cluster.netwiring import ClusterNet, NetRequest
from kafkalab.cluster.node import NodeAction
from kafkalab.errors import KafkalabError

SOCKET_NAME = "control.sock"
NODE_ACTIONS = tuple(a.value for a in NodeAction)
SPEC_FILE = "cluster.json"
NET_STATUS_OP = "net_status"  # the proxy's status as data (`net` with status answers it in lines, for people)


def socket_path(state_dir: Path) -> Path:
    return state_dir / SOCKET_NAME


def write_cluster_file(cluster: Cluster) -> None:
    """Facts other commands read without asking the owner: bootstrap, ports, brokers."""
    spec = cluster.spec
    data = {
        "state_dir": str(spec.state_dir), "bootstrap": spec.bootstrap, "brokers": spec.brokers,
        "zk_port": spec.zk_port, "broker_ports": spec.broker_ports, "backend": cluster.backend.name,
        "owner_pid": os.getpid(), "mode": spec.mode, "controllers": spec.controllers, "combined": spec.combined,
        "controller_ports": spec.controller_ports if spec.kraft else [],
        "net_proxies": spec.net_proxies, "client_bootstrap": spec.client_bootstrap,
        # the proxies' ports, so an attached console's spec (and its workload's bootstrap) matches the owner's
        "net_ports": [list(n.ports()) for n in spec.net_ports], "zk_proxy_port": spec.zk_proxy_port,
        "controller_net_ports": [list(n.ports()) for n in spec.controller_net_ports],
    }
    (spec.state_dir / SPEC_FILE).write_text(json.dumps(data, indent=2))


def read_cluster_file(state_dir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((state_dir / SPEC_FILE).read_text()))
    except (OSError, json.JSONDecodeError) as exc:
        raise KafkalabError(f"no cluster in {state_dir}: start one with `kafkalab cluster up --detach`") from exc


# what a request from another terminal does to a node (its name) or to the network (NETWORK) runs inside it
Attribution = Callable[[str, NodeAction | None], AbstractContextManager[object]]
NETWORK = "network"  # the subject of a network change (the proxy's), beside the nodes by name


class ControlServer:
    """Serves one cluster's controls until :meth:`close`. ``on_down`` runs when a client asks for `down`;
    ``by_hand`` wraps each node action and network change asked here (a lab's run records them as a person's)."""

    def __init__(self, cluster: Cluster, on_down: threading.Event,
                 by_hand: Attribution = lambda _subject, _action: nullcontext()) -> None:
        self.cluster = cluster
        self.on_down = on_down
        self.by_hand = by_hand
        self.path = socket_path(cluster.state_dir)
        self.path.unlink(missing_ok=True)
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                line = self.rfile.readline()
                try:
                    reply = outer.dispatch(json.loads(line))
                except KafkalabError as exc:
                    reply = {"ok": False, "error": str(exc)}
                except Exception as exc:
                    reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                self.wfile.write((json.dumps(reply) + "\n").encode())

        self._server = socketserver.ThreadingUnixStreamServer(str(self.path), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="kafkalab-control", daemon=True)
        self._thread.start()

    def dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "status":
            return {"ok": True, "nodes": [i.as_dict() for i in self.cluster.infos()]}
        if op == "down":
            self.on_down.set()
            return {"ok": True}
        if op in NODE_ACTIONS:
            node = self.cluster.node(request.get("node", ""))
            with self.by_hand(node.name, NodeAction(op)):
                NodeAction(op).apply(node)
            return {"ok": True, "node": node.info().as_dict()}
        if op == "quorum":  # KRaft: DescribeQuorum through the owner's helper JVM
            return {"ok": True, "quorum": self.cluster.quorum(float(request.get("timeout_s", 2.0))).as_dict()}
        if op == "net":  # `kafkalab net ...`: a network fault, through the cluster's proxy
            with self.by_hand(NETWORK, None):
                return {"ok": True, **self._net().handle(NetRequest.from_json(request))}
        if op == NET_STATUS_OP:  # an attached console's link marks: the proxy's status as it answers it
            net = self._net()
            return {"ok": True, "pid": net.pid, "status": net.client().request("status")["status"]}
        if op == "tail":
            node = self.cluster.node(request.get("node", ""))
            return {"ok": True, "lines": node.log_tail(int(request.get("lines", 50)))}
        raise KafkalabError(f"unknown control operation {op!r}")

    def _net(self) -> ClusterNet:
        if self.cluster.net is None:
            raise KafkalabError(f"the cluster in {self.cluster.state_dir} runs without network-fault proxies "
                                "(started with --no-net-proxies, or on a Docker engine the proxy cannot see into): "
                                "start it again without that flag, or with --backend local")
        return self.cluster.net

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.path.unlink(missing_ok=True)


def request(state_dir: Path, op: str, timeout: float = 10.0, **fields: Any) -> dict[str, Any]:
    """Send one request to the cluster's owner; KafkalabError when nobody serves it or it refuses."""
    path = socket_path(state_dir)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.sendall((json.dumps({"op": op, **fields}) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError as exc:
        raise KafkalabError(
            f"no kafkalab owns a cluster in {state_dir} ({exc.strerror or exc}): start one with "
            "`kafkalab cluster up --detach`"
        ) from None
    reply = dict(json.loads(data or b'{"ok": false, "error": "empty reply"}'))
    if not reply.get("ok"):
        raise KafkalabError(str(reply.get("error")))
    return reply
