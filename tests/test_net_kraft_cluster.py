"""A real KRaft cluster (3 dedicated controllers, 3 brokers) with --net-proxies: brokers reach the voters and the
voters each other through the proxy, kafkalab's admin and quorum views directly; an isolated broker is fenced
and loses its leaderships within its broker session while it still answers a client; the active controller cut
from the other voters resigns and another leads; kill and pause behave as before.

Every fact is read from outside the proxy's bookkeeping: metadata as a broker's direct listener answers it,
the quorum as the active controller describes it (DescribeQuorum on the CONTROLLER_DIRECT listeners), a raw
client request. One cluster for the module, ended (and its proxy with it) whatever happens.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.cluster import Cluster
from kafkalab.cluster.control_socket import ControlServer
from kafkalab.cluster.node import NodeState
from tests.conftest import make_spec, started
from tests.test_net_cluster import (
    all_in_sync,
    api_versions_answered,
    isr_views,
    net,
    proxy_children,
    view_from,
    wait_for,
)

pytestmark = pytest.mark.cluster
TOPIC = "net-kraft"
PARTITIONS = 6


@pytest.fixture(scope="module")
def kraft_cluster(distribution: kafka_install.Distribution) -> Iterator[Cluster]:
    spec = make_spec("net-kraft", net_proxies=True, mode="kraft", controllers=3)
    yield from started(spec, distribution, 300)
    assert not proxy_children(spec.state_dir), "the proxy outlived its cluster"


@pytest.fixture(scope="module")
def owner(kraft_cluster: Cluster) -> Iterator[Path]:
    server = ControlServer(kraft_cluster, threading.Event())
    try:
        yield kraft_cluster.state_dir
    finally:
        server.close()


@pytest.fixture(scope="module")
def topic(kraft_cluster: Cluster) -> str:
    Admin(kraft_cluster.bootstrap, timeout_s=5).create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "1"},
                                                             timeout_s=60)
    return TOPIC


def live_brokers(port: int) -> set[int]:
    """The brokers a broker's metadata lists (in KRaft: the unfenced ones), asked on its direct listener."""
    client = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "socket.timeout.ms": 3000})
    return set(client.list_topics(timeout=5).brokers)


def quorum_leader(cluster: Cluster) -> tuple[int, int] | None:
    state = cluster.quorum()
    return (state.leader, state.epoch or 0) if state.reachable and state.leader is not None else None


def test_every_link_through_the_proxy_and_kafkalab_s_views_direct(kraft_cluster: Cluster, topic: str) -> None:
    spec = kraft_cluster.spec
    # a broker is listed once the active controller unfences it, a moment after it reports ready
    wait_for("every broker unfenced", lambda: live_brokers(spec.broker_port(1)) == {1, 2, 3}, 60)
    producer = Producer({"bootstrap.servers": spec.client_bootstrap, "acks": "all"})
    for i in range(20):
        producer.produce(topic, str(i).encode())
    assert producer.flush(30) == 0
    assert {b.port for b in producer.list_topics(timeout=5).brokers.values()} == {n.client for n in spec.net_ports}
    assert set(Admin(kraft_cluster.bootstrap, timeout_s=5).snapshot().brokers) == {1, 2, 3}
    wait_for("a quorum leader", lambda: quorum_leader(kraft_cluster) is not None, 60)
    assert kraft_cluster.net is not None
    status = kraft_cluster.net.status()
    assert status.nodes.keys() == {"controller-1", "controller-2", "controller-3", "broker-1", "broker-2", "broker-3"}
    links = {(s.link.source, s.link.target) for s in status.links if s.connections_total}
    # every broker reaches the voters through the proxy, the voters reach each other (their Fetch and Vote)
    assert all(any((f"broker-{b}", f"controller-{c}") in links for c in (1, 2, 3)) for b in (1, 2, 3)), links
    assert any(s.startswith("controller-") and t.startswith("controller-") and s != t for s, t in links), links
    assert ("clients", "broker-1") in links or ("clients", "broker-2") in links or ("clients", "broker-3") in links
    # the quorum view (a process of its own, so a client to the proxy) never went through it
    assert not any(s == "clients" and t.startswith("controller-") for s, t in links), links


def test_an_isolated_broker_is_fenced_and_loses_its_leaderships_but_still_answers_a_client(
        kraft_cluster: Cluster, owner: Path, topic: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = kraft_cluster.spec
    wait_for("every replica in sync", lambda: all_in_sync(kraft_cluster, topic), 90)
    leaders = {leader for leader, _isr in view_from(spec.broker_port(2), topic).values()}
    isolated = min(leaders)
    others = [b for b in kraft_cluster.broker_ids if b != isolated]
    try:
        assert net(owner, "isolate", "broker", str(isolated)) == 0
        out = capsys.readouterr().out
        assert f"cut broker-{isolated} -> controller-1" in out and "cut controller-" not in out

        def fenced_and_dropped() -> bool:
            views = [view_from(spec.broker_port(b), topic) for b in others]
            return (all(isolated not in live_brokers(spec.broker_port(b)) for b in others)
                    and all(leader != isolated and isolated not in isr
                            for view in views for leader, isr in view.values()))

        took = wait_for(f"broker {isolated} fenced, out of every ISR and leadership", fenced_and_dropped, 40)
        # the broker session (2 s) runs out at the active controller, which fences it and moves its leaderships
        assert took <= spec.session_timeout_s + 12, took
        print(f"KRaft: broker {isolated} isolated: fenced, out of every ISR and leadership after {took:.1f} s")
        assert api_versions_answered(spec.net_ports[isolated - 1].client)  # clients are kept
    finally:
        assert net(owner, "heal") == 0
    took = wait_for("every ISR whole again after heal", lambda: all_in_sync(kraft_cluster, topic), 120,
                    lambda: f"{isr_views(kraft_cluster, topic)}; unfenced: {live_brokers(spec.broker_port(2))}")
    assert all(isolated in live_brokers(spec.broker_port(b)) for b in kraft_cluster.broker_ids)
    print(f"KRaft: healed, every ISR whole after {took:.1f} s")


def test_the_active_controller_cut_from_the_other_voters_resigns_and_another_leads(
        kraft_cluster: Cluster, owner: Path, topic: str, capsys: pytest.CaptureFixture[str]) -> None:
    wait_for("a quorum leader", lambda: quorum_leader(kraft_cluster) is not None, 60)
    before = quorum_leader(kraft_cluster)
    assert before is not None
    old_leader, old_epoch = before
    old_node = kraft_cluster.spec.controller_node(old_leader)
    try:
        assert net(owner, "isolate", "controller") == 0  # the active one, resolved now
        out = capsys.readouterr().out
        assert f"isolate {old_node}" in out or f"cut {old_node} -> " in out, out

        def another_leads() -> bool:
            now = quorum_leader(kraft_cluster)
            return now is not None and now[0] != old_leader and now[1] > old_epoch

        took = wait_for(f"a voter other than {old_node} leading", another_leads, 60)
        after = quorum_leader(kraft_cluster)
        print(f"KRaft: {old_node} (epoch {old_epoch}) isolated: {after} leads after {took:.1f} s")
        # the brokers follow the new leader: a topic created now is served
        Admin(kraft_cluster.bootstrap, timeout_s=5).create_topic("net-kraft-after", 1, 3, None, timeout_s=60)
    finally:
        assert net(owner, "heal") == 0
    wait_for("every ISR whole again after heal", lambda: all_in_sync(kraft_cluster, topic), 120,
             lambda: isr_views(kraft_cluster, topic))


def test_kill_and_pause_look_as_before_to_clients(kraft_cluster: Cluster, topic: str) -> None:
    spec = kraft_cluster.spec
    victim = 3
    client_port = spec.net_ports[victim - 1].client
    kraft_cluster.node(victim).kill()
    kraft_cluster.wait_state(victim, NodeState.KILLED, timeout=10)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", client_port), timeout=2).close()
    kraft_cluster.node(victim).start()
    kraft_cluster.wait_state(victim, NodeState.RUNNING, timeout=120)
    socket.create_connection(("127.0.0.1", client_port), timeout=2).close()
    wait_for("broker 3 back in every ISR", lambda: all_in_sync(kraft_cluster, topic), 120)
    # paused: silent past its session, fenced as if isolated; resumed, back
    kraft_cluster.node(victim).pause()
    try:
        took = wait_for("the paused broker fenced",
                        lambda: victim not in live_brokers(spec.broker_port(1)), 30)
        print(f"KRaft: broker {victim} paused: fenced after {took:.1f} s")
    finally:
        kraft_cluster.node(victim).resume()
    start = time.monotonic()
    wait_for("broker 3 back in every ISR after resume", lambda: all_in_sync(kraft_cluster, topic), 120)
    print(f"KRaft: broker {victim} resumed: in every ISR after {time.monotonic() - start:.1f} s")
