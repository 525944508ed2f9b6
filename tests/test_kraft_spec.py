"""KRaft mode's spec, configs, storage record and node naming: pure logic, no JVM."""

from __future__ import annotations

import argparse
import json
import socket
from pathlib import Path

import pytest

from kafkalab.cli.common import add_mode_args, mode_fields
from kafkalab.cluster import Cluster, ClusterSpec, NodeKind
from kafkalab.cluster.cluster import check_mode
from kafkalab.cluster.configs import write_node_configs
from kafkalab.cluster.kraft_storage import QuorumRecord, pin_recorded_ports, random_uuid, read_record
from kafkalab.cluster.ports import resolve_ports
from kafkalab.cluster.spec import KRAFT_DEMO_SETTINGS
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install import Distribution
from tests.test_cluster_spec import read_props


def test_dedicated_controllers_get_their_own_ids_ports_and_the_dynamic_quorum(tmp_path: Path) -> None:
    spec = ClusterSpec(tmp_path, brokers=3, mode="kraft", controllers=3,
                       overrides={"unclean.leader.election.enable": "true"}, net_proxies=False)
    paths = write_node_configs(spec)
    assert set(paths) == {"controller-1", "controller-2", "controller-3", "broker-1", "broker-2", "broker-3"}
    c2, b1 = read_props(paths["controller-2"]), read_props(paths["broker-1"])
    assert c2["process.roles"] == "controller" and c2["node.id"] == "102"
    assert c2["listeners"] == "CONTROLLER://127.0.0.1:9193"
    assert b1["process.roles"] == "broker" and b1["node.id"] == "1" and "broker.id" not in b1
    assert "zookeeper.connect" not in b1 and "zookeeper.session.timeout.ms" not in b1
    for props in (c2, b1):
        assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:9093,127.0.0.1:9193,127.0.0.1:9293"
        assert "controller.quorum.voters" not in props
    # the controller fences brokers and elects leaders: it needs the session timeout and the cluster overrides
    assert c2["broker.session.timeout.ms"] == b1["broker.session.timeout.ms"] == "2000"
    assert c2["unclean.leader.election.enable"] == "true"
    assert b1["log.dirs"].endswith("broker-1/kraft-data")  # apart from a ZooKeeper-mode run's data
    text = paths["broker-1"].read_text()
    for key, (value, why) in KRAFT_DEMO_SETTINGS.items():
        assert f"# {why}\n{key}={value}\n" in text  # every demo choice commented where it is made


def test_combined_nodes_are_brokers_with_a_controller_listener(tmp_path: Path) -> None:
    spec = ClusterSpec(tmp_path, brokers=3, mode="kraft", controllers=3, combined=True, net_proxies=False)
    paths = write_node_configs(spec)
    assert set(paths) == {"broker-1", "broker-2", "broker-3"}
    b3 = read_props(paths["broker-3"])
    assert b3["process.roles"] == "broker,controller" and b3["node.id"] == "3"
    assert b3["listeners"] == "PLAINTEXT://127.0.0.1:9292,CONTROLLER://127.0.0.1:9293"
    assert b3["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9292"
    assert spec.controller_ids == [1, 2, 3] and spec.controller_node(2) == "broker-2"
    one = ClusterSpec(tmp_path / "one", brokers=3, mode="kraft", combined=True)
    assert read_props(write_node_configs(one)["broker-2"])["process.roles"] == "broker"


@pytest.mark.parametrize(("fields", "message"), [
    ({"mode": "raft"}, "mode 'raft' is unknown"),
    ({"mode": "kraft", "controllers": 2}, "give 1 or 3"),
    ({"mode": "kraft", "controllers": 3, "combined": True, "brokers": 2}, "needs at least 3 brokers"),
])
def test_bad_mode_settings_are_refused_in_one_line(tmp_path: Path, fields: dict[str, object], message: str) -> None:
    with pytest.raises(KafkalabError, match=message):
        ClusterSpec(tmp_path, **fields)  # type: ignore[arg-type]


def test_cli_mode_options_need_kraft_and_reach_the_spec() -> None:
    parser = argparse.ArgumentParser()
    add_mode_args(parser)
    assert mode_fields(parser.parse_args(["--mode", "kraft", "--controllers", "3", "--combined"])) == {
        "mode": "kraft", "controllers": 3, "combined": True}
    assert mode_fields(parser.parse_args([]))["mode"] == "zookeeper"
    with pytest.raises(KafkalabError, match="add --mode kraft"):
        mode_fields(parser.parse_args(["--controllers", "3"]))


def test_zookeeper_mode_is_refused_on_kafka_4(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka-clients-4.1.0.jar").touch()
    four = Distribution(libs, "kafka-home")
    with pytest.raises(KafkalabError, match=r"Kafka 4.1.0 has no ZooKeeper mode .*use --mode kraft"):
        check_mode(ClusterSpec(tmp_path), four)
    check_mode(ClusterSpec(tmp_path, mode="kraft"), four)


def test_formatted_storage_pins_the_controller_ports(tmp_path: Path) -> None:
    spec = ClusterSpec(tmp_path, brokers=1, mode="kraft", controllers=3, free_ports=True)
    assert not pin_recorded_ports(spec)
    record = QuorumRecord(random_uuid(), ((101, 41001, random_uuid()), (102, 41002, random_uuid()),
                                          (103, 41003, random_uuid())), False)
    (tmp_path / "kraft.json").write_text(json.dumps(record.as_dict()))
    assert read_record(tmp_path) == record
    assert pin_recorded_ports(spec) and spec.controller_ports == [41001, 41002, 41003]
    assert record.initial_controllers.startswith(f"101@127.0.0.1:41001:{record.voters[0][2]},102@")
    with socket.socket() as holder:  # a recorded port taken: it cannot move, even with --free-ports
        holder.bind(("127.0.0.1", 41002))
        holder.listen()
        with pytest.raises(KafkalabError, match=r"port 41002 for controller 2 is taken .* recorded in the formatted"):
            resolve_ports(spec, pinned_controllers=True)
    other = ClusterSpec(tmp_path, brokers=1, mode="kraft", controllers=1)
    with pytest.raises(KafkalabError, match="formatted with 3 dedicated controller"):
        pin_recorded_ports(other)


def test_uuids_look_like_kafkas() -> None:
    ids = {random_uuid() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") and set(i) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for i in ids)


def test_nodes_are_named_for_the_control_socket(tmp_path: Path) -> None:
    """`kafkalab broker kill controller-2` and friends resolve without starting anything."""
    dedicated = Cluster(ClusterSpec(tmp_path / "d", mode="kraft", controllers=3), Distribution(tmp_path, "x"))
    dedicated._build_nodes()
    assert dedicated.node("controller-2").node_id == 102 and dedicated.node("102").name == "controller-2"
    assert dedicated.node(2).name == "broker-2" and dedicated.node(2).kind == NodeKind.BROKER
    assert [n.name for n in dedicated.metadata_nodes] == ["controller-1", "controller-2", "controller-3"]
    with pytest.raises(KafkalabError, match=r"controller-1\.\.controller-3"):
        dedicated.node("zookeeper")
    combined = Cluster(ClusterSpec(tmp_path / "c", mode="kraft", controllers=3, combined=True),
                       Distribution(tmp_path, "x"))
    combined._build_nodes()
    assert combined.node("controller-3").name == "broker-3" and combined.metadata_nodes == []
    assert [n.name for n in combined.controllers] == ["broker-1", "broker-2", "broker-3"]
