"""Config generation, port checks and the distribution lookup: pure logic, no JVM."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalab import kafka_install
from kafkalab.cluster import NodeAction
from kafkalab.cluster.configs import write_node_configs
from kafkalab.cluster.ports import resolve_ports
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.cluster.supervision import StateDirLock
from kafkalab.errors import KafkalabError


def read_props(path: Path) -> dict[str, str]:
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return dict(ln.split("=", 1) for ln in lines)


def test_configs_listen_on_loopback_with_demo_settings_and_overrides(tmp_path: Path) -> None:
    spec = ClusterSpec(tmp_path, brokers=3, overrides={"min.insync.replicas": "2", "replica.lag.time.max.ms": "5000"},
                       broker_overrides={2: {"min.insync.replicas": "1"}}, net_proxies=False)
    paths = write_node_configs(spec)
    b1, b2 = read_props(paths["broker-1"]), read_props(paths["broker-2"])
    assert b1["listeners"] == "PLAINTEXT://127.0.0.1:9092" and b2["listeners"] == "PLAINTEXT://127.0.0.1:9192"
    assert b1["broker.id"] == "1" and b1["zookeeper.connect"] == "127.0.0.1:2181"
    assert b1["zookeeper.session.timeout.ms"] == "3000" and b1["group.initial.rebalance.delay.ms"] == "0"
    assert b1["replica.lag.time.max.ms"] == "5000"  # cluster override beats the demo default
    assert b1["min.insync.replicas"] == "2" and b2["min.insync.replicas"] == "1"  # per broker beats cluster
    zk = read_props(paths["zookeeper"])
    assert zk["clientPortAddress"] == "127.0.0.1" and zk["tickTime"] == "1000"
    assert f"File={tmp_path}/broker-3/logs/server.log" in (tmp_path / "broker-3" / "log4j.properties").read_text()


def test_replication_defaults_follow_the_broker_count(tmp_path: Path) -> None:
    spec = ClusterSpec(tmp_path, brokers=1)
    assert spec.broker_settings(1)["offsets.topic.replication.factor"] == "1"
    assert spec.bootstrap == "127.0.0.1:9092"


@pytest.mark.parametrize("brokers", [0, 10])
def test_broker_count_out_of_range(tmp_path: Path, brokers: int) -> None:
    with pytest.raises(KafkalabError, match="out of range"):
        ClusterSpec(tmp_path, brokers=brokers)


def test_taken_port_names_its_holder_or_is_replaced_when_asked(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        spec = ClusterSpec(tmp_path, brokers=1, zk_port=port, broker_ports=[port + 1 if port < 65535 else 1024])
        with pytest.raises(KafkalabError, match=rf"port {port} for ZooKeeper is taken by pid \d+"):
            resolve_ports(spec)
        spec.free_ports = True
        resolve_ports(spec)
        assert spec.zk_port != port


def test_one_driver_per_state_dir(tmp_path: Path) -> None:
    first = StateDirLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(KafkalabError, match="already driven by kafkalab pid"):
            StateDirLock(tmp_path).acquire()
    finally:
        first.release()
    again = StateDirLock(tmp_path)
    again.acquire()
    again.release()


def test_kafka_home_without_libs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KafkalabError, match="not a Kafka install"):
        kafka_install.locate(kafka_home=tmp_path)


def test_kafka_home_with_libs_is_used(tmp_path: Path) -> None:
    cached = kafka_install.locate(kafka_home="")
    (tmp_path / "libs").symlink_to(cached.libs)
    found = kafka_install.locate(kafka_home=tmp_path)
    assert found.source == "kafka-home" and found.version() == cached.version()


def test_fetch_is_idempotent_and_fast_when_present() -> None:
    import time

    started = time.monotonic()
    found = kafka_install.fetch()
    assert time.monotonic() - started < 2 and not found.missing_jars()


def test_each_node_action_calls_its_own_method() -> None:
    class Recorder:  # stands in for a Node: the test claims only which method an action calls
        def __init__(self) -> None:
            self.calls: list[str] = []

        def __getattr__(self, name: str) -> Callable[[], None]:
            return lambda: self.calls.append(name)

    for action in NodeAction:
        node = Recorder()
        action.apply(node)  # type: ignore[arg-type]
        assert node.calls == [action.value]
    assert NodeAction("kill") is NodeAction.KILL


def test_node_zero_is_zookeeper_as_in_the_console(tmp_path: Path) -> None:
    from kafkalab.cluster import Cluster
    from kafkalab.errors import KafkalabError

    cluster = Cluster(ClusterSpec(state_dir=tmp_path), kafka_install.locate())
    cluster._build_nodes()  # the nodes as start() makes them, without starting anything
    assert cluster.node("0").name == cluster.node(0).name == "zookeeper"
    assert cluster.node("2").name == "broker-2"
    with pytest.raises(KafkalabError, match=r"unknown node '7': brokers are 1, 2, 3, or 0 \(ZooKeeper\)"):
        cluster.node("7")
