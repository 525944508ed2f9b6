"""Docker backend beside the local one, same run: cold start to ready, SIGKILL failover, image preparation.

    bash scripts/with-docker-engine.sh .venv/bin/python benchmarks/bench_docker.py [--runs 3]

Each run starts a fresh cluster per backend and mode in a new state dir on free ports: ZooKeeper + 3
brokers, and KRaft with 3 dedicated controllers + 3 brokers (its cold start includes formatting the
storage). It creates a 6-partition topic with replication factor 3, then SIGKILLs partition 0's leader and
times the election of a new one. Runs alternate between the four so all see the same machine load, which
is recorded (1-minute load average at each run's start).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bench_cluster, bench_modes
from benchmarks.bench_cluster import new_leader
from benchmarks.benchutil import summary, write_results
from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.cluster import Cluster
from kafkalab.cluster.docker_backend import DockerBackend, connect_engine
from kafkalab.cluster.docker_image import DEFAULT_IMAGE, ensure_image
from kafkalab.cluster.process import Backend, LocalBackend
from kafkalab.errors import KafkalabError

SETUPS = ("local", "docker", "local-kraft", "docker-kraft")
METRICS = ("cold_start_s", "sigkill_failover_s")


def one_run(root: Path, backend: Backend, kraft: bool) -> dict[str, float]:
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    spec = bench_modes.spec(root, "kraft") if kraft else bench_cluster.spec(root, {})
    with Cluster(spec, kafka_install.locate(), backend=backend) as cluster:
        cluster.start(timeout=300)
        admin = Admin(cluster.bootstrap, timeout_s=1.0)
        admin.create_topic("bench", partitions=6, replication_factor=3, configs={"min.insync.replicas": "2"})
        cold_start = time.monotonic() - t0
        leader = bench_modes.leaders(admin)[0]  # a snapshot may time out on a loaded machine: retried
        cluster.node(leader).kill()
        failover = new_leader(admin, "bench", [0], leader)
    return {"cold_start_s": cold_start, "sigkill_failover_s": failover, "load_1m": load}


def failure_note(exc: KafkalabError) -> str:
    """Why a run failed: the error, and the failed node's first ERROR line (its log goes with the temp dir)."""
    found = re.search(r"\(log: (\S+)\)", str(exc))
    try:
        lines = Path(found.group(1)).read_text(errors="replace").splitlines() if found else []
    except OSError:
        lines = []
    first = next((ln for ln in lines if "] ERROR " in ln), "")
    return f"{exc} | {first[:300]}" if first else str(exc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--image", default=DEFAULT_IMAGE)
    args = parser.parse_args()
    client = connect_engine(timeout=600)
    started = time.monotonic()
    prepared = ensure_image(client, args.image, progress=print)
    image = {"image": args.image, "how": prepared, "seconds": round(time.monotonic() - started, 1)}
    print(f"image {args.image}: {prepared} in {image['seconds']}s", flush=True)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in SETUPS}
    failures: dict[str, list[str]] = {name: [] for name in SETUPS}  # a start that failed under load is a result
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as tmp:
        for i in range(args.runs):
            for name in SETUPS:
                backend = DockerBackend(args.image) if name.startswith("docker") else LocalBackend()
                try:
                    samples[name].append(one_run(Path(tmp), backend, kraft=name.endswith("kraft")))
                except KafkalabError as exc:
                    failures[name].append(failure_note(exc))
                    print(f"run {i + 1} {name}: FAILED {failures[name][-1]}", flush=True)
                    continue
                print(f"run {i + 1} {name}: {samples[name][-1]}", flush=True)
    results: dict[str, object] = {
        name: {**{key: summary([r[key] for r in runs]) for key in (*METRICS, "load_1m")},
               "failures": failures[name]}
        for name, runs in samples.items()
    }
    results["image_preparation"] = image
    results["engine"] = client.version().get("Version")
    print(write_results("docker", results))
    for key in METRICS:
        print(f"{key:22s} " + "  ".join(f"{name} median {results[name][key]['median']}"  # type: ignore[index]
                                        for name in SETUPS))


if __name__ == "__main__":
    main()
