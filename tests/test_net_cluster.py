"""A real ZooKeeper-mode cluster with --net-proxies: clients through the proxy, kafkalab's admin direct, an
isolated leader dropped from every ISR while it still answers its clients, heal, kill and restart as before.

Every fact is read from outside the proxy's bookkeeping: metadata as a broker answers it, a client's produce,
a socket's connect. One cluster for the module, ended (and its proxy with it) whatever happens.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

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
ROOT = Path(__file__).resolve().parent.parent
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


def api_versions_answered(port: int) -> bool:
    """An ApiVersions request (v0) on a raw socket: its reply carries our correlation id and no error."""
    client_id = b"kafkalab-test"
    body = struct.pack(">hhih", 18, 0, 4242, len(client_id)) + client_id
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        reply = sock.recv(size, socket.MSG_WAITALL)
    correlation, error = struct.unpack(">ih", reply[:6])
    return (correlation, error) == (4242, 0)


def wait_for(what: str, check: object, timeout_s: float, describe: Callable[[], str] | None = None) -> float:
    """Seconds until ``check()`` holds; fails naming ``what`` after ``timeout_s``, with ``describe()``: what the
    cluster looked like then (a bare False explains nothing)."""
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
    pytest.fail(f"{what} not within {timeout_s:g} s (last: {last})" + (f"; {describe()}" if describe else ""))


def all_in_sync(cluster: Cluster, topic: str) -> bool:
    views = [view_from(cluster.spec.broker_port(b), topic) for b in cluster.broker_ids]
    return all(isr == (1, 2, 3) for view in views for _leader, isr in view.values())


def isr_views(cluster: Cluster, topic: str) -> str:
    """Each broker's (leader, ISR) per partition, or why it did not answer: a failed wait's message."""
    said = []
    for b in cluster.broker_ids:
        try:
            said.append(f"broker {b} sees {view_from(cluster.spec.broker_port(b), topic)}")
        except KafkaException as exc:
            said.append(f"broker {b}: {exc}")
    return "; ".join(said)


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


def test_a_one_way_cut_drops_the_follower_from_one_leader_s_isrs_only(
        net_cluster: Cluster, owner: Path, topic: str) -> None:
    # Why the follower is never the controller here: in ZooKeeper mode the controller is a broker, and its
    # LeaderAndIsr/UpdateMetadata requests leave the same process for the same BROKER listener as its replica
    # fetches, so "broker 3 -> broker 2" with broker 3 the controller also cuts the controller from broker 2.
    # The leader still shrinks its ISR after replica.lag.time.max.ms (its log: "Shrinking ISR" ~12 s after the
    # cut), but its own metadata cache never hears of it and keeps listing the follower in the ISR; a metadata
    # request may be answered by any broker (librdkafka asks the ones it learnt of, not only the bootstrap one),
    # so the shrink looked absent for 40 s (seen: the proxy refused every reconnect, the leader's log shrank the
    # ISR at 12 s, metadata reads flipped between the old and the new ISR). Still open: run after the isolation
    # below (leader 3, follower 1, neither the controller as the metadata named it) the shrink did not show in
    # 40 s either, so this test runs first, on a cluster no isolation has touched.
    spec = net_cluster.spec
    wait_for("every replica in sync", lambda: all_in_sync(net_cluster, topic), 60)
    # two brokers that lead partitions (after an isolation, the preferred leaders come back within 20 s)
    wait_for("two leaders", lambda: len({lead for lead, _ in view_from(spec.broker_port(1), topic).values()}) > 1,
             60)
    view = view_from(spec.broker_port(1), topic)
    controller = Admin(net_cluster.bootstrap, timeout_s=5).snapshot().controller
    leaders = sorted({lead for lead, _isr in view.values()})
    leader = next(b for b in leaders if b != controller) if len(leaders) > 1 else leaders[0]
    follower = next(b for b in net_cluster.broker_ids if b not in (leader, controller))
    led_by_leader = [p for p, (lead, _isr) in view.items() if lead == leader]
    led_by_follower = [p for p, (lead, _isr) in view.items() if lead == follower]
    writer = Producer({"bootstrap.servers": spec.client_bootstrap, "acks": "1"})
    writer.list_topics(timeout=5)
    try:
        assert net(owner, "cut", "broker", str(follower), "broker", str(leader)) == 0

        # asked of the third broker: the other two may not hear from the controller (it may be one of them, and
        # its UpdateMetadata to the other goes over the cut link: the leader's own cache can stay stale)
        third = next(b for b in net_cluster.broker_ids if b not in (leader, follower))

        def shrunk() -> bool:
            # a follower whose log ends where the leader's does counts as caught up, fetching or not: keep writing
            for i in range(200):
                writer.produce(topic, b"x" * 100, partition=led_by_leader[i % len(led_by_leader)])
            writer.flush(10)
            now = view_from(spec.broker_port(third), topic)
            return all(follower not in now[p][1] for p in led_by_leader)

        # the leader shrinks the ISR once its follower has not fetched for replica.lag.time.max.ms (10 s)
        took = wait_for(f"broker {follower} out of broker {leader}'s ISRs", shrunk, 40)
        print(f"one-way cut: broker {follower} out of broker {leader}'s ISRs after {took:.1f} s")
        now = view_from(spec.broker_port(third), topic)
        assert all(leader in now[p][1] for p in led_by_follower), now  # the other way still replicates
    finally:
        assert net(owner, "heal") == 0
    wait_for("every ISR whole again", lambda: all_in_sync(net_cluster, topic), 90)


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
        # clients are kept: a connection to the isolated broker's proxy port still gets its answers
        assert api_versions_answered(spec.net_ports[isolated - 1].client)
    finally:
        assert net(owner, "heal") == 0
    took = wait_for("every ISR whole again after heal", lambda: all_in_sync(net_cluster, topic), 90)
    assert "healed: cut broker-" in capsys.readouterr().out
    print(f"healed: every ISR whole after {took:.1f} s")


def test_dropped_replies_write_the_record_but_never_acknowledge_it(net_cluster: Cluster, owner: Path) -> None:
    admin = Admin(net_cluster.bootstrap, timeout_s=5)
    admin.create_topic("net-drop", 1, 3, None, timeout_s=60)
    leader = view_from(net_cluster.spec.broker_port(1), "net-drop")[0][0]
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{net_cluster.spec.net_ports[leader - 1].client}", "acks": "1",
                         "message.send.max.retries": 0, "enable.idempotence": False,
                         "request.timeout.ms": 3000, "message.timeout.ms": 5000})
    first: list[object] = []
    producer.produce("net-drop", b"first", on_delivery=lambda err, _msg: first.append(err))
    producer.flush(30)
    assert first == [None]  # metadata and a connection in hand before the replies go

    reader = Consumer({"bootstrap.servers": net_cluster.bootstrap, "group.id": "net-drop-reader"})

    def end_offset() -> int:
        """The log's end as the brokers' direct listeners tell it (the high watermark: replicated too)."""
        return int(reader.get_watermark_offsets(TopicPartition("net-drop", 0), timeout=5)[1])

    wait_for("the first record replicated", lambda: end_offset() == 1, 15)
    before = 1
    outcomes: list[object] = []
    try:
        assert net(owner, "drop-replies", "clients", "broker", str(leader)) == 0
        producer.produce("net-drop", b"unacknowledged", on_delivery=lambda err, _msg: outcomes.append(err))
        producer.flush(15)
        assert len(outcomes) == 1 and outcomes[0] is not None  # the ack never came: timed out
        # yet the leader wrote it (and its followers, whose links are whole, replicated it)
        wait_for("the unacknowledged record in the log", lambda: end_offset() == before + 1, 15)
    finally:
        assert net(owner, "heal") == 0
        reader.close()


def test_held_requests_are_kept_until_the_heal_then_written(net_cluster: Cluster, owner: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    admin = Admin(net_cluster.bootstrap, timeout_s=5)
    admin.create_topic("net-hold", 1, 3, None, timeout_s=60)
    leader = view_from(net_cluster.spec.broker_port(1), "net-hold")[0][0]
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{net_cluster.spec.net_ports[leader - 1].client}", "acks": "1",
                         "enable.idempotence": False, "message.send.max.retries": 0,
                         "request.timeout.ms": 30000, "message.timeout.ms": 30000})
    first: list[object] = []
    producer.produce("net-hold", b"first", on_delivery=lambda err, _msg: first.append(err))
    producer.flush(30)
    assert first == [None]  # metadata and a connection in hand before the requests are held
    reader = Consumer({"bootstrap.servers": net_cluster.bootstrap, "group.id": "net-hold-reader"})

    def end_offset() -> int:
        """The log's end as the leader's direct listener tells it: outside the proxy."""
        return int(reader.get_watermark_offsets(TopicPartition("net-hold", 0), timeout=5)[1])

    wait_for("the first record replicated", lambda: end_offset() == 1, 15)
    outcomes: list[object] = []
    healed = False
    try:
        assert net(owner, "hold", "clients", "broker", str(leader), "--direction", "requests") == 0
        assert f"applied: hold requests clients -> broker-{leader}" in capsys.readouterr().out
        producer.produce("net-hold", b"held", on_delivery=lambda err, _msg: outcomes.append(err))
        producer.flush(4)  # the request is sent into the proxy, which keeps it
        assert outcomes == [] and end_offset() == 1  # not acknowledged, not written: held, not lost
        assert net(owner, "status") == 0
        assert f"  hold requests clients -> broker-{leader}" in capsys.readouterr().out.splitlines()
        assert net(owner, "heal") == 0
        healed = True
        assert f"healed: hold requests clients -> broker-{leader}" in capsys.readouterr().out
        producer.flush(15)
        assert outcomes == [None]  # delivered on heal and acknowledged, well within the produce's own timeout
        wait_for("the held record in the log", lambda: end_offset() == 2, 15)
    finally:
        if not healed:
            net(owner, "heal")
        reader.close()


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


def answered_here(port: int) -> bool:
    """An ApiVersions request from this test process is answered (False: the proxy reset the connection)."""
    try:
        return api_versions_answered(port)
    except (OSError, struct.error):
        return False


class Prober:
    """A process of its own that sends the ApiVersions request when asked, as a lab's client process would: the
    process the test names a client (a named client's child processes are that client too, so the test process,
    their parent, cannot be the one named)."""

    def __init__(self, port: int) -> None:
        code = ("import sys\nfrom tests.test_net_cluster import answered_here\n"
                f"for _ in sys.stdin:\n    print(int(answered_here({port})), flush=True)\n")
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def answered(self) -> bool:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip() == "1"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def test_a_client_named_producer_is_cut_alone_and_a_clients_cut_still_reaches_it(
        net_cluster: Cluster, owner: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert net_cluster.net is not None
    port = net_cluster.spec.net_ports[0].client
    producer = Prober(port)
    net_cluster.net.client_started("producer", producer.pid)  # as a lab run names its producer's process
    try:
        assert net(owner, "cut", "producer", "broker", "1") == 0
        assert "applied: cut producer -> broker-1" in capsys.readouterr().out
        assert not producer.answered()  # the producer's connection reset
        assert answered_here(port)  # another client (this test process) reaches the same broker
        assert net(owner, "cut", "clients", "broker", "1") == 0
        assert not answered_here(port)
        assert net(owner, "heal", "producer", "broker", "1") == 0
        assert not producer.answered()  # the producer's own cut healed, the clients' cut still acts on it
        assert net(owner, "status") == 0
        out = capsys.readouterr().out
        assert f"clients known by name: producer (pid {producer.pid})" in out and "cut clients -> broker-1" in out
    finally:
        assert net(owner, "heal") == 0
        try:
            assert producer.answered() and answered_here(port)
        finally:
            producer.close()


def test_bad_net_input_changes_nothing(net_cluster: Cluster, owner: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (("isolate", "broker", "9"), ("cut", "broker", "1", "clients"), ("delay", "1", "2", "soon")):
        assert net(owner, *argv) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert net_cluster.net is not None and not net_cluster.net.status().rules()


def test_a_failed_start_leaves_no_proxy_and_no_jvm(distribution: kafka_install.Distribution) -> None:
    spec = make_spec("net-failed", net_proxies=True, overrides={"num.io.threads": "many"})
    cluster = Cluster(spec, distribution)
    with pytest.raises(KafkalabError, match=r"broker-\d failed to start"):
        cluster.start(timeout=120)
    assert not proxy_children(spec.state_dir)
    assert all(n.pid is None for n in cluster.nodes)
