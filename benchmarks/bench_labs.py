"""Every catalog lab run N times headless: how often its lesson showed, median and worst duration.

    .venv/bin/python benchmarks/bench_labs.py [--runs 10] [--labs acks-0,leader-failover] [--seed 1] [--append]

One Spark session is kept warm for all runs, as the console does. Each run has its own fresh cluster on
free ports, under the machine-wide cluster lock for that run alone (do not wrap this script in `flock`). Results
go to benchmarks/results/labs.json; run directories to a temporary dir (removed).
With --append the runs add to those already in labs.json, so ten runs per lab can be gathered in several
sittings; a lab's earlier runs count only while its file is unchanged (its hash is recorded). With --top-up as
well, each lab runs only until it has --runs runs in all. Each lab records the commits its runs were made on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.benchutil import (
    COURSE_TABLE,
    RESULTS,
    add_clients_arg,
    cluster_lock,
    lab_hash,
    on_platforms,
    played_by,
    result_key,
    write_results,
)
from kafkalab.analysis import WarmSession
from kafkalab.labs import Lab, LabSession, catalog, load_lab
from kafkalab.labs.run import PortChoice

GOAL_S = 120.0


def previous_results(name: str = "labs") -> dict[str, dict[str, Any]]:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text())["labs"] if path.exists() else {}


def earlier_runs(results: dict[str, dict[str, Any]], lab: Lab) -> dict[str, Any]:
    """What ``results`` hold for this very lab file: durations, lessons shown, failures."""
    old = results.get(result_key(lab), {})
    if old.get("lab_sha") != lab_hash(lab):
        return {"durations_s": [], "lesson_shown": 0, "failures": [], "commits": []}
    return old


def git(*args: str) -> str:
    root = Path(__file__).resolve().parents[1]
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False).stdout.strip()


def head_commit() -> str:
    """The checkout's commit (short), with ``+`` when its tracked files differ from it: what the runs ran on."""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per lab (default 10)")
    parser.add_argument("--labs", default="", help="comma-separated lab ids (default: the whole catalog)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, default=None, help="keep run directories here")
    parser.add_argument("--append", action="store_true", help="add to the runs already in labs.json")
    parser.add_argument("--top-up", action="store_true", help="with --append: run each lab only until it has --runs "
                        "runs in all (a lab that has them is skipped)")
    parser.add_argument("--platforms", default="", help="run each lab on these of its platforms: MODE/VERSION "
                        "pairs, e.g. kraft/3.9.2,kraft/4.4.0, or all (default: each lab's own); results named "
                        "LAB --mode M --kafka-version V")
    parser.add_argument("--name", default="labs", help="results file benchmarks/results/NAME.json")
    add_clients_arg(parser)
    args = parser.parse_args()
    if args.name == COURSE_TABLE:
        parser.error(f"--name {COURSE_TABLE}: that table is merged from the sittings by benchmarks/course_matrix.py; "
                     "give a sitting's own name (e.g. labs-platforms-txn), then run course_matrix.py")
    labs = [load_lab(p) for p in catalog()]
    if args.labs:
        wanted = args.labs.split(",")
        labs = [lab for lab in labs if lab.id in wanted]
    if args.platforms:
        labs = on_platforms(labs, args.platforms)
    labs = played_by(labs, args.clients)
    console = Console(stderr=True)
    spark = WarmSession().start()
    root = args.keep or Path(tempfile.mkdtemp(prefix="kafkalab-bench-labs-"))
    results: dict[str, dict[str, Any]] = previous_results(args.name) if args.append else {}
    commit = head_commit()
    wanted_runs = {result_key(lab): args.runs - (len(earlier_runs(results, lab)["durations_s"]) if args.top_up else 0)
                   for lab in labs}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    try:
        with Progress(*columns, console=console) as bar:
            task = bar.add_task("labs", total=sum(max(0, n) for n in wanted_runs.values()))
            for lab in labs:
                key = result_key(lab)
                before = earlier_runs(results, lab)
                durations: list[float] = list(before["durations_s"])
                shown: int = before["lesson_shown"]
                failures: list[list[str]] = list(before["failures"])
                commits: list[str] = list(before.get("commits", []))
                if wanted_runs[key] <= 0:
                    continue
                if commit not in commits:
                    commits.append(commit)
                for i in range(wanted_runs[key]):
                    bar.update(task, description=f"{key} run {i + 1}/{wanted_runs[key]}")
                    with cluster_lock():
                        chosen = PortChoice.picked(lab)
                        session = LabSession(lab, root, seed=args.seed + len(durations), spark=spark,
                                             zk_port=chosen.zk_port, broker_ports=list(chosen.broker_ports),
                                             controller_ports=list(chosen.controller_ports))
                        started = time.monotonic()
                        result = session.run()
                        durations.append(time.monotonic() - started)
                    if result.passed:
                        shown += 1
                    else:
                        failures.append(result.failures)
                    if args.keep is None:
                        shutil.rmtree(result.run_dir, ignore_errors=True)
                    bar.advance(task)
                results[key] = {
                    "title": lab.title, "lab_id": lab.id, "mode": lab.cluster.mode,
                    "kafka_version": lab.cluster.kafka_version, "lab_sha": lab_hash(lab), "runs": len(durations),
                    "lesson_shown": shown,
                    "median_s": round(statistics.median(durations), 1), "worst_s": round(max(durations), 1),
                    "under_goal": max(durations) <= GOAL_S, "durations_s": [round(d, 1) for d in durations],
                    "failures": failures, "commits": commits,
                }
                console.print(f"{key}: {shown}/{len(durations)} shown, median {results[key]['median_s']}s, "
                              f"worst {results[key]['worst_s']}s", highlight=False)
    finally:  # an interrupted benchmark still records the labs it finished
        spark.stop()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
        fewest = min((r["runs"] for r in results.values()), default=0)
        path = write_results(args.name, {"runs_per_lab": fewest, "goal_s": GOAL_S, "labs": results})
        console.print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
