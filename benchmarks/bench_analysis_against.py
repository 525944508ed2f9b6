"""Benchmark: the analysis job of a git revision against the working tree's, alternating in one warm session.

Both jobs (``classify`` of kafkalab/analysis/job.py: the revision's file loaded beside the working tree's) run
over the same generated logs (loggen.py, bench_analysis.py's cache) in one SparkSession, after one untimed run
each, round after round in alternating order, so the machine's load (other work shares its cores) falls on both
alike. Per job: wall seconds and Spark CPU seconds (the driver JVM's user + system time over the job; local mode
runs every task in it). Each result is checked against the injected counts, and the two against each other on
what both report (counts, samples, failed sends by reason...). Writes benchmarks/results/NAME.json.

Two shapes of the same logs: as generated (each record key on all six partitions, so every key's order is
judged and about two thirds of the records are found out of their key's order) and with each consumer row's key
made its partition's own (the usual run: every key on one partition, none judged).

    .venv/bin/python benchmarks/bench_analysis_against.py                       # against 12b1d1b~1
    .venv/bin/python benchmarks/bench_analysis_against.py --against /tmp/job.py --keys per-partition --name x
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import loggen
from benchmarks.bench_analysis import generated
from benchmarks.benchutil import summary, write_results
from kafkalab.analysis import job
from kafkalab.logformat import CONSUMER_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parents[1]
JOB_PATH = "kafkalab/analysis/job.py"
JOBS = ("ref", "tree")  # the revision's job, the working tree's
KEYS = ("as-generated", "per-partition")


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout


def job_at(against: str, into: Path) -> ModuleType:
    """The job.py of a revision (or a file of that name's shape) as a module of its own; it imports the working
    tree's kafkalab.logformat."""
    path = into / "job_at_ref.py"
    path.write_text(Path(against).read_text() if Path(against).is_file() else git("show", f"{against}:{JOB_PATH}"))
    spec = importlib.util.spec_from_file_location("kafkalab_job_at_ref", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def keys_per_partition(gen: loggen.Generated, root: Path) -> loggen.Generated:
    """The logs with each consumer row's record key made its partition's own (``k7`` on partition 2: ``k7@2``),
    written once beside them: every key on one partition, as in a run whose topic kept its partitions."""
    out = root / "keys-per-partition"
    out.mkdir(exist_ok=True)
    logs = [out / path.name for path in gen.consumer_logs]
    for path, copy in zip(gen.consumer_logs, logs, strict=True):
        if copy.exists():
            continue
        with path.open(newline="") as src, copy.open("w", newline="") as dst:
            rows, writer = csv.DictReader(src), csv.writer(dst, lineterminator="\n")
            writer.writerow(CONSUMER_COLUMNS)
            writer.writerows([*{**row, "key": f"{row['key']}@{row['partition']}"}.values()] for row in rows)
    return dataclasses.replace(gen, consumer_logs=logs)


def run_of(producer_log: Path) -> str:
    """The run id: the first part of the first producer row's message id."""
    with producer_log.open() as fh:
        fh.readline()
        return fh.readline().split(",", 1)[0].split(":", 1)[0]


def jvm_cpu_s(session: SparkSession) -> float:
    """The driver JVM's user + system CPU seconds so far."""
    gateway = session.sparkContext._gateway
    assert gateway is not None, "a local session has its JVM"
    times = psutil.Process(gateway.proc.pid).cpu_times()
    return float(times.user + times.system)


def outcome(module: ModuleType, result: Any) -> dict[str, Any]:
    """A job's result as plain data: counts per partition, samples as JSON (every class the job has), and
    its other fields."""
    data = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    data["partitions"] = {f"{p.topic}-{p.partition}": p.counts for p in result.partitions}
    data["samples"] = {name: [s.to_json() for s in result.samples.get(name, [])] for name in module.CLASSES}
    return data


def differences(ref: Any, tree: Any, where: str = "") -> list[str]:
    """Where two outcomes disagree, over what both have: a class or field only one job knows is left out."""
    if isinstance(ref, dict) and isinstance(tree, dict):
        return [d for k in ref.keys() & tree.keys() for d in differences(ref[k], tree[k], f"{where}/{k}")]
    return [] if ref == tree else [f"{where}: {ref!r} != {tree!r}"[:300]]


def class_totals(data: dict[str, Any]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for counts in data["partitions"].values():
        for name, n in counts.items():
            totals[name] = totals.get(name, 0) + n
    return totals


def ratio(after: list[float], before: list[float]) -> float:
    return round(statistics.median(after) / statistics.median(before), 3)


def measure(session: SparkSession, modules: dict[str, ModuleType], gen: loggen.Generated, audit: bool,
            runs: int) -> dict[str, Any]:
    """Both jobs over ``gen``, alternating: their times, classes and whether their results agree."""
    audit_logs = [gen.audit_log] if audit else []
    inputs = (gen.producer_logs, gen.consumer_logs, audit_logs, run_of(gen.producer_logs[0]),
              sum(p.stat().st_size for p in (*gen.producer_logs, *gen.consumer_logs, *audit_logs)))
    wall: dict[str, list[float]] = {name: [] for name in JOBS}
    cpu: dict[str, list[float]] = {name: [] for name in JOBS}
    outcomes: dict[str, dict[str, Any]] = {}
    load_at_start = os.getloadavg()
    for round_ in range(runs + 1):  # round 0 warms the JVM up, untimed
        for name in JOBS if round_ % 2 else reversed(JOBS):
            cpu_before, start = jvm_cpu_s(session), time.monotonic()
            result = modules[name].classify(session, *inputs)
            seconds, cpu_s = time.monotonic() - start, jvm_cpu_s(session) - cpu_before
            outcomes[name] = outcome(modules[name], result)
            if round_:
                wall[name].append(seconds)
                cpu[name].append(cpu_s)
            print(f"round {round_}{' (warm-up)' if not round_ else ''}: {name} {seconds:.1f} s wall, "
                  f"{cpu_s:.1f} s Spark CPU, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    want = {k: v for k, v in gen.expected.items() if audit or k not in loggen.AUDIT_ONLY}
    totals = {name: class_totals(outcomes[name]) for name in JOBS}
    disagree = differences(outcomes["ref"], outcomes["tree"])
    return {
        "input_bytes": inputs[4], "consumer_rows": totals["tree"]["consumed_rows"],
        "load_avg_at_start": load_at_start, "load_avg_at_end": os.getloadavg(),
        "wall_s": {name: summary(wall[name]) for name in JOBS},
        "spark_cpu_s": {name: summary(cpu[name]) for name in JOBS},
        "wall_ratio": ratio(wall["tree"], wall["ref"]), "spark_cpu_ratio": ratio(cpu["tree"], cpu["ref"]),
        "classes": {name: {k: v for k, v in totals[name].items() if k in modules[name].CLASSES} for name in JOBS},
        "key_reordered_keys": outcomes["tree"].get("key_reordered_keys"),
        "expected": want, "correct": {name: {k: totals[name][k] for k in want} == want for name in JOBS},
        "same_results": not disagree, "differences": disagree[:20],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="12b1d1b~1",
                        help="the 'before': a git revision (its kafkalab/analysis/job.py) or a job.py file")
    parser.add_argument("--keys", nargs="+", choices=KEYS, default=list(KEYS), help="the shapes of the logs")
    parser.add_argument("--size", type=int, default=500_000, help="generated sends")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each job (medians)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/kafkalab-bench-analysis"))
    parser.add_argument("--audit", action="store_true", help="also give the audit log to the jobs")
    parser.add_argument("--name", default="analysis-key-order", help="the results file's name")
    args = parser.parse_args()
    from kafkalab.analysis.spark_session import start_session

    gen = generated(args.data_dir, args.size)
    shapes = {"as-generated": lambda: gen, "per-partition": lambda: keys_per_partition(gen, gen.audit_log.parent)}
    with tempfile.TemporaryDirectory() as tmp:
        modules = dict(zip(JOBS, (job_at(args.against, Path(tmp)), job), strict=True))
    session = start_session(args.master)
    cases = {}
    for keys in args.keys:
        print(f"keys {keys}:", file=sys.stderr)
        cases[keys] = measure(session, modules, shapes[keys](), args.audit, args.runs)
    session.stop()
    against = args.against if Path(args.against).is_file() else git("rev-parse", args.against).strip()
    path = write_results(args.name, {
        "command": " ".join(["benchmarks/bench_analysis_against.py", *sys.argv[1:]]),
        "against": args.against, "against_commit": against, "tree_head": git("rev-parse", "HEAD").strip(),
        "tree_job_changed": bool(git("status", "--porcelain", "--", JOB_PATH).strip()),
        "master": args.master, "produced_records": args.size, "audit_log": args.audit,
        "notes": "ref: the job.py of 'against'; tree: the working tree's. One SparkSession, one untimed run of "
                 "each, then rounds in alternating order. spark_cpu_s: the driver JVM's user + system CPU time "
                 "over the job (local mode: every task). Ratios: median of tree / median of ref. keys "
                 "per-partition: each consumer row's record key suffixed with its partition.",
        "cases": cases,
    })
    ok = True
    for keys, case in cases.items():
        ok = ok and all(case["correct"].values()) and case["same_results"]
        print(f"{keys}: tree / ref: Spark CPU {case['spark_cpu_ratio']}x, wall {case['wall_ratio']}x; correct "
              f"{case['correct']}; same results: {case['same_results']}", file=sys.stderr)
        for line in case["differences"]:
            print(f"  differs: {line}", file=sys.stderr)
    print(f"written {path}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
