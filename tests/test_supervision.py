"""No JVM outlives kafkalab: a SIGKILLed owner, a failing test, and leftovers from a crashed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from kafkalab.cluster import Cluster, EndCause, NodeState
from kafkalab.cluster.process import marked_processes, node_marker
from kafkalab.errors import KafkalabError
from tests.conftest import TEST_STATE_ROOT, make_spec
from tests.helpers import wait_until

pytestmark = pytest.mark.cluster
KAFKALAB = [sys.executable, "-m", "kafkalab"]


@pytest.mark.parametrize(("mode", "jvms"), [
    ("zookeeper", 2),  # ZooKeeper and one broker
    ("kraft", 3),  # a controller, one broker and the quorum view's helper
])
def test_sigkill_of_kafkalab_leaves_no_jvm(tmp_path: Path, mode: str, jvms: int) -> None:
    state = TEST_STATE_ROOT / f"sigkill-{mode}"
    owner = subprocess.Popen(
        [*KAFKALAB, "cluster", "up", "--daemon", "--brokers", "1", "--state-dir", str(state), "--free-ports",
         "--mode", mode],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "KAFKALAB_STATE": str(tmp_path)},
    )
    try:
        assert owner.stdout is not None
        said = []
        for line in owner.stdout:
            said.append(line.strip())
            if line.startswith("cluster ready") or "error" in line:
                break
        assert len(marked_processes(state)) == jvms, f"{mode}: {jvms} JVMs should run; the owner said {said}"
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    wait_until(lambda: not marked_processes(state), 20, what="every JVM gone after SIGKILL of kafkalab")


def test_next_start_reaps_leftovers_of_a_crashed_run(distribution) -> None:  # type: ignore[no-untyped-def]
    spec = make_spec("reap", brokers=1)
    spec.state_dir.mkdir(parents=True, exist_ok=True)
    # A process whose command line proves it is this state dir's broker, as a crashed run would leave behind.
    leftover = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", node_marker(spec.state_dir, "broker-1")],
        start_new_session=True,
    )
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "-Dkafkalab.node=/elsewhere/x"])
    try:
        with Cluster(spec, distribution) as cluster:
            cluster.start(timeout=120)
            assert cluster.reaped == [f"pid {leftover.pid}"]
            leftover.wait(timeout=10)  # ended by the reaper (it raises TimeoutExpired otherwise)
            assert bystander.poll() is None, "a process of another state dir must not be touched"
            pids = json.loads((spec.state_dir / "nodes.pid.json").read_text())["nodes"]
            assert set(pids) == {"zookeeper", "broker-1"}
    finally:
        leftover.kill()
        bystander.kill()
    assert not marked_processes(spec.state_dir)


def test_a_test_failing_midway_leaves_no_jvm(tmp_path: Path) -> None:
    """A failing test in a separate pytest run: the fixture and the session hook still end every JVM."""
    test_file = tmp_path / "test_fails.py"
    test_file.write_text(textwrap.dedent("""
        def test_fails_with_a_cluster_up(cluster):
            assert cluster.node(1).pid
            raise AssertionError("failing on purpose")
    """))
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(root),
         "--confcutdir", str(root / "tests"), "-c", str(root / "pyproject.toml"), str(test_file),
         "-p", "tests.conftest"],
        capture_output=True, text=True, cwd=root, timeout=300,
    )
    assert "1 failed" in out.stdout, out.stdout[-2000:]
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if any(
        "kafkalab-tests-" in arg and "kafkalab.node" in arg and f"-{os.getpid()}/" not in arg
        for arg in p.info.get("cmdline") or [])]
    assert not leftovers, f"JVMs left by the failing run: {[p.pid for p in leftovers]}"


def test_kraft_shutdown_leaves_no_jvm(distribution) -> None:  # type: ignore[no-untyped-def]
    """A KRaft cluster's controllers, brokers and quorum helper all end with a normal shutdown."""
    spec = make_spec("kraft-shutdown", brokers=1, mode="kraft")
    with Cluster(spec, distribution) as cluster:
        cluster.start(timeout=180)
        wait_until(lambda: cluster.quorum().reachable, 60, interval=0.5, what="the quorum view answering")
        procs = marked_processes(spec.state_dir)
        assert len(procs) == 3 and any("QuorumWatch" in " ".join(p.cmdline()) for p in procs)
    assert not marked_processes(spec.state_dir)


def test_a_process_driving_two_clusters_keeps_both_findable(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry of running clusters has an entry per state dir, not per process: a console whose
    second cluster ended must not hide its first from `console --attach` and `--state-dir`-less commands."""
    from kafkalab.cluster.supervision import StateDirLock, running_state_dirs

    monkeypatch.setenv("KAFKALAB_STATE", str(tmp_path / "state"))
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    locks = [StateDirLock(first), StateDirLock(second)]
    for lock in locks:
        lock.acquire()
    try:
        assert sorted(running_state_dirs()) == [first, second]
        locks[1].release()
        assert running_state_dirs() == [first]
    finally:
        locks[0].release()
    assert running_state_dirs() == []


def test_a_port_another_cluster_claimed_is_named_with_its_state_dir(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --free-ports, a port a starting cluster claimed (not bound yet) is refused, naming that cluster."""
    from kafkalab.cluster.ports import free_port, resolve_and_claim_ports
    from kafkalab.cluster.spec import ClusterSpec
    from kafkalab.cluster.supervision import StateDirLock, claim_ports
    from kafkalab.errors import KafkalabError

    monkeypatch.setenv("KAFKALAB_STATE", str(tmp_path / "state"))
    other = tmp_path / "other"
    port = free_port()
    lock = StateDirLock(other)
    lock.acquire()
    try:
        claim_ports(other, [port])
        spec = ClusterSpec(state_dir=tmp_path / "mine", brokers=1, zk_port=free_port(), broker_ports=[port])
        taken = f"port {port} for broker 1 is taken by the kafkalab cluster in {other}"
        with pytest.raises(KafkalabError, match=taken):
            resolve_and_claim_ports(spec)
        spec.free_ports = True
        resolve_and_claim_ports(spec)
        assert spec.broker_ports != [port]
    finally:
        lock.release()


def test_a_failed_start_ends_the_other_nodes_as_stopped_not_killed(distribution) -> None:  # type: ignore[no-untyped-def]
    """A broker that cannot start fails the cluster's start; kafkalab then ends what it started: ZooKeeper shows
    grey STOPPED with kafkalab as the cause, never a red KILLED (SIGKILL) that nobody applied."""
    spec = make_spec("failed-start", brokers=1, overrides={"offsets.topic.replication.factor": "one"})
    cluster = Cluster(spec, distribution)
    try:
        with pytest.raises(KafkalabError):
            cluster.start(timeout=120)
        zk = cluster.node("zookeeper").info()
        assert (zk.state, zk.cause) == (NodeState.STOPPED, EndCause.ENDED), zk
        assert "the cluster's start failed" in zk.reason
        broker = cluster.node("broker-1").info()
        assert broker.state == NodeState.FAILED and "Invalid value one" in broker.reason, broker  # its own cause
    finally:
        cluster.shutdown(graceful=False, reason="test over")
    assert not marked_processes(spec.state_dir)
