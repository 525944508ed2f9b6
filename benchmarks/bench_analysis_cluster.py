"""Benchmark: the analysis in local mode and on a one-worker Spark standalone cluster, same corpus, same run.

The corpus (loggen.py, every class injected; 5M sends by default) is given to both as file:// URIs, so
the master is the only difference. Each mode runs in its own process (one SparkContext per process):
the session starts, a first job runs, then ``--runs`` timed jobs; the cluster's worker (master and worker
started from pyspark's jars, on loopback, output in files) gets the same cores and heap as local mode's
driver. The master's overhead is the ratio of the medians. Writes benchmarks/results/analysis-cluster.json.

    .venv/bin/python benchmarks/bench_analysis_cluster.py                   # 5M, 3 runs
    .venv/bin/python benchmarks/bench_analysis_cluster.py --size 500000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import loggen
from benchmarks.bench_analysis import generated
from benchmarks.benchutil import summary, write_results
from tests.spark_standalone import standalone_cluster

# one mode's measurement, in a process of its own; a JSON line per job, then the summary line
MODE_SCRIPT = """
import json, sys, time
from kafkalab.analysis import analyze
from kafkalab.analysis.spark_session import start_session
master, conf, inputs, runs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
t0 = time.monotonic()
spark = start_session(master, conf)
session_s = time.monotonic() - t0
times = []
for i in range(runs + 1):
    t = time.monotonic()
    report = analyze(inputs["producer"], inputs["consumer"], inputs["audit"], session=spark)
    times.append(time.monotonic() - t)
    print(json.dumps({"job": i, "s": times[-1]}), flush=True)
print(json.dumps({"session_s": session_s, "first_job_s": times[0], "job_s": times[1:],
                  "spark": vars(report.spark), "classes": report.classes}), flush=True)
"""


def run_mode(master: str, conf: dict[str, str], inputs: dict[str, list[str]], runs: int,
             progress: Progress, task: Any, label: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [sys.executable, "-c", MODE_SCRIPT, master, json.dumps(conf), json.dumps(inputs), str(runs)]
    progress.update(task, description=f"{label}: starting Spark")
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        last: dict[str, Any] = {}
        for line in proc.stdout:
            last = json.loads(line)
            if "job" in last:
                progress.update(task, description=f"{label}: job {last['job'] + 1}/{runs + 1} "
                                                  f"took {last['s']:.1f} s")
                progress.advance(task)
                progress.console.print(f"{label}: job {last['job'] + 1} {last['s']:.2f} s, load {os.getloadavg()}")
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed (exit {proc.returncode})")
    return last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=5_000_000, help="sends in the generated corpus")
    parser.add_argument("--runs", type=int, default=3, help="timed jobs per mode, after a first one (median)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="local[N] and the worker's cores")
    parser.add_argument("--memory", default="2g", help="local mode's driver heap and the executor's heap")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/kafkalab-bench-analysis"))
    parser.add_argument("--audit", action="store_true", help="also give the audit log to the job")
    args = parser.parse_args()
    console = Console(stderr=True)
    with console.status(f"generating {args.size:,} sends (once; reused later)…"):
        gen = generated(args.data_dir, args.size)
    inputs = {"producer": [f"file://{p}" for p in gen.producer_logs],
              "consumer": [f"file://{p}" for p in gen.consumer_logs],
              "audit": [f"file://{gen.audit_log}"] if args.audit else []}
    want = {k: v for k, v in gen.expected.items() if args.audit or k not in loggen.AUDIT_ONLY}
    load_at_start = os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} jobs"),
                  TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("benchmark", total=2 * (args.runs + 1))
        results["local"] = run_mode(f"local[{args.cores}]", {"spark.driver.memory": args.memory}, inputs,
                                    args.runs, progress, task, "local")
        with tempfile.TemporaryDirectory(prefix="kafkalab-bench-standalone-") as tmp:
            progress.update(task, description="starting a standalone master and worker")
            with standalone_cluster(Path(tmp), cores=args.cores, memory=args.memory) as cluster:
                results["standalone"] = run_mode(cluster.url, {"spark.executor.memory": args.memory}, inputs,
                                                 args.runs, progress, task, "standalone")
    local_median = statistics.median(results["local"]["job_s"])
    cluster_median = statistics.median(results["standalone"]["job_s"])
    correct = {mode: {k: r["classes"][k] for k in want} == want for mode, r in results.items()}
    path = write_results("analysis-cluster", {
        "produced_records": args.size,
        "input_bytes": sum(p.stat().st_size for p in [*gen.producer_logs, *gen.consumer_logs]
                           + ([gen.audit_log] if args.audit else [])),
        "notes": "Each mode in its own process: session start, a first job, then the timed jobs (job_s). Inputs "
                 "as file:// URIs in both. standalone: a master and one worker started from pyspark's jars on "
                 "loopback, the worker with the same cores as local[N] and an executor heap equal to local "
                 "mode's driver heap. overhead = standalone job_s median / local job_s median.",
        "load_avg_at_start": load_at_start,
        "load_avg_at_end": os.getloadavg(),
        "modes": {mode: {"spark": r["spark"], "session_s": round(r["session_s"], 3),
                         "first_job_s": round(r["first_job_s"], 3), "job_s": summary(r["job_s"]),
                         "correct": correct[mode]} for mode, r in results.items()},
        "standalone_overhead": round(cluster_median / local_median, 3),
        "first_job_overhead": round(results["standalone"]["first_job_s"] / results["local"]["first_job_s"], 3),
    })
    console.print(f"{args.size:,}: local {local_median:.1f} s, standalone {cluster_median:.1f} s "
                  f"(x{cluster_median / local_median:.2f}); correct {correct}; load {os.getloadavg()}")
    console.print(f"written {path}")
    return 0 if all(correct.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
