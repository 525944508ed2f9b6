"""The real `kafkalab` command: cluster up/status/broker/topic/down, and its one-line errors (exit 2)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.cluster import Cluster, ClusterSpec
from kafkalab.cluster.control_socket import ControlServer, write_cluster_file
from kafkalab.cluster.process import marked_processes
from tests.conftest import TEST_STATE_ROOT


def kafkalab(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkalab: error: "), result.stderr
    for word in words:
        assert word in lines[0]


@contextlib.contextmanager
def holding(port: int) -> Iterator[None]:
    """``port`` taken for the block (by this test, or already by someone else: taken either way)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # binds over a TIME_WAIT of the port
    try:
        with contextlib.suppress(OSError):
            sock.bind(("127.0.0.1", port))
            sock.listen()
        yield
    finally:
        sock.close()


def test_cluster_up_on_a_taken_port_says_so_without_stopping_anything(tmp_path: Path) -> None:
    with holding(ClusterSpec(state_dir=tmp_path).zk_port):
        result = kafkalab("cluster", "up", "--state-dir", str(tmp_path / "state"), timeout=60)
    assert_one_line_error(result, "is taken by", "--free-ports")
    assert "stopping the cluster" not in result.stdout + result.stderr


def test_bare_console_on_taken_default_ports_takes_free_ones_and_says_why(tmp_path: Path) -> None:
    from kafkalab.cli.console_cmd import _bare_source, console_args

    args = console_args()
    args.no_lab, args.state_dir = True, tmp_path / "state"
    zk_port = ClusterSpec(state_dir=tmp_path).zk_port
    with holding(zk_port):
        source, broker_ids, _panes = _bare_source(args)
    assert broker_ids == [1, 2, 3]
    assert source.cluster.spec.free_ports  # type: ignore[attr-defined]
    assert f"ports {zk_port}" in source.note and "uses free ones" in source.note  # type: ignore[attr-defined]


@pytest.mark.parametrize("count", ["0", "10"])
def test_broker_count_out_of_range(tmp_path: Path, count: str) -> None:
    result = kafkalab("cluster", "up", "--brokers", count, "--state-dir", str(tmp_path / "s"))
    assert_one_line_error(result, f"--brokers {count}", "1..9")


def test_missing_distribution(tmp_path: Path) -> None:
    result = kafkalab("cluster", "up", "--state-dir", str(tmp_path / "s"), env={"KAFKA_HOME": str(tmp_path)})
    assert_one_line_error(result, "not a Kafka install", "KAFKA_HOME")
    assert not marked_processes(tmp_path / "s")


def test_java_not_on_path(tmp_path: Path) -> None:
    result = kafkalab("cluster", "up", "--state-dir", str(tmp_path / "s"),
                      env={"PATH": str(Path(sys.executable).parent), "JAVA_HOME": ""})
    assert_one_line_error(result, "java not found")


def test_unusable_state_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = kafkalab("cluster", "up", "--state-dir", str(blocker))
    assert_one_line_error(result, str(blocker))
    result = kafkalab("cluster", "status", "--state-dir", str(tmp_path / "nothing-here"))
    assert_one_line_error(result, "no cluster")


@pytest.fixture
def served(cluster: Cluster) -> Iterator[Path]:
    """The shared cluster, reachable by the CLI through its control socket."""
    write_cluster_file(cluster)
    server = ControlServer(cluster, threading.Event())
    try:
        yield cluster.state_dir
    finally:
        server.close()


@pytest.mark.cluster
def test_unknown_broker_id(served: Path) -> None:
    result = kafkalab("broker", "kill", "7", "--state-dir", str(served))
    assert_one_line_error(result, "unknown node '7'", "1, 2, 3")


@pytest.mark.cluster
def test_topic_commands_match_kafka_topics_describe(served: Path, cluster: Cluster) -> None:
    state = ["--state-dir", str(served)]
    assert kafkalab("topic", "create", "cli-topic", "--partitions", "2", "--replication-factor", "3",
                    "--config", "min.insync.replicas=2", *state).returncode == 0
    described = kafkalab("topic", "describe", "cli-topic", *state).stdout.splitlines()
    assert described[0].startswith("Topic: cli-topic\tTopicId: ")
    assert "PartitionCount: 2\tReplicationFactor: 3" in described[0]
    assert "Configs: min.insync.replicas=2" in described[0]
    assert described[1].startswith("\tTopic: cli-topic\tPartition: 0\tLeader: ")
    assert kafkalab("topic", "alter", "cli-topic", "--config", "retention.ms=60000", *state).returncode == 0
    data = json.loads(kafkalab("topic", "describe", "cli-topic", "--json", *state).stdout)
    assert data[0]["configs"]["retention.ms"] == "60000" and len(data[0]["partitions"]) == 2
    assert_one_line_error(kafkalab("topic", "create", "cli-topic", *state), "cannot create topic cli-topic")
    assert kafkalab("topic", "delete", "cli-topic", *state).returncode == 0


@pytest.mark.cluster
def test_detached_cluster_lifecycle(tmp_path: Path) -> None:
    state = TEST_STATE_ROOT / "cli-detached"
    env = {"KAFKALAB_STATE": str(tmp_path)}
    up = kafkalab("cluster", "up", "--detach", "--brokers", "1", "--free-ports", "--state-dir", str(state), env=env)
    try:
        assert up.returncode == 0, up.stderr
        again = kafkalab("cluster", "up", "--brokers", "1", "--state-dir", str(state), env=env)
        assert_one_line_error(again, "already runs")
        status = json.loads(kafkalab("cluster", "status", "--json", env=env).stdout)  # found without --state-dir
        assert status["running"] and [n["state"] for n in status["nodes"]] == ["running", "running"]
        net = kafkalab("net", "status", env=env)  # no flag: the proxies are in every link
        assert net.returncode == 0 and net.stdout.startswith("proxy pid "), net.stdout + net.stderr
        assert "no network fault in force" in net.stdout
        killed = kafkalab("broker", "kill", "1", "--wait", env=env)
        assert killed.returncode == 0 and "killed" in killed.stdout
        started = kafkalab("broker", "start", "1", "--wait", env=env)
        assert started.returncode == 0 and "running" in started.stdout, started.stdout + started.stderr
    finally:
        down = kafkalab("cluster", "down", "--state-dir", str(state), env=env)
    assert down.returncode == 0, down.stderr
    assert not marked_processes(state)


@pytest.mark.cluster
def test_cluster_up_with_no_net_proxies_has_none() -> None:
    state = TEST_STATE_ROOT / "cli-no-proxies"
    up = kafkalab("cluster", "up", "--detach", "--brokers", "1", "--free-ports", "--no-net-proxies",
                  "--state-dir", str(state))
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        facts = json.loads((state / "cluster.json").read_text())
        assert facts["net_proxies"] is False and facts["client_bootstrap"] == facts["bootstrap"]
        assert_one_line_error(kafkalab("net", "status", "--state-dir", str(state)),
                              "runs without network-fault proxies")
        assert not (state / "netfaults").exists()
    finally:
        kafkalab("cluster", "down", "--state-dir", str(state))
    assert not marked_processes(state)


def test_kraft_cluster_from_the_command_line_status_quorum_and_controller_kill() -> None:
    """`cluster up --mode kraft --controllers 3`, the quorum in `cluster status`, `broker kill controller-N`."""
    state = TEST_STATE_ROOT / "cli-kraft"
    up = kafkalab("cluster", "up", "--detach", "--mode", "kraft", "--controllers", "3", "--brokers", "1",
                  "--free-ports", "--state-dir", str(state), timeout=600)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        status = json.loads(kafkalab("cluster", "status", "--json", "--state-dir", str(state)).stdout)
        assert status["mode"] == "kraft"
        assert {n["name"] for n in status["nodes"]} == {"controller-1", "controller-2", "controller-3", "broker-1"}
        for _ in range(30):  # the helper JVM answers once it has compiled and connected
            quorum = json.loads(kafkalab("cluster", "status", "--json", "--state-dir", str(state)).stdout)["quorum"]
            if quorum["reachable"]:
                break
        assert quorum["reachable"], quorum
        assert {v["node_id"] for v in quorum["voters"]} == {101, 102, 103} and quorum["leader"] in (101, 102, 103)
        table = kafkalab("cluster", "status", "--state-dir", str(state)).stdout
        assert f"active controller: node {quorum['leader']}" in table
        standby = next(i for i in (1, 2, 3) if 100 + i != quorum["leader"])
        killed = kafkalab("broker", "kill", f"controller-{standby}", "--wait", "--state-dir", str(state))
        assert killed.returncode == 0 and f"controller-{standby}: killed" in killed.stdout, killed.stderr
        wrong = kafkalab("broker", "kill", "zookeeper", "--state-dir", str(state))
        assert_one_line_error(wrong, "unknown node 'zookeeper'", "controller-1..controller-3")
    finally:
        kafkalab("cluster", "down", "--state-dir", str(state))
    assert not marked_processes(state)


def test_two_clusters_started_at_once_with_free_ports_take_different_ports(tmp_path: Path) -> None:
    """Both find the default ports free before either JVM binds them: the port claims keep them apart."""
    env = {**os.environ, "KAFKALAB_STATE": str(tmp_path / "state")}
    states = [TEST_STATE_ROOT / f"cli-twin-{i}" for i in (1, 2)]
    argv = [sys.executable, "-m", "kafkalab", "cluster", "up", "--detach", "--mode", "kraft", "--brokers", "1",
            "--free-ports"]
    ups = [subprocess.Popen([*argv, "--state-dir", str(state)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env) for state in states]
    try:
        outs = [up.communicate(timeout=600) for up in ups]
        assert [up.returncode for up in ups] == [0, 0], outs
        ports = [{n["port"] for n in json.loads(kafkalab("cluster", "status", "--json", "--state-dir", str(state),
                                                         env=env).stdout)["nodes"]} for state in states]
        assert ports[0] and ports[1] and not ports[0] & ports[1], ports
        facts = [json.loads((state / "cluster.json").read_text()) for state in states]  # the proxies' ports too
        proxied = [{p for n in f["net_ports"] for p in n} | {p for n in f["controller_net_ports"] for p in n}
                   for f in facts]
        assert all(proxied) and not proxied[0] & proxied[1] and not (proxied[0] | proxied[1]) & (ports[0] | ports[1])
    finally:
        for up in ups:
            if up.poll() is None:
                up.kill()
        for state in states:
            kafkalab("cluster", "down", "--state-dir", str(state), env=env)
    assert not any(marked_processes(state) for state in states)
