"""How long a graded check takes in the console, on the kept cluster: from the check key (f) to the grade card
on screen, per graded run, against the lab's own run (g) in the same console.

    .venv/bin/python benchmarks/bench_fix_speed.py [--labs ID,...]

For each lab with a [fix], one console (LabConsole on a LabSource with its Exercise, headless under Pilot, the
warm Spark session `kafkalab console` makes), played as an attendee plays it:

1. g: the demonstration; its cluster starts and is kept (the first run, cluster start included);
2. g again: the lab's own run on the kept cluster, g to the verdict on screen (the peer the check is held to);
3. the reference solution typed as the attendee's changes (the `e` prompt's path), then f: the graded runs,
   f to the grade card on screen, divided by the graded runs.

Goals (issue: break-fix grading): the median over the labs of the per-run check time <= 60 s, and each lab's
no slower than its own run plus 15 s. The cluster lock is held for a whole lab (its cluster lives between the
runs). Results: benchmarks/results/fix_speed.json, rendered in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.benchutil import RESULTS, cluster_lock, fix_labs, lab_hash, write_results
from kafkalab.analysis import WarmSession
from kafkalab.analysis.warmup import IDLE_ROUNDS
from kafkalab.errors import KafkalabError
from kafkalab.feeds.exercise import Exercise
from kafkalab.feeds.lab_source import LabSource
from kafkalab.labs import Lab, LabSession
from kafkalab.labs.fix import prompt_lines
from kafkalab.ui.app import LabConsole
from kafkalab.ui.results import ResultsPane

CHECK_GOAL_S = 60.0  # the median over the labs, per graded run
OVER_OWN_RUN_S = 15.0  # each lab's per-run check against its own run
GIVE_UP_S = 420.0  # one step taking longer is a failure of the step, said in the results


@dataclass
class LabSpeed:
    lab_id: str
    lab_sha: str
    first_run_s: float | None = None  # g with the cluster's start
    own_run_s: float | None = None  # g on the kept cluster
    fixed_run_s: float | None = None  # g with the solution's changes, on the kept cluster (--fixed-run)
    check_s: float | None = None  # f to the grade card, every graded run
    graded_runs: int = 0
    passed: bool | None = None  # the solution's grade
    fresh_cluster_notes: tuple[str, ...] = ()  # a graded run that started its own cluster, and why
    problem: str = ""

    @property
    def per_run_s(self) -> float | None:
        return self.check_s / self.graded_runs if self.check_s is not None and self.graded_runs else None

    @property
    def within_own_run(self) -> bool | None:
        if self.per_run_s is None or self.own_run_s is None:
            return None
        return self.per_run_s <= self.own_run_s + OVER_OWN_RUN_S

    def as_dict(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return round(x, 1) if x is not None else None
        return {"lab_sha": self.lab_sha, "first_run_s": r(self.first_run_s), "own_run_s": r(self.own_run_s),
                "fixed_run_s": r(self.fixed_run_s),
                "check_s": r(self.check_s), "graded_runs": self.graded_runs, "per_run_s": r(self.per_run_s),
                "within_own_run_plus_15s": self.within_own_run, "solution_passed": self.passed,
                "fresh_cluster_notes": list(self.fresh_cluster_notes), "problem": self.problem}


async def until(pilot: Any, done: Any, what: str) -> float:
    """Seconds until ``done()``; TimeoutError naming ``what`` past GIVE_UP_S."""
    started = time.monotonic()
    while not done():
        if time.monotonic() - started > GIVE_UP_S:
            raise TimeoutError(f"{what} not within {GIVE_UP_S:.0f}s")
        await pilot.pause(0.05)
    return time.monotonic() - started


def say(line: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {line}", flush=True)


def run_shown(app: LabConsole, session: LabSession, before: object) -> bool:
    """A run started after ``before`` (the result there was) has ended and its verdict is on screen."""
    result = session.result
    return not session.running and result is not None and result is not before \
        and (bool(result.error) or verdict_on_screen(app, result.verdict))  # an error ends the wait: said below


def card_shown(app: LabConsole) -> bool:
    """The graded check's card is in the results pane (a rich Group: its text is not the pane's string)."""
    check = app.run_frame.check
    return check.grade is not None and app.query_one(ResultsPane).shown_check == check


def screen_text(app: LabConsole) -> str:
    """The verdict pane's text, for a step that never got there (a dialog open over it: its name)."""
    from textual.css.query import NoMatches
    from textual.widgets import Static

    try:
        return str(app.query_one("#verdict", Static).render())
    except NoMatches:
        return f"(a dialog is open: {type(app.screen).__name__})"


def verdict_on_screen(app: LabConsole, text: str) -> bool:
    from textual.widgets import Static

    return bool(text) and text[:30] in str(app.query_one("#verdict", Static).render())


async def timed_g(app: LabConsole, pilot: Any, session: LabSession, what: str) -> float:
    """g, then seconds until the run's verdict is on screen; KafkalabError if the run ended in an error."""
    before = session.result
    app.action_show_tab("results")  # where the attendee watches the verdict come
    await pilot.press("g")
    took = await until(pilot, partial(run_shown, app, session, before), "the verdict")
    if session.result is not None and session.result.error:
        raise KafkalabError(f"{what}: {session.result.error}")
    say(f"{session.lab.id}: {what} {took:.1f}s")
    return took


async def one_lab(lab: Lab, spark: WarmSession, root: Path, fixed_run: bool = False) -> LabSpeed:
    speed = LabSpeed(lab.id, lab_hash(lab))
    session = LabSession(lab, root / lab.id, spark=spark, free_ports=True, keep_cluster=True)
    exercise = Exercise(lab, root / lab.id / "progress.json")
    source = LabSource(session, spark, exercise=exercise, who="bench")
    app = LabConsole(source, list(range(1, lab.cluster.brokers + 1)), poll_s=None)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            speed.first_run_s = await timed_g(app, pilot, session, "first run")
            speed.own_run_s = await timed_g(app, pilot, session, "own run")
            assert lab.fix is not None
            for line in prompt_lines(lab.fix.solution):
                source.add_change(line)  # what the `e` prompt does with a typed line
            if fixed_run:  # the demonstration with the fix: a fix may change how long a run takes
                speed.fixed_run_s = await timed_g(app, pilot, session, "run with the fix")
            notes: list[str] = []

            def note(event: object) -> None:
                run = session.current
                if run is not None and run.cluster_note and run.cluster_note not in notes:
                    notes.append(run.cluster_note)

            session.add_listener(note)
            await pilot.press("f")
            speed.check_s = await until(pilot, partial(card_shown, app), "the grade card")
            grade = app.run_frame.check.grade
            assert grade is not None
            say(f"{lab.id}: check {speed.check_s:.1f}s for {len(grade.seeds)} graded runs: {grade.verdict}")
            speed.graded_runs, speed.passed = len(grade.seeds), grade.passed
            speed.fresh_cluster_notes = tuple(n for n in notes if "fresh" in n)
            await pilot.press("ctrl+q")
    except (TimeoutError, AssertionError, KafkalabError) as exc:  # said in the results; the next lab goes on
        speed.problem = str(exc) or type(exc).__name__
        say(f"{lab.id}: {speed.problem}; on screen:\n{screen_text(app)}")
    finally:
        source.close()
    return speed


def kept_speeds(name: str) -> dict[str, LabSpeed]:
    """An earlier sitting's labs whose lab file has not changed since."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return {}
    current = {lab.id: lab_hash(lab) for lab in fix_labs("", lambda why: sys.exit(why))}
    out = {}
    for lab_id, d in json.loads(path.read_text())["labs"].items():
        if current.get(lab_id) == d["lab_sha"]:
            out[lab_id] = LabSpeed(lab_id, d["lab_sha"], d["first_run_s"], d["own_run_s"], d.get("fixed_run_s"),
                                   d["check_s"], d["graded_runs"], d["solution_passed"],
                                   tuple(d["fresh_cluster_notes"]), d["problem"])
    return out


def warm_spark() -> WarmSession:
    """A console's Spark session once warm, as an attendee has it a minute after opening the console: warmed
    before the cluster lock is taken, so other clusters on the machine are not held up by it."""
    spark = WarmSession(warmup_rounds=IDLE_ROUNDS).start()
    spark.get()
    return spark


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", default="", help="comma-separated lab ids (default: every lab with a [fix])")
    parser.add_argument("--name", default="fix_speed", help="results file benchmarks/results/NAME.json")
    parser.add_argument("--append", action="store_true", help="keep NAME.json's other labs (of the same lab file)")
    parser.add_argument("--fixed-run", action="store_true", help="also time g with the solution's changes (the "
                        "demonstration, fixed) before the check")
    args = parser.parse_args()
    labs = fix_labs(args.labs, parser.error)
    speeds: dict[str, LabSpeed] = kept_speeds(args.name) if args.append else {}
    try:
        with tempfile.TemporaryDirectory(prefix="kafkalab-bench-fix-speed-") as tmp:
            for i, lab in enumerate(labs, start=1):
                spark = warm_spark()  # each console its own, as `kafkalab console` has; the console stops it
                with cluster_lock():
                    speed = asyncio.run(one_lab(lab, spark, Path(tmp), args.fixed_run))
                speeds[lab.id] = speed
                print(f"[{i}/{len(labs)}] {lab.id}: {speed.as_dict()}", flush=True)
    finally:  # an interrupted benchmark still records the labs it finished
        per_run = [s.per_run_s for s in speeds.values() if s.per_run_s is not None]
        median = statistics.median(per_run) if per_run else None
        out = write_results(args.name, {
            "goal_median_per_run_s": CHECK_GOAL_S, "goal_over_own_run_s": OVER_OWN_RUN_S,
            "median_per_run_s": round(median, 1) if median is not None else None,
            "median_met": median is not None and median <= CHECK_GOAL_S,
            "every_lab_within_own_run": bool(speeds) and all(s.within_own_run for s in speeds.values()),
            "labs": {k: s.as_dict() for k, s in speeds.items()},
        })
        print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
