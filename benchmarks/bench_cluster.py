"""Cluster engine benchmarks: cold start, SIGKILL and SIGTERM failover (demo vs Kafka defaults), idle RSS.

    .venv/bin/python benchmarks/bench_cluster.py [--runs 5]

Each run starts a fresh cluster (ZooKeeper + 3 brokers) in a new state dir on free ports.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.benchutil import summary, write_results
from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.cluster import Cluster, ClusterSpec, NodeState
from kafkalab.cluster.ports import free_port

# Kafka's own values for every setting the demo profile changes.
KAFKA_DEFAULTS = {
    "zookeeper.session.timeout.ms": "18000",
    "replica.lag.time.max.ms": "30000",
    "controlled.shutdown.retry.backoff.ms": "5000",
    "group.initial.rebalance.delay.ms": "3000",
    "leader.imbalance.check.interval.seconds": "300",
}


def spec(root: Path, overrides: dict[str, str]) -> ClusterSpec:
    ports = [free_port() for _ in range(4)]
    return ClusterSpec(tempfile.mkdtemp(dir=root), brokers=3, zk_port=ports[0], broker_ports=ports[1:],
                       free_ports=True, overrides=overrides)


def new_leader(admin: Admin, topic: str, partitions: list[int], old: int, timeout: float = 120) -> float:
    """Seconds until every partition in ``partitions`` has a leader other than ``old``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        parts = admin.snapshot(offsets=False).topic(topic)
        if parts and all(p.leader not in (None, old) for p in parts if p.partition in partitions):
            return time.monotonic() - started
        time.sleep(0.02)
    raise TimeoutError(f"no new leader for {topic} {partitions} in {timeout}s")


def one_run(root: Path, overrides: dict[str, str], measure_start: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    t0 = time.monotonic()
    with Cluster(spec(root, overrides), kafka_install.locate()) as cluster:
        cluster.start(timeout=180)
        admin = Admin(cluster.bootstrap, timeout_s=1.0)
        admin.create_topic("bench", partitions=6, replication_factor=3, configs={"min.insync.replicas": "2"})
        out["cold_start_s"] = time.monotonic() - t0
        if measure_start:
            time.sleep(5)  # let the JVMs settle before reading their memory
            out["idle_rss_mb"] = sum(i.rss_bytes or 0 for i in cluster.infos()) / 2**20
        leader = admin.snapshot().partition("bench", 0).leader
        cluster.node(leader).kill()
        out["sigkill_failover_s"] = new_leader(admin, "bench", [0], leader)
        cluster.node(leader).start()
        cluster.wait_state(leader, NodeState.RUNNING, timeout=120)
        admin.wait_for_leaders("bench", 6)
        time.sleep(2)
        snap = admin.snapshot()
        leader = snap.partition("bench", 0).leader
        led = [p.partition for p in snap.topic("bench") if p.leader == leader]
        cluster.node(leader).stop()
        out["sigterm_failover_s"] = new_leader(admin, "bench", led, leader)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--default-runs", type=int, default=3, help="runs with Kafka's default settings")
    args = parser.parse_args()
    demo: list[dict[str, float]] = []
    defaults: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as tmp:
        root = Path(tmp)
        for i in range(max(args.runs, args.default_runs)):
            if i < args.runs:
                demo.append(one_run(root, {}, measure_start=True))
                print(f"demo run {i + 1}: {demo[-1]}", flush=True)
            if i < args.default_runs:
                defaults.append(one_run(root, KAFKA_DEFAULTS, measure_start=False))
                print(f"defaults run {i + 1}: {defaults[-1]}", flush=True)
    results = {
        "cold_start_s": summary([r["cold_start_s"] for r in demo]),
        "sigkill_failover_s": summary([r["sigkill_failover_s"] for r in demo]),
        "sigkill_failover_kafka_defaults_s": summary([r["sigkill_failover_s"] for r in defaults]),
        "sigterm_failover_s": summary([r["sigterm_failover_s"] for r in demo]),
        "idle_rss_mb": summary([r["idle_rss_mb"] for r in demo]),
        "goals": {"cold_start_s": 15, "sigkill_failover_s": 5, "sigterm_failover_s": 2, "idle_rss_mb": 1536},
    }
    results["sigkill_speedup_vs_kafka_defaults"] = round(
        results["sigkill_failover_kafka_defaults_s"]["median"] / results["sigkill_failover_s"]["median"], 2)
    print(write_results("cluster", results))
    for key in ("cold_start_s", "sigkill_failover_s", "sigkill_failover_kafka_defaults_s", "sigterm_failover_s",
                "idle_rss_mb"):
        print(f"{key:40s} median {results[key]['median']}")
    print(f"SIGKILL failover speed-up vs Kafka defaults: {results['sigkill_speedup_vs_kafka_defaults']}x")


if __name__ == "__main__":
    main()
