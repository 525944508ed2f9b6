"""The network-fault proxies are on by default where a local cluster starts (cluster up, console, run, fix);
--no-net-proxies and a lab's `net_proxies = false` leave them out; the docker backend has them where the proxy can
see into the containers, and says why not elsewhere; an attached console reaches the owner's proxy through the
control socket. No cluster."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from typing import Any

import pytest

from kafkalab.cli import build_parser
from kafkalab.cli.cluster_cmds import spec_from_args
from kafkalab.cli.common import net_proxies_argv, with_net_proxies
from kafkalab.cli.console_cmd import console_args
from kafkalab.cluster import Cluster
from kafkalab.cluster.control_socket import SPEC_FILE, ControlServer, read_cluster_file
from kafkalab.cluster.docker_backend import DockerBackend
from kafkalab.cluster.netwiring import NetAction, NetRequest
from kafkalab.cluster.process import LocalBackend, NodeProcess
from kafkalab.cluster.remote import RemoteNet
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install import Distribution
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.run import PortChoice, cluster_spec


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize("command", [("cluster", "up"), ("run", "leader-failover"), ("fix", "leader-failover"),
                                     ("console",)])
def test_every_command_that_starts_a_cluster_takes_both_flags(command: tuple[str, ...]) -> None:
    assert parsed(*command).net_proxies is None  # neither: the default
    assert parsed(*command, "--net-proxies").net_proxies is True
    assert parsed(*command, "--no-net-proxies").net_proxies is False


def test_cluster_up_has_proxies_unless_left_out(tmp_path: Path) -> None:
    on = spec_from_args(parsed("cluster", "up", "--state-dir", str(tmp_path / "on")))
    assert on.net_proxies and on.client_bootstrap != on.bootstrap
    off = spec_from_args(parsed("cluster", "up", "--state-dir", str(tmp_path / "off"), "--no-net-proxies"))
    assert not off.net_proxies and off.client_bootstrap == off.bootstrap


def test_docker_has_them_by_default_too(tmp_path: Path) -> None:
    docker = spec_from_args(parsed("cluster", "up", "--state-dir", str(tmp_path), "--backend", "docker"))
    assert docker.net_proxies and docker.client_bootstrap != docker.bootstrap


class FakeEngine:
    """What DockerBackend asks of the engine here: its info's security options."""

    def __init__(self, security: list[str]) -> None:
        self.security = security

    def info(self) -> dict[str, Any]:
        return {"SecurityOptions": self.security}


@pytest.mark.parametrize(("host", "security", "why"), [
    ("unix:///var/run/docker.sock", ["name=seccomp,profile=builtin", "name=cgroupns"], None),
    ("unix:///run/user/1000/docker.sock", ["name=seccomp,profile=builtin", "name=rootless"],
     "a rootless engine runs the containers in its own network namespace"),
    ("tcp://10.1.2.3:2376", [], "the engine at tcp://10.1.2.3:2376 is not on this machine"),
])
def test_docker_says_when_the_proxy_cannot_see_into_its_containers(
        monkeypatch: pytest.MonkeyPatch, host: str, security: list[str], why: str | None) -> None:
    monkeypatch.setenv("DOCKER_HOST", host)
    backend = DockerBackend.__new__(DockerBackend)  # the engine is faked: only its answers are claimed here
    backend._client = FakeEngine(security)  # type: ignore[assignment]
    assert backend.net_proxies_refused() == why


class RefusingBackend(LocalBackend):
    name = "docker"

    def net_proxies_refused(self) -> str | None:
        return "a rootless engine runs the containers in its own network namespace"

    def launch(self, node_name: str, argv: list[str], stdout_path: Path) -> NodeProcess:
        raise AssertionError(f"{node_name} launched although the proxies were refused")


def test_a_cluster_refuses_proxies_its_backend_cannot_serve_before_anything_starts(tmp_path: Path) -> None:
    spec = ClusterSpec(state_dir=tmp_path / "state", brokers=1)
    with pytest.raises(KafkalabError) as refused:
        Cluster(spec, Distribution(tmp_path, "maven"), RefusingBackend()).start()
    said = str(refused.value)
    assert "(a rootless engine runs the containers in its own network namespace)" in said
    assert said.endswith("add --no-net-proxies, or use --backend local") and "\n" not in said
    assert not (tmp_path / "state" / "broker-1").exists()


def test_free_ports_pick_free_proxy_ports_too(tmp_path: Path) -> None:
    """Two clusters started at once with --free-ports never reach for the same proxy port."""
    a, b = (spec_from_args(parsed("cluster", "up", "--state-dir", str(tmp_path / n), "--free-ports")) for n in "ab")
    ports_a = {p for n in a.net_ports for p in n.ports()} | {a.zk_proxy_port}
    ports_b = {p for n in b.net_ports for p in n.ports()} | {b.zk_proxy_port}
    assert len(ports_a) == 13 and not ports_a & ports_b
    assert not ports_a & {*a.broker_ports, a.zk_port}


def test_a_lab_runs_with_the_proxies_unless_left_out(tmp_path: Path) -> None:
    lab = load_lab(find_lab("leader-failover"))
    run = with_net_proxies(lab, parsed("run", "leader-failover"))
    assert cluster_spec(run, tmp_path / "a", PortChoice()).net_proxies  # the default, resolved by the spec
    plain = with_net_proxies(lab, parsed("run", "leader-failover", "--no-net-proxies"))
    assert plain.cluster.net_proxies is False and not cluster_spec(plain, tmp_path / "b", PortChoice()).net_proxies
    # the console `kafkalab run` opens on a terminal is told the same
    assert net_proxies_argv(parsed("run", "x", "--no-net-proxies")) == ["--no-net-proxies"]
    assert console_args(net_proxies_argv(parsed("run", "x", "--no-net-proxies"))).net_proxies is False
    assert net_proxies_argv(parsed("run", "x")) == []
    # `kafkalab` alone: the console with the proxies
    assert console_args().net_proxies is None


def test_a_lab_file_that_says_false_runs_without_them(tmp_path: Path) -> None:
    shipped = find_lab("leader-failover").read_text()
    path = tmp_path / "leader-failover.toml"
    path.write_text(shipped.replace("[cluster]\n", "[cluster]\nnet_proxies = false\n", 1))
    lab = with_net_proxies(load_lab(path), parsed("run", str(path)))
    assert not cluster_spec(lab, tmp_path / "run", PortChoice()).net_proxies
    asked = with_net_proxies(load_lab(path), parsed("run", str(path), "--net-proxies"))
    assert asked.cluster.net_proxies is True  # the command line wins


def test_a_lab_with_a_network_fault_refuses_no_net_proxies() -> None:
    lab = load_lab(find_lab("zombie-leader"))
    with pytest.raises(KafkalabError, match="network faults, which need the network-fault proxies"):
        with_net_proxies(lab, parsed("run", "zombie-leader", "--no-net-proxies"))


STATUS = {"pid": 4242, "targets": [{"name": "broker-1", "down": False, "listen_ports": [9102]}],
          "nodes": {"broker-1": 100}, "links": []}


class FakeNet:
    """What the owner's ClusterNet answers: the handled requests kept, a fixed status."""

    pid = 4242

    def __init__(self) -> None:
        self.handled: list[NetRequest] = []

    def handle(self, request: NetRequest) -> dict[str, Any]:
        self.handled.append(request)
        return {"applied": ["broker-1 -> broker-2: cut"]}

    def client(self) -> FakeNet:
        return self

    def request(self, op: str) -> dict[str, Any]:
        assert op == "status"
        return {"status": STATUS}


class FakeOwner:
    def __init__(self, state_dir: Path, net: FakeNet | None) -> None:
        self.state_dir = state_dir
        self.net = net


def test_an_attached_console_cuts_links_through_the_owners_socket(tmp_path: Path) -> None:
    owner_net = FakeNet()
    server = ControlServer(FakeOwner(tmp_path, owner_net), threading.Event())  # type: ignore[arg-type]
    try:
        remote = RemoteNet(tmp_path)
        assert remote.pid == 4242
        assert remote.status().targets[0].name == "broker-1"
        said = remote.handle(NetRequest(NetAction.ISOLATE, ("broker", "1")))
        assert said == {"applied": ["broker-1 -> broker-2: cut"]}
        assert owner_net.handled == [NetRequest(NetAction.ISOLATE, ("broker", "1"))]
    finally:
        server.close()
    none = ControlServer(FakeOwner(tmp_path, None), threading.Event())  # type: ignore[arg-type]
    try:
        with pytest.raises(KafkalabError, match="runs without network-fault proxies"):
            RemoteNet(tmp_path).status()
        assert RemoteNet(tmp_path).pid is None
    finally:
        none.close()


def test_the_cluster_file_carries_the_proxies_ports(tmp_path: Path) -> None:
    """An attached console rebuilds the owner's spec from cluster.json: its clients' bootstrap is the proxy's."""
    from kafkalab.cluster.control_socket import write_cluster_file

    spec = ClusterSpec(state_dir=tmp_path, free_ports=True)
    from kafkalab.cluster.ports import pick_free_ports

    pick_free_ports(spec)

    class Owner:
        def __init__(self) -> None:
            self.spec = spec
            self.backend = argparse.Namespace(name="local")

    write_cluster_file(Owner())  # type: ignore[arg-type]
    facts = read_cluster_file(tmp_path)
    assert (tmp_path / SPEC_FILE).exists() and facts["net_proxies"] is True
    rebuilt = ClusterSpec(state_dir=tmp_path, broker_ports=facts["broker_ports"], zk_port=facts["zk_port"],
                          net_ports=[type(spec.net_ports[0])(*p) for p in facts["net_ports"]],
                          zk_proxy_port=facts["zk_proxy_port"])
    assert rebuilt.client_bootstrap == spec.client_bootstrap == facts["client_bootstrap"]
