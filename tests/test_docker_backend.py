"""The docker backend: containers as nodes, host network, same paths, labels, stats, logs, reaping, errors."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import psutil
import pytest

from kafkalab import KAFKA_VERSION, kafka_install
from kafkalab.admin import Admin
from kafkalab.cluster import Cluster, NodeState
from kafkalab.cluster.configs import QUORUM_WATCH_DIR
from kafkalab.cluster.control_socket import ControlServer, read_cluster_file
from kafkalab.cluster.docker_backend import (
    LABEL_NODE,
    LABEL_STATE_DIR,
    DockerBackend,
    bind_mounts,
    connect_engine,
    container_name,
    cpu_percent,
    memory_in_use,
)
from kafkalab.cluster.docker_image import mmdebstrap_command
from kafkalab.cluster.process import marked_processes, node_marker
from kafkalab.cluster.quorum import QuorumState
from kafkalab.cluster.supervision import is_driven
from kafkalab.errors import KafkalabError
from tests import test_cluster_engine as engine_tests  # the engine's failover tests, run here in containers
from tests import test_kraft_cluster as kraft_mode  # its controller failover, too
from tests import test_net_cluster as net_tests  # network faults, run here on containers
from tests import test_net_kraft_cluster as net_kraft_tests
from tests.conftest import TEST_STATE_ROOT
from tests.docker_fixtures import DOCKER_IMAGE
from tests.helpers import wait_until
from tests.test_cli_cluster import assert_one_line_error, kafkalab
from tests.test_kraft_cluster import VOTERS, answered

NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


# ---- without an engine -----------------------------------------------------------------------------
def test_mounts_jars_read_only_and_the_node_dir_read_write_at_their_host_paths(tmp_path: Path) -> None:
    node_dir = tmp_path / "state" / "broker-1"
    argv = ["java", "-Xmx64m", node_marker(tmp_path / "state", "broker-1"), "-cp", "/opt/kafka/libs/*",
            "kafka.Kafka", str(node_dir / "server.properties")]
    assert bind_mounts(argv) == {
        "/opt/kafka/libs": {"bind": "/opt/kafka/libs", "mode": "ro"},
        str(node_dir): {"bind": str(node_dir), "mode": "rw"},
    }


def test_container_names_differ_per_state_dir_and_node(tmp_path: Path) -> None:
    names = {container_name(tmp_path / d, n) for d in ("a", "b") for n in ("zookeeper", "broker-1")}
    assert len(names) == 4 and all(n.startswith("kafkalab-") for n in names)
    assert container_name(tmp_path / "a", "broker-1") == container_name(tmp_path / "a", "broker-1")


@pytest.mark.parametrize(("memory", "expected"), [
    ({"usage": 300, "stats": {"total_inactive_file": 100}}, 200),  # cgroup v1
    ({"usage": 300, "stats": {"inactive_file": 50}}, 250),  # cgroup v2
    ({}, 0),  # an exited container
])
def test_memory_is_usage_less_inactive_page_cache(memory: dict[str, object], expected: int) -> None:
    assert memory_in_use(memory) == expected


def test_cpu_percent_is_the_share_of_system_time_between_two_samples_times_cpus() -> None:
    stats = {"cpu_stats": {"cpu_usage": {"total_usage": 1_500}, "system_cpu_usage": 12_000, "online_cpus": 2},
             "precpu_stats": {"cpu_usage": {"total_usage": 500}, "system_cpu_usage": 10_000}}
    assert cpu_percent(stats) == 100.0  # 1000 of 2000 system ticks on a 2-CPU machine: one full CPU
    assert cpu_percent({**stats, "precpu_stats": {}}) == 0.0  # the stream's first sample has no predecessor


def test_image_is_debian_minbase_with_a_headless_jre(tmp_path: Path) -> None:
    cmd = mmdebstrap_command(tmp_path / "rootfs.tar")
    assert "--variant=minbase" in cmd and "--include=openjdk-17-jre-headless" in cmd
    assert cmd[-3:] == ["bookworm", str(tmp_path / "rootfs.tar"), "http://deb.debian.org/debian"]


def test_unreachable_engine_is_one_line_naming_the_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE["DOCKER_HOST"])
    with pytest.raises(KafkalabError, match=r"^Docker engine not reachable at unix:///nonexistent/docker.sock: "
                                            r"start Docker or use --backend local$"):
        connect_engine()


def test_cluster_up_without_engine_exits_2_and_starts_nothing(tmp_path: Path) -> None:
    result = kafkalab("cluster", "up", "--backend", "docker", "--free-ports", "--state-dir", str(tmp_path / "s"),
                      env=NO_ENGINE)
    assert_one_line_error(result, "Docker engine not reachable", "--backend local")
    result = kafkalab("docker", "build-image", env=NO_ENGINE)
    assert_one_line_error(result, "Docker engine not reachable")


# ---- with an engine ----------------------------------------------------------------------------------
def launch_probe(backend: DockerBackend, state_dir: Path, name: str, script: str) -> tuple[object, Path]:
    """A shell in the image as a node of ``state_dir`` (the marker is the shell's $0)."""
    node_dir = state_dir / name
    (node_dir / "logs").mkdir(parents=True, exist_ok=True)
    stdout = node_dir / "logs" / "stdout.log"
    return backend.launch(name, ["sh", "-c", script, node_marker(state_dir, name)], stdout), stdout


@pytest.mark.docker
def test_status_says_whether_network_faults_work_on_this_engine(docker_client: docker.DockerClient) -> None:
    """The suite's engine is rootful and on this machine: the proxy can see into its containers."""
    status = json.loads(kafkalab("docker", "status", "--json").stdout)
    assert (status["net_faults"], status["net_faults_why_not"]) == (True, None), status
    assert "network faults: yes, through kafkalab's proxies" in kafkalab("docker", "status").stdout


@pytest.mark.docker
def test_missing_image_is_one_line_naming_the_fix(docker_client: docker.DockerClient) -> None:
    with pytest.raises(KafkalabError, match=r"image kafkalab/no-such-image:0 not found .*kafkalab docker build-image"):
        DockerBackend("kafkalab/no-such-image:0")


@pytest.mark.docker
def test_log_stream_reaches_the_stdout_file_and_exit_code_is_kept(docker_client: docker.DockerClient) -> None:
    state_dir = TEST_STATE_ROOT / "docker-probe"
    backend = DockerBackend(DOCKER_IMAGE)
    try:
        proc, stdout = launch_probe(backend, state_dir, "probe", "java -version; echo uid=$(id -u); exit 3")
        wait_until(lambda: proc.poll() is not None, 60, what="the probe container to exit")
        assert proc.poll() == 3
        text = stdout.read_text()
        assert "openjdk version \"17" in text and f"uid={os.getuid()}" in text
        wait_until(lambda: not backend.containers(state_dir), 30, what="the exited container removed")
    finally:
        backend.reap(state_dir)
        backend.close()


@pytest.mark.docker
def test_reap_removes_only_the_containers_of_its_state_dir(docker_client: docker.DockerClient) -> None:
    mine, other = TEST_STATE_ROOT / "docker-reap-a", TEST_STATE_ROOT / "docker-reap-b"
    backend = DockerBackend(DOCKER_IMAGE)
    stranger = docker_client.containers.run(DOCKER_IMAGE, ["sleep", "300"], detach=True, network_mode="host")
    try:
        launch_probe(backend, mine, "zookeeper", "sleep 300")
        launch_probe(backend, mine, "broker-1", "sleep 300")
        launch_probe(backend, other, "broker-1", "sleep 300")
        ended = backend.reap(mine)
        assert sorted(ended) == sorted(f"container {container_name(mine, n)}" for n in ("zookeeper", "broker-1"))
        assert not backend.containers(mine)
        assert [c.labels[LABEL_NODE] for c in backend.containers(other)] == ["broker-1"]
        stranger.reload()
        assert stranger.status == "running"
    finally:
        backend.reap(mine)
        backend.reap(other)
        backend.close()
        stranger.remove(force=True)


@pytest.mark.docker
def test_nodes_run_in_labelled_host_network_containers_with_stats(
    docker_cluster: Cluster, docker_client: docker.DockerClient
) -> None:
    containers = {c.labels[LABEL_NODE]: c for c in docker_client.containers.list(
        filters={"label": f"{LABEL_STATE_DIR}={docker_cluster.state_dir}"})}
    assert set(containers) == {"zookeeper", "broker-1", "broker-2", "broker-3"}
    for name, container in containers.items():
        host = container.attrs["HostConfig"]
        assert host["NetworkMode"] == "host"
        node_dir = str(docker_cluster.spec.node_dir(name))
        mounts = {m["Destination"]: m for m in container.attrs["Mounts"]}
        assert mounts[node_dir]["Source"] == node_dir and mounts[node_dir]["RW"]
        assert mounts[str(docker_cluster.dist.libs)]["RW"] is False
    time.sleep(2.5)  # the stats stream's second sample carries the first CPU figure
    infos = {i.name: i for i in docker_cluster.infos() if i.state == NodeState.RUNNING}
    assert infos, "no node running"
    for info in infos.values():
        assert info.pid and info.rss_bytes > 10 * 2**20, info
    assert any(i.cpu_percent > 0 for i in infos.values())
    assert any("started (kafka.server.KafkaServer)" in line for line in docker_cluster.node(1).log_tail(2000))


def cli_up(state: Path, env: dict[str, str], *options: str) -> dict[str, Any]:
    """`cluster up --backend docker --detach` with one broker (and ``options``): every node running; its status."""
    result = kafkalab("cluster", "up", "--backend", "docker", "--image", DOCKER_IMAGE, "--detach", "--brokers", "1",
                      "--free-ports", "--state-dir", str(state), *options, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    status: dict[str, Any] = json.loads(
        kafkalab("cluster", "status", "--json", "--state-dir", str(state), env=env).stdout)
    assert [n["state"] for n in status["nodes"]] == ["running", "running"]
    return status


def cli_down(state: Path, env: dict[str, str], client: docker.DockerClient) -> tuple[
        subprocess.CompletedProcess[str] | None, list[str]]:
    """`cluster down` while the cluster is driven, then every container of ``state`` removed: (down, leftovers)."""
    down = kafkalab("cluster", "down", "--state-dir", str(state), env=env) if is_driven(state) else None
    leftovers = client.containers.list(all=True, filters={"label": f"{LABEL_STATE_DIR}={state}"})
    for container in leftovers:
        container.remove(force=True)
    return down, [str(c.name) for c in leftovers]


@pytest.mark.docker
@pytest.mark.cluster
@pytest.mark.parametrize(("mode", "version"), [
    ("zookeeper", KAFKA_VERSION), ("kraft", KAFKA_VERSION), ("kraft", "4.4.0"),
], ids=["zookeeper", "kraft", "kraft-4.4.0"])
def test_cli_drives_a_docker_cluster_and_the_next_start_reaps_a_crashed_run(
    mode: str, version: str, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    """Also in KRaft mode: the quorum helper, a host JVM, ends with its crashed owner; none is left after down.

    On Kafka 4.4 too: the containers mount and run the 4.4.0 jars (the image is the same Java 17).
    """
    state = TEST_STATE_ROOT / f"cli-docker-{mode}-{version}"
    platform = ["--mode", mode, "--kafka-version", version]
    env = {"KAFKALAB_STATE": str(tmp_path)}
    labelled = {"label": f"{LABEL_STATE_DIR}={state}"}
    metadata_node = "controller-1" if mode == "kraft" else "zookeeper"
    helper_marker = node_marker(state, QUORUM_WATCH_DIR)

    def quorum_helpers() -> list[psutil.Process]:  # the containers' JVMs carry markers too, seen from here
        return [p for p in marked_processes(state) if helper_marker in p.info["cmdline"]]

    def quorum() -> dict[str, Any] | None:
        out = kafkalab("cluster", "status", "--json", "--state-dir", str(state), env=env).stdout
        answer = json.loads(out)["quorum"]
        return answer if answer and answer["reachable"] else None

    try:
        status = cli_up(state, env, *platform)
        assert [n["name"] for n in status["nodes"]] == [metadata_node, "broker-1"] and status["mode"] == mode
        containers = {c.labels[LABEL_NODE]: c for c in docker_client.containers.list(filters=labelled)}
        assert set(containers) == {metadata_node, "broker-1"}
        jars = kafka_install.locate(version=version).libs
        assert {m["Source"] for m in containers["broker-1"].attrs["Mounts"] if not m["RW"]} == {str(jars)}
        started = re.findall(r"Kafka version: (\S+)", (state / "broker-1" / "logs" / "server.log").read_text())
        assert started and set(started) == {version}  # the broker in the container is the release asked for
        if mode == "kraft":
            assert wait_until(quorum, 60, interval=1, what="the quorum in `cluster status`")["leader"] == 101
            assert len(quorum_helpers()) == 1
        killed = kafkalab("broker", "kill", "1", "--wait", "--state-dir", str(state), env=env)
        assert killed.returncode == 0 and "killed" in killed.stdout, killed.stdout + killed.stderr
        wait_until(lambda: len(docker_client.containers.list(all=True, filters=labelled)) == 1, 30,
                   what="the killed broker's container gone")
        os.kill(int(read_cluster_file(state)["owner_pid"]), signal.SIGKILL)  # kafkalab crashes
        wait_until(lambda: not is_driven(state), 30, what="the crashed owner's lock released")
        wait_until(lambda: not quorum_helpers(), 30, what="the quorum helper ended with its owner")
        cli_up(state, env, *platform)  # the next start ends the crashed run's container, then starts afresh
        log = (state / "owner.log").read_text()
        assert f"ended leftovers of a crashed run: container {container_name(state, metadata_node)}" in log
        assert "formatting" not in log  # KRaft: the storage of the first start is kept
    finally:
        down, leftovers = cli_down(state, env, docker_client)
        jvms = marked_processes(state)
        for proc in jvms:
            proc.kill()
    assert down is not None and down.returncode == 0, down and down.stderr
    assert not leftovers and not jvms


# ---- KRaft mode in containers --------------------------------------------------------------------------
def first_answer(cluster: Cluster) -> QuorumState:
    return wait_until(lambda: answered(cluster), 90, interval=0.5, what="a DescribeQuorum answer")


@pytest.mark.docker
@pytest.mark.cluster
def test_kraft_controllers_and_brokers_run_in_containers_and_the_quorum_view_answers(
    docker_kraft_cluster: Cluster, docker_client: docker.DockerClient
) -> None:
    cluster = docker_kraft_cluster
    containers = {c.labels[LABEL_NODE]: c for c in docker_client.containers.list(
        filters={"label": f"{LABEL_STATE_DIR}={cluster.state_dir}"})}
    assert set(containers) == {"controller-1", "controller-2", "controller-3", "broker-1", "broker-2", "broker-3"}
    assert all(c.attrs["HostConfig"]["NetworkMode"] == "host" for c in containers.values())
    for name in ("controller-2", "broker-3"):  # formatted on the host, in the dir the container mounts
        node = cluster.node(name)
        assert node.node_id is not None
        assert f"[KafkaRaftServer nodeId={node.node_id}] Kafka Server started" in node.log_path.read_text()
        assert list(node.node_dir.glob("*/meta.properties"))
    q = first_answer(cluster)
    assert q.leader in VOTERS and q.epoch and q.high_watermark
    assert {r.node_id for r in q.voters} == VOTERS
    assert {r.node_id for r in q.observers} == {1, 2, 3}
    helper = psutil.Process(cluster.quorum_helper_pid)  # a host JVM, a client of the loopback controller ports
    assert node_marker(cluster.state_dir, QUORUM_WATCH_DIR) in helper.cmdline()
    assert helper.pid not in {c.attrs["State"]["Pid"] for c in containers.values()}


@pytest.mark.docker
@pytest.mark.cluster
@pytest.mark.parametrize("engine_test", [
    engine_tests.test_sigkill_of_leader_elects_new_leader_from_isr_and_restart_restores_isr,
    engine_tests.test_sigterm_moves_leadership_before_the_process_exits,
    engine_tests.test_paused_follower_leaves_isr_and_returns_on_resume,
], ids=["sigkill-leader", "sigterm-leader", "pause-follower"])
def test_kraft_brokers_in_containers_fail_over_as_local_ones_do(
    engine_test: Callable[[tuple[Cluster, Admin, Callable[..., str]]], None],
    docker_kraft_engine: tuple[Cluster, Admin, Callable[..., str]],
) -> None:
    engine_test(docker_kraft_engine)


@pytest.mark.docker
@pytest.mark.cluster
def test_kraft_sigkill_of_the_active_controller_container_elects_another(docker_kraft_cluster: Cluster) -> None:
    kraft_mode.test_killing_the_active_controller_elects_another(docker_kraft_cluster)


@pytest.mark.docker
@pytest.mark.cluster
def test_kraft_a_controller_container_pauses_resumes_and_restarts(
    docker_kraft_cluster: Cluster, docker_client: docker.DockerClient
) -> None:
    q = first_answer(docker_kraft_cluster)
    cluster, follower_id = docker_kraft_cluster, next(r.node_id for r in q.voters if r.node_id != q.leader)
    follower = cluster.node(str(follower_id))
    container = docker_client.containers.get(container_name(cluster.state_dir, follower.name))
    follower.pause()
    try:
        container.reload()
        assert follower.state == NodeState.PAUSED and container.status == "paused"
        # the active controller appends a record every 500 ms: a frozen voter falls behind
        wait_until(lambda: (s := answered(cluster)) and (r := s.replica(follower_id))
                   and r.lag is not None and r.lag > 0, 60, interval=0.5, what=f"{follower.name} lagging")
    finally:
        follower.resume()
    container.reload()
    assert follower.state == NodeState.RUNNING and container.status == "running"
    follower.restart()  # SIGTERM, then a new container once it has exited
    wait_until(lambda: follower.restarts == 1 and follower.state == NodeState.RUNNING, 120,
               what=f"{follower.name} restarted")
    assert follower.state == NodeState.RUNNING
    wait_until(lambda: (s := answered(cluster)) and (r := s.replica(follower_id))
               and r.lag is not None and r.lag < 50, 90, interval=0.5, what=f"{follower.name} caught up")


# ---- network faults on docker -------------------------------------------------------------------------
@contextlib.contextmanager
def served(cluster: Cluster, topic: str) -> Iterator[Path]:
    """The cluster's control socket served (for `kafkalab net ...`) and ``topic`` made as the net tests make it."""
    Admin(cluster.bootstrap, timeout_s=5).create_topic(topic, 6, 3, {"min.insync.replicas": "1"}, timeout_s=60)
    server = ControlServer(cluster, threading.Event())
    try:
        yield cluster.state_dir
    finally:
        server.close()


def containers_seen_by_the_proxy(cluster: Cluster, client: docker.DockerClient) -> None:
    """Every node registered with the proxy under its container's JVM (a host pid), none hidden from it."""
    assert cluster.net is not None and not cluster.net.problems, cluster.net and cluster.net.problems
    pids = {c.labels[LABEL_NODE]: c.attrs["State"]["Pid"] for c in client.containers.list(
        filters={"label": f"{LABEL_STATE_DIR}={cluster.state_dir}"})}
    assert cluster.net.status().nodes == pids


@pytest.mark.docker
@pytest.mark.cluster
def test_an_isolated_broker_container_drops_out_of_every_isr_and_heals(
        docker_cluster: Cluster, docker_client: docker.DockerClient, capsys: pytest.CaptureFixture[str]) -> None:
    """The proxy tells the containers apart as it does local JVMs: by the process owning the connecting socket,
    a container's JVM being a process of this host, on its network, run as this user."""
    containers_seen_by_the_proxy(docker_cluster, docker_client)
    with served(docker_cluster, "docker-net") as owner:
        net_tests.test_an_isolated_leader_drops_out_of_every_isr_but_still_answers_its_clients(
            docker_cluster, owner, "docker-net", capsys)


@pytest.mark.docker
@pytest.mark.cluster
def test_kraft_an_isolated_broker_container_is_fenced_and_heals(
        docker_kraft_cluster: Cluster, docker_client: docker.DockerClient,
        capsys: pytest.CaptureFixture[str]) -> None:
    containers_seen_by_the_proxy(docker_kraft_cluster, docker_client)
    with served(docker_kraft_cluster, "docker-net-kraft") as owner:
        net_kraft_tests.test_an_isolated_broker_is_fenced_and_loses_its_leaderships_but_still_answers_a_client(
            docker_kraft_cluster, owner, "docker-net-kraft", capsys)
