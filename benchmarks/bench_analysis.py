"""Benchmark: the analysis job (cold and warm SparkSession) against the course's `sort` + `diff`.

For each size, generated logs with injected anomalies (see loggen.py) are analysed by
``kafkalab.analysis.analyze`` and, on the same data in the same run, the course's method is timed:
``LC_ALL=C sort`` of the producer and consumer seed-format logs, then ``diff``. Also timed in the same
session: the floor, the least a Spark job comparing the logs does (the job's CSV reader, rows grouped by
message id, ids not seen exactly twice counted). Medians of several runs; the driver JVM's peak resident
memory (VmHWM) is reported. Writes benchmarks/results/analysis.json.

    .venv/bin/python benchmarks/bench_analysis.py                 # 500k and 5M, 3 runs each
    .venv/bin/python benchmarks/bench_analysis.py --sizes 500000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import loggen
from benchmarks.benchutil import floor_job_s, summary, write_results
from kafkalab.analysis import WarmSession, analyze

COLD_SCRIPT = """
import json, sys, time
t0 = time.monotonic()
from kafkalab.analysis import analyze
from kafkalab.analysis.spark_session import start_session
spark = start_session(sys.argv[1])
t1 = time.monotonic()
args = json.loads(sys.argv[2])
report = analyze(args["producer"], args["consumer"], args["audit"], session=spark)
t2 = time.monotonic()
pid = spark.sparkContext._gateway.proc.pid
hwm = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM"))
print(json.dumps({"session_s": t1 - t0, "job_s": t2 - t1, "total_s": t2 - t0, "jvm_peak_rss_mb": hwm / 1024,
                  "classes": report.classes}))
"""


def sort_diff(data: Path) -> tuple[float, int]:
    """The course's method on the seed-format logs: sort both, diff, count the lines."""
    script = (f"LC_ALL=C sort {data}/producer.seed > {data}/producer.sorted && "
              f"LC_ALL=C sort {data}/consumer.seed > {data}/consumer.sorted && "
              f"diff {data}/producer.sorted {data}/consumer.sorted | wc -l")
    start = time.monotonic()
    out = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout
    return time.monotonic() - start, int(out.strip())


def jvm_peak_rss_mb(warm: WarmSession) -> float:
    pid = warm.get().sparkContext._gateway.proc.pid
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM")) / 1024


def generated(root: Path, size: int) -> loggen.Generated:
    """Generate once per size and seed; later runs reuse the files (generation takes a while at 5M)."""
    out = root / f"n{size}"
    marker = out / "expected.json"
    if marker.exists():
        meta = json.loads(marker.read_text())
        return loggen.Generated([Path(p) for p in meta["producer"]], [Path(p) for p in meta["consumer"]],
                                Path(meta["audit"]), out / "producer.seed", out / "consumer.seed", meta["expected"])
    gen = loggen.generate(out, size)
    marker.write_text(json.dumps({"producer": [str(p) for p in gen.producer_logs],
                                  "consumer": [str(p) for p in gen.consumer_logs],
                                  "audit": str(gen.audit_log), "expected": gen.expected}))
    return gen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[500_000, 5_000_000])
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/kafkalab-bench-analysis"))
    parser.add_argument("--audit", action="store_true", help="also give the audit log to the job")
    args = parser.parse_args()
    console = Console(stderr=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    with console.status("starting a warm SparkSession in the background…"):
        warm = WarmSession(args.master).start()
        datasets = {size: generated(args.data_dir, size) for size in args.sizes}
        warm.get()
    results = []
    steps = len(args.sizes) * (args.cold_runs + 3 * args.runs)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console) as progress:
        task = progress.add_task("benchmark", total=steps)
        for size, gen in datasets.items():
            audit = [str(gen.audit_log)] if args.audit else []
            inputs = {"producer": [str(p) for p in gen.producer_logs],
                      "consumer": [str(p) for p in gen.consumer_logs], "audit": audit}
            cold = []
            for i in range(args.cold_runs):
                progress.update(task, description=f"{size:,}: cold {i + 1}/{args.cold_runs}")
                proc = subprocess.run([sys.executable, "-c", COLD_SCRIPT, args.master, json.dumps(inputs)],
                                      check=True, capture_output=True, text=True, env=env)
                cold.append(json.loads(proc.stdout.strip().splitlines()[-1]))
                progress.advance(task)
            warm_times, baseline_times, floor_times = [], [], []
            report = None
            diff_lines = 0
            for i in range(args.runs):
                progress.update(task, description=f"{size:,}: sort+diff {i + 1}/{args.runs}")
                seconds, diff_lines = sort_diff(gen.seed_producer.parent)
                baseline_times.append(seconds)
                progress.advance(task)
                progress.update(task, description=f"{size:,}: warm job {i + 1}/{args.runs}")
                start = time.monotonic()
                report = analyze(inputs["producer"], inputs["consumer"], audit, session=warm)
                warm_times.append(time.monotonic() - start)
                progress.advance(task)
                progress.update(task, description=f"{size:,}: floor job {i + 1}/{args.runs}")
                floor_times.append(floor_job_s(warm.get(), gen.producer_logs, gen.consumer_logs))
                progress.advance(task)
            assert report is not None
            want = {k: v for k, v in gen.expected.items() if args.audit or k not in loggen.AUDIT_ONLY}
            got = {k: report.classes[k] for k in want}
            warm_median = statistics.median(warm_times)
            baseline_median = statistics.median(baseline_times)
            results.append({
                "produced_records": size,
                "consumer_rows": report.totals["consumed_rows"],
                "audit_log": args.audit,
                "warm_job_s": summary(warm_times),
                "cold_job_s": summary([c["job_s"] for c in cold]),
                "cold_total_s": summary([c["total_s"] for c in cold]),
                "sort_diff_s": summary(baseline_times),
                "sort_diff_lines": diff_lines,
                "warm_vs_sort_diff": round(warm_median / baseline_median, 3),
                "floor_job_s": summary(floor_times),
                "floor_vs_sort_diff": round(statistics.median(floor_times) / baseline_median, 3),
                "driver_peak_rss_mb": {"cold_run": round(max((c["jvm_peak_rss_mb"] for c in cold), default=0)),
                                       "warm_session": round(jvm_peak_rss_mb(warm))},
                "classes": report.classes,
                "expected": want,
                "correct": got == want,
            })
            cold_median = results[-1]["cold_job_s"]["median"] or float("nan")
            console.print(f"{size:,}: warm {warm_median:.2f} s {sorted(round(t, 2) for t in warm_times)}, "
                          f"cold job {cold_median:.2f} s,"
                          f" sort+diff {baseline_median:.2f} s (x{warm_median / baseline_median:.2f}), "
                          f"floor {statistics.median(floor_times):.2f} s, "
                          f"correct={got == want}")
    warm.stop()
    path = write_results("analysis", {
        "master": args.master,
        "notes": "cold_total_s: a new process, SparkSession start + first job; cold_job_s: that first job; "
                 "warm_job_s: a session kept warm (WarmSession). sort_diff_s: LC_ALL=C sort of both seed-format "
                 "logs + diff | wc -l. floor_job_s: the job's CSV reader, rows grouped by message id, ids not seen "
                 "exactly twice counted, in the warm session. driver_peak_rss_mb: the driver JVM's VmHWM.",
        "load_avg_at_end": os.getloadavg(),
        "benchmark_process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "results": results,
    })
    console.print(f"written {path}")
    return 0 if all(r["correct"] for r in results) else 1

if __name__ == "__main__":
    sys.exit(main())
