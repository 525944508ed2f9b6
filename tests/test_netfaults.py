"""The network-fault proxy on real TCP: a server and clients in their own processes (tests/netfaults_peers.py),
the proxy in its own; each rule checked by what reaches the server and the clients, not by the proxy's
counters. Every process a test starts is ended by pid when the test ends, passed or failed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from kafkalab.cluster.ports import free_ports
from kafkalab.netfaults import (
    ANY_SOURCE,
    CLIENTS,
    Cut,
    Delay,
    Direction,
    Drop,
    Flow,
    Hold,
    Limit,
    Link,
    NetFaultsError,
    NetFaultsProcess,
    PortSpec,
    ProxyConfig,
)
from kafkalab.netfaults.sources import SourceKind

PEERS = Path(__file__).resolve().parent / "netfaults_peers.py"
TARGET = "server"


class Peer:
    """A peer process and the JSON lines it says, read by a thread so a silent peer never blocks a test."""

    def __init__(self, role: str, port: int, under_shell: bool = False) -> None:
        argv = [sys.executable, str(PEERS), role, str(port)]
        if under_shell:  # "; true": the shell stays the parent (no exec), as a foreign command's shell does
            argv = ["/bin/sh", "-c", " ".join(shlex.quote(a) for a in argv) + "; true"]
        self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(json.loads(line))

    @property
    def pid(self) -> int:
        return self.popen.pid

    def next(self, timeout: float = 5.0) -> dict[str, Any]:
        return self.lines.get(timeout=timeout)

    def ask(self, op: str, timeout: float = 10.0, **fields: Any) -> dict[str, Any]:
        assert self.popen.stdin is not None
        self.popen.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.popen.stdin.flush()
        return self.next(timeout)

    def got(self, wait: float) -> list[str]:
        """Every line the server received within ``wait`` s (nothing more arriving meanwhile ends it early)."""
        seen = []
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            try:
                seen.append(self.next(left)["got"])
            except queue.Empty:
                break
        return seen

    def end(self) -> None:
        with contextlib.suppress(psutil.Error):  # a shell's child first: killing the shell would orphan it
            for child in psutil.Process(self.popen.pid).children(recursive=True):
                child.kill()
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(5)


@dataclass
class Rig:
    """A server behind the proxy: ``proxy_port`` forwards to the server (node ``server``)."""

    server: Peer
    proxy: NetFaultsProcess
    proxy_port: int
    peers: list[Peer]

    def client(self, node: str | None = None, kind: SourceKind = SourceKind.NODE, under_shell: bool = False) -> Peer:
        """A client process, connected through the proxy; registered as ``node`` (of ``kind``) when named: by its
        shell's pid when ``under_shell`` (the process that connects is the shell's child)."""
        peer = Peer("client", self.proxy_port, under_shell)
        self.peers.append(peer)
        pid = peer.next()["pid"]
        assert (pid != peer.pid) == under_shell
        if node is not None:
            self.proxy.client.register(node, peer.pid if under_shell else pid, kind)
        assert peer.ask("connect") == {"ok": True}
        return peer


@pytest.fixture
def control_dir() -> Iterator[Path]:
    # short: a unix socket's path must fit in ~100 bytes, which pytest's tmp_path may not
    path = Path(tempfile.mkdtemp(prefix="nf-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def rig(control_dir: Path) -> Iterator[Rig]:
    server_port, proxy_port = free_ports(2)
    peers: list[Peer] = []
    proxy: NetFaultsProcess | None = None
    try:
        server = Peer("server", server_port)
        peers.append(server)
        assert server.next() == {"listening": server_port}
        proxy = NetFaultsProcess.start(ProxyConfig(control_dir, (PortSpec(proxy_port, TARGET, server_port),)))
        yield Rig(server, proxy, proxy_port, peers)
    finally:
        for peer in peers:
            peer.end()
        if proxy is not None:
            proxy.stop()
        assert proxy is None or not psutil.pid_exists(proxy.pid) or psutil.Process(proxy.pid).status() == "zombie"


def link(source: str) -> Link:
    return Link(source, TARGET)


# ---- the rules, as the two ends see them ----------------------------------------------------------------
def test_passthrough_and_sources_named(rig: Rig) -> None:
    named = rig.client("producer")
    anonymous = rig.client()
    assert named.ask("send", text="a")["reply"] == "echo:a"
    assert anonymous.ask("send", text="b")["reply"] == "echo:b"
    assert sorted(rig.server.got(0.3)) == ["a", "b"]
    status = rig.proxy.client.status()
    for source in ("producer", CLIENTS):
        row = status.link(source, TARGET)
        assert row is not None and row.connections_open == 1
        assert row.requests.forwarded == 2 and row.replies.forwarded == len("echo:a\n")


def refused(peer: Peer) -> bool:
    """A new connection from ``peer`` is reset by the proxy. The reset comes as the connection is accepted, so
    the peer sees it either as its connect ends (when the reset arrives first: a busy machine) or on its first
    request; the request must not be answered either way."""
    if "error" in peer.ask("connect"):
        return True
    return "error" in peer.ask("send", text="x", wait=1.0)


def test_cut_one_source_keeps_the_other(rig: Rig) -> None:
    cut, kept = rig.client("broker-1"), rig.client("broker-2")
    rig.proxy.client.apply(Cut(link("broker-1")))
    assert cut.ask("send", text="from-1")["error"] in ("ConnectionResetError", "EOF", "BrokenPipeError")
    assert kept.ask("send", text="from-2")["reply"] == "echo:from-2"
    assert rig.server.got(0.3) == ["from-2"]
    # new connections from the cut source are reset at once; the other source still connects
    assert refused(cut)
    assert kept.ask("connect") == {"ok": True} and kept.ask("send", text="x")["reply"] == "echo:x"
    row = rig.proxy.client.status().link("broker-1", TARGET)
    assert row is not None and row.connections_reset == 1 and row.connections_refused >= 1
    rig.proxy.client.heal(source="broker-1")
    assert cut.ask("connect") == {"ok": True} and cut.ask("send", text="healed")["reply"] == "echo:healed"


def test_a_named_clients_children_are_that_client(rig: Rig) -> None:
    """A foreign command's java runs under its shell: registered by the shell's pid, its connections are its."""
    foreign = rig.client("producer", SourceKind.CLIENT, under_shell=True)
    other = rig.client()
    rig.proxy.client.apply(Cut(link("producer")))
    assert foreign.ask("send", text="held")["error"] in ("ConnectionResetError", "EOF", "BrokenPipeError")
    assert other.ask("send", text="kept")["reply"] == "echo:kept"
    assert rig.server.got(0.3) == ["kept"]


def test_drop_replies_the_request_arrives_the_answer_never(rig: Rig) -> None:
    peer = rig.client("producer")
    rig.proxy.client.apply(Drop(link("producer"), Direction.REPLIES))
    assert peer.ask("send", text="req-1", wait=0.8) == {"timeout": True}
    assert rig.server.got(0.3) == ["req-1"]  # the server saw it and answered; the answer was thrown away
    assert [r.kind.value for r in rig.proxy.client.heal()] == ["drop"]
    reply = peer.ask("send", text="req-2")
    assert reply["reply"] == "echo:req-2"  # the dropped answer is gone for good, not delivered late
    assert peer.ask("recv", wait=0.3) == {"timeout": True}


def test_drop_requests_nothing_arrives(rig: Rig) -> None:
    peer = rig.client("producer")
    rig.proxy.client.apply(Drop(link("producer"), Direction.REQUESTS))
    assert peer.ask("send", text="lost", wait=0.8) == {"timeout": True}
    assert rig.server.got(0.3) == []
    status = rig.proxy.client.status().link("producer", TARGET)
    assert status is not None and status.requests.dropped == len("lost\n")


def test_hold_delivers_on_heal_in_order(rig: Rig) -> None:
    peer = rig.client("producer")
    rig.proxy.client.apply(Hold(link("producer"), Direction.REQUESTS))
    assert peer.ask("send", text="held-1", wait=0.5) == {"timeout": True}
    assert rig.server.got(0.3) == []
    row = rig.proxy.client.status().link("producer", TARGET)
    assert row is not None and row.requests.held == len("held-1\n")
    rig.proxy.client.heal()
    assert rig.server.got(1.0) == ["held-1"]
    assert peer.ask("recv")["reply"] == "echo:held-1"


def test_hold_replies_the_server_answers_the_client_waits(rig: Rig) -> None:
    peer = rig.client("producer")
    rig.proxy.client.apply(Hold(link("producer"), Direction.REPLIES))
    assert peer.ask("send", text="q", wait=0.5) == {"timeout": True}
    assert rig.server.got(0.3) == ["q"]
    rig.proxy.client.heal(target=TARGET)
    assert peer.ask("recv")["reply"] == "echo:q"


def test_delay_with_jitter(rig: Rig) -> None:
    peer = rig.client("producer")
    fast = peer.ask("send", text="fast")["ms"]
    rig.proxy.client.apply(Delay(link("producer"), Direction.REPLIES, ms=300, jitter_ms=50))
    slow = [peer.ask("send", text=f"slow-{i}")["ms"] for i in range(3)]
    assert fast < 100
    assert all(240 <= ms <= 800 for ms in slow), slow
    rig.proxy.client.heal()
    assert peer.ask("send", text="again")["ms"] < 100


def test_limit_paces_a_bulk_transfer(rig: Rig) -> None:
    peer = rig.client("producer")
    rig.proxy.client.apply(Limit(link("producer"), Direction.REQUESTS, bytes_per_s=100_000))
    answer = peer.ask("send", text="x" * 200_000, wait=10)
    assert answer["reply"] == "len:200000"
    assert 1500 <= answer["ms"] <= 4000, answer  # 200 kB at 100 kB/s: about 2 s (the first 100 ms goes at once)
    rig.proxy.client.heal()
    assert peer.ask("send", text="x" * 200_000, wait=10)["ms"] < 500


def test_a_stream_crossing_rules_arrives_whole_and_in_order(control_dir: Path) -> None:
    """Chunks go straight through while no rule applies and through the rules' queue while one does: a
    stream that crosses from one to the other and back (a delay and a limit applied, then healed, mid-stream)
    arrives byte for byte, its half-close forwarded after the last byte and the answer back after it."""
    sink_port, proxy_port = free_ports(2)
    listener = socket.create_server(("127.0.0.1", sink_port))
    payload = b"".join(i.to_bytes(4, "big") for i in range(750_000))  # 3 MB, any reordering shows

    def sink() -> None:
        conn, _ = listener.accept()
        with conn:
            digest, size = hashlib.sha256(), 0
            while chunk := conn.recv(1 << 16):
                digest.update(chunk)
                size += len(chunk)
            conn.sendall(f"{size} {digest.hexdigest()}".encode())

    thread = threading.Thread(target=sink, daemon=True)
    thread.start()
    proxy = NetFaultsProcess.start(ProxyConfig(control_dir, (PortSpec(proxy_port, "sink", sink_port),)))
    try:
        with socket.create_connection(("127.0.0.1", proxy_port)) as sock:
            third = len(payload) // 3
            sock.sendall(payload[:third])
            proxy.client.apply(Delay(Link(CLIENTS, "sink"), Direction.REQUESTS, ms=30))
            proxy.client.apply(Limit(Link(CLIENTS, "sink"), Direction.REQUESTS, bytes_per_s=4_000_000))
            sock.sendall(payload[third:2 * third])
            time.sleep(0.2)
            assert len(proxy.client.heal()) == 2
            sock.sendall(payload[2 * third:])
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(10)
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
        assert answer.decode() == f"{len(payload)} {hashlib.sha256(payload).hexdigest()}"
    finally:
        proxy.stop()
        listener.close()
    thread.join(5)


def test_any_source_rule_and_exact_rule_wins(rig: Rig) -> None:
    a, b = rig.client("broker-1"), rig.client("broker-2")
    rig.proxy.client.apply(Drop(Link(ANY_SOURCE, TARGET), Direction.REPLIES))
    rig.proxy.client.apply(Delay(link("broker-2"), Direction.REPLIES, ms=50))
    assert a.ask("send", text="a", wait=0.5) == {"timeout": True}
    # broker-2's own slot for delay does not unblock it: the any-source drop still fills the blocking slot
    assert b.ask("send", text="b", wait=0.5) == {"timeout": True}
    rig.proxy.client.apply(Hold(link("broker-2"), Direction.REQUESTS))
    rig.proxy.client.heal(source=ANY_SOURCE)
    assert a.ask("send", text="a2")["reply"] == "echo:a2"
    assert b.ask("send", text="b2", wait=0.5) == {"timeout": True}  # its own hold still holds requests
    assert rig.server.got(0.3) == ["a", "b", "a2"]


# ---- clients told apart by name ----------------------------------------------------------------------
def reached(peer: Peer, text: str) -> bool:
    """Whether ``text`` sent by ``peer`` came back echoed within half a second."""
    return peer.ask("send", text=text, wait=0.5).get("reply") == f"echo:{text}"


def test_a_named_client_s_rule_spares_the_other_client(rig: Rig) -> None:
    producer = rig.client("producer", SourceKind.CLIENT)
    consumer = rig.client("consumer-1", SourceKind.CLIENT)
    rig.proxy.client.apply(Drop(link("producer"), Direction.REQUESTS))
    assert not reached(producer, "p1") and reached(consumer, "c1")
    assert rig.server.got(0.3) == ["c1"]  # the producer's request never reached the server
    rig.proxy.client.apply(Cut(link("producer")))
    assert refused(producer)
    assert consumer.ask("connect") == {"ok": True} and reached(consumer, "c2")
    status = rig.proxy.client.status()
    assert status.clients.keys() == {"producer", "consumer-1"} and status.nodes == {}  # never taken for nodes
    row = status.link("producer", TARGET)
    assert row is not None and row.connections_refused >= 1 and status.link(CLIENTS, TARGET) is None


def test_a_clients_rule_acts_on_every_client_named_or_not(rig: Rig) -> None:
    producer = rig.client("producer", SourceKind.CLIENT)
    consumer = rig.client("consumer-1", SourceKind.CLIENT)
    anonymous = rig.client()
    node = rig.client("broker-1")
    rig.proxy.client.apply(Hold(link(CLIENTS), Direction.REQUESTS))
    for peer, text in ((producer, "p"), (consumer, "c"), (anonymous, "a")):
        assert not reached(peer, text)
    assert reached(node, "n")  # a node is no client: the hold is not its
    assert rig.server.got(0.3) == ["n"]
    # slot by slot, a named client's own rule first: its own drop replaces the hold (same slot), its delay does not
    rig.proxy.client.apply(Delay(link("consumer-1"), Direction.REPLIES, ms=50))
    rig.proxy.client.apply(Drop(link("producer"), Direction.REQUESTS))
    assert not reached(consumer, "c2")  # still held: its own rule is on another slot
    rig.proxy.client.heal(source=CLIENTS)
    assert sorted(rig.server.got(1.0)) == ["a", "c", "c2"]  # held, then delivered; the producer's were dropped
    assert anonymous.ask("recv")["reply"] == "echo:a"  # the answers to the held requests, late
    assert [consumer.ask("recv")["reply"] for _ in range(2)] == ["echo:c", "echo:c2"]
    assert not reached(producer, "p2") and reached(anonymous, "a2")
    rig.proxy.client.apply(Cut(link(CLIENTS)))
    for peer in (producer, consumer, anonymous):
        assert refused(peer)
    assert node.ask("connect") == {"ok": True} and reached(node, "n2")


def test_a_client_cannot_take_a_node_s_name(rig: Rig) -> None:
    with pytest.raises(NetFaultsError, match="a client cannot be registered as 'server'"):
        rig.proxy.client.register(TARGET, os.getpid(), SourceKind.CLIENT)
    with pytest.raises(NetFaultsError, match="a client cannot be registered as 'clients'"):
        rig.proxy.client.register(CLIENTS, os.getpid(), SourceKind.CLIENT)
    with pytest.raises(NetFaultsError, match="register's kind must be one of node, client, not 'boss'"):
        rig.proxy.client.request("register", node="producer", pid=os.getpid(), kind="boss")
    assert rig.proxy.client.status().clients == {}


# ---- a node down -------------------------------------------------------------------------------------
def test_down_target_refuses_and_resets(rig: Rig) -> None:
    peer = rig.client("producer")
    rig.proxy.client.down(TARGET)
    assert peer.ask("send", text="x", wait=1.0)["error"] in ("ConnectionResetError", "EOF", "BrokenPipeError")
    assert peer.ask("connect") == {"error": "ConnectionRefusedError"}  # refused by the kernel: nothing listens
    assert rig.proxy.client.status().targets[0].down
    rig.proxy.client.up(TARGET)
    assert peer.ask("connect") == {"ok": True}
    assert peer.ask("send", text="y")["reply"] == "echo:y"
    assert rig.server.got(0.3) == ["y"]


def test_source_follows_a_new_pid(rig: Rig) -> None:
    first = rig.client("broker-1")
    rig.proxy.client.apply(Cut(link("broker-1")))
    assert "error" in first.ask("send", text="x", wait=1.0)
    first.end()
    second = rig.client()  # the node restarted: a new process, not yet registered
    assert second.ask("send", text="unregistered")["reply"] == "echo:unregistered"
    rig.proxy.client.register("broker-1", second.pid)
    assert refused(second)


# ---- bad input ---------------------------------------------------------------------------------------
def test_bad_requests_are_one_line_and_change_nothing(rig: Rig) -> None:
    control = rig.proxy.client
    with pytest.raises(NetFaultsError, match="no node 'broker-9' behind this proxy: its targets are server"):
        control.apply(Cut(Link("clients", "broker-9")))
    with pytest.raises(NetFaultsError, match="no source 'nobody'"):
        control.apply(Cut(Link("nobody", TARGET)))
    with pytest.raises(NetFaultsError, match="unknown op 'explode'"):
        control.request("explode")
    with pytest.raises(NetFaultsError, match="a rule's kind must be one of cut, drop, hold, delay, limit"):
        control.request("apply", rule={"kind": "melt", "source": "clients", "target": TARGET})
    with pytest.raises(NetFaultsError, match=r"a delay must be 1\.\.600000 ms, not -5"):
        control.request("apply", rule={"kind": "delay", "source": "clients", "target": TARGET, "ms": -5})
    with pytest.raises(NetFaultsError, match="no node 'ghost'"):
        control.down("ghost")
    assert control.status().rules() == ()


def test_rules_validate_on_construction() -> None:
    with pytest.raises(NetFaultsError, match=r"jitter must be 0\.\.10 ms"):
        Delay(Link("a", "b"), Direction.BOTH, ms=10, jitter_ms=20)
    with pytest.raises(NetFaultsError, match="bandwidth limit must be a whole number of bytes/s >= 1"):
        Limit(Link("a", "b"), Direction.REPLIES, bytes_per_s=0)
    with pytest.raises(NetFaultsError, match="a link's target must be a node"):
        Link("a", CLIENTS)
    with pytest.raises(NetFaultsError, match="a link's source must be a node name"):
        Link("", "b")
    assert Direction.BOTH.flows() == (Flow.REQUESTS, Flow.REPLIES)


def test_config_errors_are_one_line(control_dir: Path) -> None:
    with pytest.raises(NetFaultsError, match="listen port 5000 is given twice"):
        ProxyConfig(control_dir, (PortSpec(5000, "a", 6000), PortSpec(5000, "b", 6001)))
    with pytest.raises(NetFaultsError, match="forwards to itself"):
        PortSpec(5000, "a", 5000)
    with pytest.raises(NetFaultsError, match="too deep for a unix socket"):
        ProxyConfig(control_dir / ("d" * 120), (PortSpec(5000, "a", 6000),))
    with pytest.raises(NetFaultsError, match="lacks 'upstream_port'"):
        ProxyConfig.parse(json.dumps({"control_dir": str(control_dir), "ports": [{"listen": 1, "target": "a"}]}))
    with pytest.raises(NetFaultsError, match="not JSON"):
        ProxyConfig.parse("{")


def test_a_taken_port_fails_the_start_with_its_reason(control_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(NetFaultsError, match=f"cannot listen on 127.0.0.1:{port} for server"):
            NetFaultsProcess.start(ProxyConfig(control_dir, (PortSpec(port, TARGET, free_ports(1)[0]),)))
    assert not (control_dir / "netfaults.sock").exists()


# ---- the proxy's own life ----------------------------------------------------------------------------
PARENT = """
import sys, time
from pathlib import Path
from kafkalab.netfaults import NetFaultsProcess, PortSpec, ProxyConfig
proc = NetFaultsProcess.start(ProxyConfig(Path(sys.argv[1]), (PortSpec(int(sys.argv[2]), "server", int(sys.argv[3])),)))
print(proc.pid, flush=True)
time.sleep(60)
"""


def test_the_proxy_dies_with_its_parent(control_dir: Path) -> None:
    listen, upstream = free_ports(2)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(control_dir), str(listen), str(upstream)],
                              stdout=subprocess.PIPE, text=True)
    proxy_pid = 0
    try:
        assert parent.stdout is not None
        proxy_pid = int(parent.stdout.readline())
        assert psutil.pid_exists(proxy_pid)
        parent.kill()  # SIGKILL: no chance to stop its child
        parent.wait(5)
        deadline = time.monotonic() + 5
        while psutil.pid_exists(proxy_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not psutil.pid_exists(proxy_pid)
        assert not (control_dir / "netfaults.sock").exists()
        with socket.socket() as probe:  # the listen port is free again
            probe.bind(("127.0.0.1", listen))
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.wait(5)
        if proxy_pid and psutil.pid_exists(proxy_pid):
            os.kill(proxy_pid, signal.SIGKILL)


def test_sigterm_ends_it_and_leaves_nothing(rig: Rig) -> None:
    peer = rig.client("producer")
    assert peer.ask("send", text="a")["reply"] == "echo:a"
    code = rig.proxy.stop()
    assert code == 0
    assert not rig.proxy.config.socket_path.exists()
    assert "error" in peer.ask("send", text="b", wait=1.0)
    assert peer.ask("connect") == {"error": "ConnectionRefusedError"}
