"""ZooKeeper mode and KRaft mode side by side, in the same run: cold start, SIGKILL leader failover, SIGTERM
leader move, controller failover, idle RSS.

    .venv/bin/python benchmarks/bench_modes.py [--runs 5]

Runs alternate between the clusters, each on a fresh state dir on free ports, so all see the same machine
load: ZooKeeper + 3 brokers ("zookeeper"), KRaft's default of one controller + 3 brokers ("kraft_1", the
same four JVMs), a quorum of 3 dedicated controllers + 3 brokers ("kraft", six JVMs), and 3 nodes that are
brokers and controllers at once ("kraft_combined", three JVMs). Each start's CPU time is measured too (every
node's JVM and the formatting JVM, up to ready): a start on two cores cannot be shorter than that CPU time
over the cores, the ceiling no setting of kafkalab's moves. Medians go to benchmarks/results/modes.json,
rewritten after every round.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_cluster import new_leader
from benchmarks.benchutil import summary, write_results
from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.cluster import Cluster, ClusterSpec, NodeState
from kafkalab.cluster.ports import free_port

MODES = ("zookeeper", "kraft_1", "kraft", "kraft_combined")  # name -> controllers below
CONTROLLERS = {"zookeeper": 1, "kraft_1": 1, "kraft": 3, "kraft_combined": 3}
METRICS = ("cold_start_s", "start_cpu_s", "start_cpu_floor_s", "format_s", "sigkill_failover_s",
           "sigterm_failover_s", "controller_failover_s", "idle_rss_mb", "quorum_helper_rss_mb")
GOALS = {"kraft_ready_vs_zookeeper": "<= 1.0", "kraft_1_ready_vs_zookeeper": "<= 1.0",
         "kraft_combined_ready_vs_zookeeper": "<= 1.0", "kraft_sigkill_failover_s": 3.0, "kraft_idle_rss_mb": 1536}


def spec(state_dir: Path, name: str) -> ClusterSpec:
    ports = [free_port() for _ in range(7)]
    mode, controllers = ("zookeeper" if name == "zookeeper" else "kraft"), CONTROLLERS[name]
    return ClusterSpec(state_dir, brokers=3, zk_port=ports[0], broker_ports=ports[1:4],
                       controller_ports=ports[4:4 + controllers] if mode == "kraft" else [], controllers=controllers,
                       mode=mode, combined=name == "kraft_combined", free_ports=True)


def wait_for(probe, timeout: float = 120) -> float:  # type: ignore[no-untyped-def]
    """Seconds until ``probe()`` is true."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if probe():
            return time.monotonic() - started
        time.sleep(0.02)
    raise TimeoutError(f"not reached in {timeout}s")


def one_run(state_dir: Path, mode: str) -> dict[str, float]:
    out: dict[str, float] = {}
    marks: dict[str, float] = {}

    def progress(message: str) -> None:
        marks.setdefault(message.split()[0], time.monotonic())

    t0 = time.monotonic()
    waited_cpu = children_cpu_s()
    with Cluster(spec(state_dir, mode), kafka_install.locate()) as cluster:
        cluster.start(timeout=300, progress=progress)
        admin = Admin(cluster.bootstrap, timeout_s=1.0)
        admin.create_topic("bench", partitions=6, replication_factor=3, configs={"min.insync.replicas": "2"})
        out["cold_start_s"] = time.monotonic() - t0
        out["start_cpu_s"] = children_cpu_s() - waited_cpu + sum(
            sum(psutil.Process(i.pid).cpu_times()[:2]) for i in cluster.infos() if i.pid)
        out["start_cpu_floor_s"] = out["start_cpu_s"] / (os.cpu_count() or 1)
        if "formatting" in marks:  # KRaft's first start formats every node's storage (StorageTool JVMs)
            out["format_s"] = marks["starting"] - marks["formatting"]
        time.sleep(5)  # let the JVMs settle before reading their memory
        out["idle_rss_mb"] = sum(i.rss_bytes or 0 for i in cluster.infos()) / 2**20
        if cluster.spec.kraft:
            wait_for(lambda: cluster.quorum().reachable)
            helper = cluster.quorum_helper_pid
            out["quorum_helper_rss_mb"] = psutil.Process(helper).memory_info().rss / 2**20 if helper else 0.0
        leader = leaders(admin)[0]
        cluster.node(leader).kill()
        out["sigkill_failover_s"] = new_leader(admin, "bench", [0], leader)
        cluster.node(leader).start()
        cluster.wait_state(leader, NodeState.RUNNING, timeout=180)
        admin.wait_for_leaders("bench", 6)
        wait_for(lambda: all(len(p.isr) == 3 for p in admin.snapshot(offsets=False).topic("bench")))
        led_by = leaders(admin)
        leader = led_by[0]
        led = [p for p, b in led_by.items() if b == leader]
        cluster.node(leader).stop()
        out["sigterm_failover_s"] = new_leader(admin, "bench", led, leader)
        cluster.node(leader).start()
        cluster.wait_state(leader, NodeState.RUNNING, timeout=180)
        if not cluster.spec.kraft or cluster.spec.controllers > 1:  # a lone controller has no standby
            out["controller_failover_s"] = controller_failover(cluster, admin)
    return out


def children_cpu_s() -> float:
    """CPU seconds of this process's ended children (the formatting JVM, the helpers' compiler)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def leaders(admin: Admin) -> dict[int, int]:
    """Partition -> leader of the bench topic, once a snapshot answers with every partition led."""
    def probe() -> dict[int, int] | None:
        parts = admin.snapshot(offsets=False).topic("bench")
        return {p.partition: p.leader for p in parts} if parts and all(p.leader for p in parts) else None
    return wait_for_value(probe)  # type: ignore[no-any-return]


def controller_failover(cluster: Cluster, admin: Admin) -> float:
    """Kill the controller; seconds until another one is in charge.

    ZooKeeper mode: the controller is a broker; a new controller is elected through ZooKeeper once the
    killed broker's session expires. KRaft: the active controller of the quorum; the standbys elect one.
    """
    if cluster.spec.kraft:
        old = wait_for_value(lambda: cluster.quorum().leader)
        cluster.node(old).kill()
        return wait_for(lambda: cluster.quorum(timeout_s=1.0).leader not in (None, old))
    wait_for(lambda: admin.snapshot(offsets=False).controller is not None)
    old = admin.snapshot(offsets=False).controller
    cluster.node(old).kill()
    return wait_for(lambda: (c := admin.snapshot(offsets=False).controller) is not None and c != old
                    and cluster.node(c).state == NodeState.RUNNING)


def wait_for_value(probe, timeout: float = 60):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if (value := probe()) is not None:
            return value
        time.sleep(0.1)
    raise TimeoutError(f"no value in {timeout}s")


def results_of(runs: dict[str, list[dict[str, float]]], loads: list[float]) -> dict[str, object]:
    out: dict[str, object] = {"note": "absolute times follow the machine's load: compare the modes with each other",
                              "load_average_1min": summary(loads)}
    for mode, samples in runs.items():
        out[mode] = {m: summary([s[m] for s in samples if m in s]) for m in METRICS
                     if any(m in s for s in samples)}
    zk, kraft = out.get("zookeeper"), out.get("kraft")
    if not (isinstance(zk, dict) and isinstance(kraft, dict) and zk["cold_start_s"]["median"]):
        return out
    for name in ("kraft", "kraft_1", "kraft_combined"):
        if isinstance(cluster := out.get(name), dict):
            ratio = cluster["cold_start_s"]["median"] / zk["cold_start_s"]["median"]
            out[f"{name}_ready_vs_zookeeper"] = round(ratio, 2)
    out["kraft_sigkill_failover_s"] = kraft["sigkill_failover_s"]["median"]
    out["kraft_idle_rss_mb"] = kraft["idle_rss_mb"]["median"]
    out["goals"] = GOALS
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs per mode")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    loads: list[float] = []
    failures: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="kafkalab-bench-modes-"))
    for i in range(args.runs):
        for mode in MODES:
            state_dir = root / f"{mode}-{i + 1}"
            try:
                runs[mode].append(one_run(state_dir, mode))
            except Exception as exc:  # one failed run is a finding, not the end of the benchmark
                failures.append(f"{mode} run {i + 1}: {type(exc).__name__}: {exc} (state dir kept: {state_dir})")
                print(failures[-1], flush=True)
                continue
            shutil.rmtree(state_dir, ignore_errors=True)
            loads.append(os.getloadavg()[0])
            print(f"{mode} run {i + 1}: { {k: round(v, 2) for k, v in runs[mode][-1].items()} }", flush=True)
        path = write_results("modes", {**results_of(runs, loads), "failures": failures})
    print(path)


if __name__ == "__main__":
    main()
