"""A real ZooKeeper-mode cluster with --net-proxies: clients through the proxy, kafkalab's admin direct, an
isolated leader dropped from every ISR while it still answers its clients, heal, kill and restart as before.

Every fact is read from outside the proxy's bookkeeping: metadata as a broker answers it, a client's produce,
a socket's connect. One cluster for the module, ended (and its proxy with it) whatever happens.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka import KafkaException, Producer

from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.cli import main
from kafkalab.cluster import Cluster
from kafkalab.cluster.control_socket import ControlServer
from kafkalab.cluster.node import NodeState
from kafkalab.errors import KafkalabError
from tests.conftest import make_spec, started

pytestmark = pytest.mark.cluster
TOPIC = "net"
PARTITIONS = 6


def proxy_children(state_dir: Path) -> list[psutil.Process]:
    """This test process's network-fault proxies of the cluster in ``state_dir`` still alive."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            cmdline = " ".join(proc.cmdline())
        except psutil.Error:
            continue  # gone meanwhile
        if "kafkalab.netfaults" in cmdline and str(state_dir) in cmdline:
            found.append(proc)
    return found


@pytest.fixture(scope="module")
def net_cluster(distribution: kafka_install.Distribution) -> Iterator[Cluster]:
    spec = make_spec("net", net_proxies=True)
    yield from started(spec, distribution, 180)
    assert not proxy_children(spec.state_dir), "the proxy outlived its cluster"


@pytest.fixture(scope="module")
def owner(net_cluster: Cluster) -> Iterator[Path]:
    """The cluster's control socket served, as `kafkalab cluster up` serves it, for `kafkalab net ...`."""
    server = ControlServer(net_cluster, threading.Event())
    try:
        yield net_cluster.state_dir
    finally:
        server.close()


@pytest.fixture(scope="module")
def topic(net_cluster: Cluster) -> str:
    Admin(net_cluster.bootstrap, timeout_s=5).create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "1"},
                                                           timeout_s=60)
    return TOPIC


def net(state_dir: Path, *argv: str) -> int:
    return main(["net", *argv, "--state-dir", str(state_dir)])


def view_from(port: int, topic: str) -> dict[int, tuple[int, tuple[int, ...]]]:
    """partition -> (leader, ISR) as the broker on ``port`` answers a metadata request (a fresh client with only
    that broker to ask: librdkafka connects to the others only when it needs them)."""
    client = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "socket.timeout.ms": 3000})
    try:
        metadata = client.list_topics(topic, timeout=5)
    finally:
        client.flush(0)
    return {p.id: (p.leader, tuple(sorted(p.isrs))) for p in metadata.topics[topic].partitions.values()}


def wait_for(what: str, check: object, timeout_s: float) -> float:
    """Seconds until ``check()`` holds; fails naming ``what`` after ``timeout_s``."""
    start = time.monotonic()
    last: object = None
    while time.monotonic() - start < timeout_s:
        try:
            last = check()  # type: ignore[operator]
        except KafkaException as exc:
            last = exc
        if last is True:
            return time.monotonic() - start
        time.sleep(0.25)
    pytest.fail(f"{what} not within {timeout_s:g} s (last: {last})")


def all_in_sync(cluster: Cluster, topic: str) -> bool:
    views = [view_from(cluster.spec.broker_port(b), topic) for b in cluster.broker_ids]
    return all(isr == (1, 2, 3) for view in views for _leader, isr in view.values())


def test_clients_go_through_the_proxy_and_kafkalab_sees_the_brokers_directly(net_cluster: Cluster, topic: str) -> None:
    spec = net_cluster.spec
    producer = Producer({"bootstrap.servers": spec.client_bootstrap, "acks": "all"})
    for i in range(20):
        producer.produce(topic, str(i).encode())
    assert producer.flush(30) == 0
    client_view = producer.list_topics(timeout=5)
    assert {b.port for b in client_view.brokers.values()} == {n.client for n in spec.net_ports}
    direct = Admin(net_cluster.bootstrap, timeout_s=5).snapshot()
    assert set(direct.brokers) == {1, 2, 3}
    admin_view = Producer({"bootstrap.servers": net_cluster.bootstrap}).list_topics(timeout=5)
    assert {b.port for b in admin_view.brokers.values()} == set(spec.broker_ports)
    status = net_cluster.net.status() if net_cluster.net else None
    assert status is not None and status.nodes.keys() == {"zookeeper", "broker-1", "broker-2", "broker-3"}
    # sources told apart: the producer is a client, replication is broker -> broker, sessions broker -> ZooKeeper
    assert any(s.link.source == "clients" and s.connections_total for s in status.links)
    assert any(s.link.source.startswith("broker-") and s.link.target.startswith("broker-") for s in status.links)
    assert all(status.link(f"broker-{b}", "zookeeper") for b in net_cluster.broker_ids)


def test_an_isolated_leader_drops_out_of_every_isr_but_still_answers_its_clients(
        net_cluster: Cluster, owner: Path, topic: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = net_cluster.spec
    assert wait_for("every replica in sync", lambda: all_in_sync(net_cluster, topic), 60) >= 0
    leaders = {leader for leader, _isr in view_from(spec.broker_port(2), topic).values()}
    isolated = min(leaders)
    others = [b for b in net_cluster.broker_ids if b != isolated]
    try:
        assert net(owner, "isolate", "broker", str(isolated)) == 0
        assert f"cut broker-{isolated} -> zookeeper" in capsys.readouterr().out

        def dropped() -> bool:
            views = [view_from(spec.broker_port(b), topic) for b in others]
            return all(leader != isolated and isolated not in isr
                       for view in views for leader, isr in view.values())

        took = wait_for(f"broker {isolated} out of every ISR and leadership", dropped, 30)
        # the ZooKeeper session (3 s) expires, then the controller moves leaders and shrinks the ISRs
        assert took <= spec.session_timeout_s + 12, took
        print(f"broker {isolated} isolated: out of every ISR and leadership after {took:.1f} s")
        # clients are kept: one connected to the isolated broker's proxy port still gets its answers
        zombie = Producer({"bootstrap.servers": f"127.0.0.1:{spec.net_ports[isolated - 1].client}"})
        answer = zombie.list_topics(topic, timeout=5)
        assert isolated in answer.brokers and answer.topics[topic].error is None
    finally:
        assert net(owner, "heal") == 0
    took = wait_for("every ISR whole again after heal", lambda: all_in_sync(net_cluster, topic), 90)
    assert "healed: cut broker-" in capsys.readouterr().out
    print(f"healed: every ISR whole after {took:.1f} s")


def test_kill_and_restart_look_as_before_to_clients(net_cluster: Cluster, topic: str) -> None:
    spec = net_cluster.spec
    victim = 3
    client_port = spec.net_ports[victim - 1].client
    net_cluster.node(victim).kill()
    net_cluster.wait_state(victim, NodeState.KILLED, timeout=10)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", client_port), timeout=2).close()
    net_cluster.node(victim).start()
    net_cluster.wait_state(victim, NodeState.RUNNING, timeout=90)
    socket.create_connection(("127.0.0.1", client_port), timeout=2).close()
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{client_port}", "acks": "all"})
    for i in range(10):
        producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(60) == 0
    took = wait_for("broker 3 back in every ISR", lambda: all_in_sync(net_cluster, topic), 90)
    print(f"broker 3 killed, refused, restarted: back in every ISR {took:.1f} s after its produce")


def test_bad_net_input_changes_nothing(net_cluster: Cluster, owner: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (("isolate", "broker", "9"), ("cut", "broker", "1", "clients"), ("delay", "1", "2", "soon")):
        assert net(owner, *argv) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert net_cluster.net is not None and not net_cluster.net.status().rules()


def test_a_failed_start_leaves_no_proxy_and_no_jvm(distribution: kafka_install.Distribution) -> None:
    spec = make_spec("net-failed", net_proxies=True, overrides={"num.io.threads": "many"})
    cluster = Cluster(spec, distribution)
    with pytest.raises(KafkalabError, match="broker-1 failed to start"):
        cluster.start(timeout=120)
    assert not proxy_children(spec.state_dir)
    assert all(n.pid is None for n in cluster.nodes)
