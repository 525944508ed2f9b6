"""Every fix exercise graded both ways on a real cluster: the lab as shipped must FAIL, its reference solution
must PASS, each plausible wrong fix must FAIL (and a rule must say why).

    .venv/bin/python benchmarks/bench_fix.py [--labs acks-0,no-commits] [--runs 1] [--only shipped,solution,wrong]
                                             [--platforms all] [--name fix] [--append] [--keep DIR]

Each graded run takes the machine-wide cluster lock (/tmp/kafkalab-cluster.lock) for itself alone, so other
clusters on the machine get their turn between runs: do not wrap this script in `flock` (it would wait on itself).
``--runs N`` grades each attempt over N seeded runs (default: the lab's own ``[fix] runs``). Results go to
benchmarks/results/NAME.json: per lab and attempt, how many gradings came out as wanted, the median seconds
per graded run, and the lab's own median run time from labs-catalog.json for comparison. A grading whose run
ended early (a broker that would not start) judged nothing: it is kept apart as ``not_graded``, with its reason,
and the attempt is graded again (at most MAX_NOT_GRADED times).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.benchutil import (
    RESULTS,
    add_clients_arg,
    cluster_lock,
    fix_labs,
    lab_hash,
    on_platforms,
    played_by,
    result_key,
    write_results,
)
from kafkalab.analysis import WarmSession
from kafkalab.labs import Lab, LabSession
from kafkalab.labs.fix import Change
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import Grade
from kafkalab.labs.grade_consistency import contradictions
from kafkalab.labs.graded_check import GradedCheck
from kafkalab.labs.results import RunResult
from kafkalab.labs.run import PortChoice


class Direction(StrEnum):
    SHIPPED = "shipped"  # no change: must FAIL
    SOLUTION = "solution"  # the reference solution: must PASS
    WRONG = "wrong"  # each [[fix.wrong]]: must FAIL, with a rule saying why

    @property
    def wants_pass(self) -> bool:
        return self == Direction.SOLUTION


@dataclass
class Attempt:
    """One graded attempt of one lab, repeated: what it changes and what it must come out as."""

    lab: Lab
    direction: Direction
    changes: tuple[Change, ...]
    index: int = 0  # the wrong fix's number (1-based), 0 otherwise

    @property
    def key(self) -> str:
        return f"wrong {self.index}" if self.direction == Direction.WRONG else str(self.direction)


@dataclass
class Tally:
    changes: list[str]
    wants: str
    gradings: int = 0
    as_wanted: int = 0
    run_s: list[float] = field(default_factory=list)
    failing_rows: list[list[str]] = field(default_factory=list)  # per grading: rows that did not hold
    rules: list[str] = field(default_factory=list)  # of the last grading
    not_as_wanted: list[str] = field(default_factory=list)
    not_graded: list[str] = field(default_factory=list)  # gradings a run ended early (the machine's, not the fix's)

    def as_dict(self) -> dict[str, Any]:
        return {
            "changes": self.changes, "wants": self.wants, "gradings": self.gradings, "as_wanted": self.as_wanted,
            "median_run_s": round(statistics.median(self.run_s), 1) if self.run_s else None,
            "run_s": [round(s, 1) for s in self.run_s], "failing_rows": self.failing_rows, "rules": self.rules,
            "not_as_wanted": self.not_as_wanted, "not_graded": self.not_graded,
        }


def attempts_of(lab: Lab, only: Sequence[Direction]) -> list[Attempt]:
    assert lab.fix is not None
    out = []
    if Direction.SHIPPED in only:
        out.append(Attempt(lab, Direction.SHIPPED, ()))
    if Direction.SOLUTION in only:
        out.append(Attempt(lab, Direction.SOLUTION, lab.fix.solution))
    if Direction.WRONG in only:
        out += [Attempt(lab, Direction.WRONG, w, i) for i, w in enumerate(lab.fix.wrong, start=1)]
    return out


NOT_GRADED_DIR = Path(tempfile.gettempdir()) / "kafkalab-bench-fix-not-graded"
MAX_NOT_GRADED = 3  # per attempt: more runs ended early than this says the machine is not fit to measure on


def graded(attempt: Attempt, runs: int | None, root: Path, spark: Any, console: Console) -> tuple[Grade, list[float]]:
    """One grading, through the loop the console and `kafkalab fix` share; its grade checked against its runs."""
    fix_attempt = FixAttempt(attempt.lab, attempt.changes, "bench_fix", runs=runs)
    times: list[float] = []

    def run_one(lab: Lab, seed: int) -> RunResult:
        with cluster_lock():
            chosen = PortChoice.picked(lab)
            session = LabSession(lab, root, seed=seed, spark=spark, zk_port=chosen.zk_port,
                                 broker_ports=list(chosen.broker_ports),
                                 controller_ports=list(chosen.controller_ports))
            started = time.monotonic()
            result = session.run()
            times.append(time.monotonic() - started)
        console.print(f"    seed {seed}: {result.outcome} in {times[-1]:.0f}s"
                      + (f" ({'; '.join(result.failures)[:300]})" if result.failures else ""), highlight=False)
        return result

    status = GradedCheck(fix_attempt, run_one, lambda _status: None).run()
    assert status.grade is not None, status.reason
    if problems := contradictions(status.grade):  # a grade that is no promise is the worst defect: stop here
        raise SystemExit(f"the grade contradicts its runs: {'; '.join(problems)}")
    return status.grade, times


def keep_runs(grade: Grade) -> Path:
    """A not-graded grading's run dirs (the brokers' logs say why a run ended early), copied out of the
    benchmark's temporary folder, which goes at its end."""
    for run in map(Path, grade.runs):
        shutil.copytree(run, NOT_GRADED_DIR / run.name, dirs_exist_ok=True)
    return NOT_GRADED_DIR


def fix_runs(lab: Lab) -> int:
    assert lab.fix is not None
    return lab.fix.runs


def own_median(lab_id: str) -> float | None:
    path = RESULTS / "labs-catalog.json"  # the whole catalog on the current lab files
    if not path.exists():
        return None
    entry = json.loads(path.read_text()).get("labs", {}).get(lab_id, {})
    median = entry.get("median_s")
    return float(median) if median is not None else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", default="", help="comma-separated lab ids (default: every lab with a [fix])")
    parser.add_argument("--runs", type=int, default=None, help="graded runs per attempt (default: the lab's own)")
    parser.add_argument("--repeat", type=int, default=1, help="grade each attempt this many times")
    parser.add_argument("--only", default="shipped,solution,wrong", help="which attempts: shipped,solution,wrong")
    parser.add_argument("--name", default="fix", help="results file benchmarks/results/NAME.json")
    parser.add_argument("--append", action="store_true", help="merge into NAME.json's labs (same lab file only)")
    parser.add_argument("--keep", type=Path, default=None, help="keep run directories here")
    parser.add_argument("--platforms", default="", help="grade each lab on these of its platforms: MODE/VERSION "
                        "pairs, e.g. zookeeper/3.9.2,kraft/4.4.0, or all (default: each lab's own); results named "
                        "LAB --mode M --kafka-version V")
    add_clients_arg(parser)
    args = parser.parse_args()
    try:
        only = [Direction(d) for d in args.only.split(",")]
    except ValueError:
        parser.error(f"--only {args.only}: give shipped, solution and/or wrong, comma-separated")
    labs = fix_labs(args.labs, parser.error)
    if args.platforms:
        labs = on_platforms(labs, args.platforms)
    labs = played_by(labs, args.clients)
    console = Console(stderr=True)
    spark = WarmSession().start()
    root = args.keep or Path(tempfile.mkdtemp(prefix="kafkalab-bench-fix-"))
    path = RESULTS / f"{args.name}.json"
    results: dict[str, dict[str, Any]] = json.loads(path.read_text())["labs"] if args.append and path.exists() else {}
    try:
        for lab in labs:
            key = result_key(lab)
            entry = results.get(key, {})
            if entry.get("lab_sha") != lab_hash(lab):
                entry = {"attempts": {}}
            tallies = {k: Tally(**{f: v[f] for f in ("changes", "wants", "gradings", "as_wanted", "failing_rows",
                                                     "rules", "not_as_wanted")}, run_s=list(v["run_s"]),
                                not_graded=list(v.get("not_graded", [])))
                       for k, v in entry["attempts"].items()}
            for attempt in attempts_of(lab, only):
                tally = tallies.setdefault(attempt.key, Tally([c.text for c in attempt.changes],
                                                              "PASS" if attempt.direction.wants_pass else "FAIL"))
                done = 0
                while done < args.repeat:
                    console.print(f"[bold]{key}[/] {attempt.key} ({', '.join(tally.changes) or 'no change'}), "
                                  f"grading {done + 1}/{args.repeat}", highlight=False)
                    grade, times = graded(attempt, args.runs, root, spark, console)
                    if not grade.graded:  # no verdict on the fix, never counted as one: again, up to a bound
                        tally.not_graded.append("; ".join(grade.ended_early))
                        kept = keep_runs(grade)
                        if len(tally.not_graded) > MAX_NOT_GRADED:
                            console.print(f"  -> NOT GRADED ({grade.verdict}) again: no more gradings of this "
                                          f"attempt; its runs kept in {kept}", highlight=False)
                            break
                        console.print(f"  -> NOT GRADED ({grade.verdict}): graded again; its runs kept in {kept}",
                                      highlight=False)
                        continue
                    done += 1
                    tally.gradings += 1
                    tally.run_s += times
                    failing = [f"{r.text} (seen {r.seen_text}, {r.runs_held}/{r.runs} runs held)"
                               for r in grade.rows if not r.passed]
                    tally.failing_rows.append(failing)
                    tally.rules = grade.rules
                    ok = grade.passed == attempt.direction.wants_pass
                    if ok and attempt.direction == Direction.WRONG and not grade.rules:
                        ok = False
                        tally.not_as_wanted.append("failed, but no rule said why")
                    elif not ok:
                        tally.not_as_wanted.append(grade.verdict)
                    tally.as_wanted += ok
                    mark = "as wanted" if ok else "[bold red]NOT as wanted[/]"
                    console.print(f"  -> {'PASS' if grade.passed else 'FAIL'} ({mark}); "
                                  f"failing: {'; '.join(failing) or '-'}", highlight=False)
                    for rule in grade.rules:
                        console.print(f"     rule: {rule}", highlight=False)
            results[key] = {
                "title": lab.title, "lab_sha": lab_hash(lab), "mode": lab.cluster.mode,
                "kafka_version": lab.cluster.kafka_version, "graded_runs": args.runs or fix_runs(lab),
                "lab_median_s": own_median(lab.id),
                "attempts": {k: t.as_dict() for k, t in tallies.items()},
            }
    finally:  # an interrupted benchmark still records the labs it finished
        spark.stop()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
        out = write_results(args.name, {"labs": results})
        console.print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
