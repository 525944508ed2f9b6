"""A grade checked against the runs it judged: every contradiction between grade.json and each run's
result.json, report.json and timeline.json, in words (`kafkalab grades --check`; the test suite and
bench_fix.py run it over every grade they make).

A grade is a promise: a PASS row must be a value observed in every run that satisfies it, a not-graded attempt
must judge nothing, a given-up exercise is never scored as a solve without the solution, and the runs a grade
names must be the lab file and changes it says. Each run's own files must agree with each other too
(:mod:`kafkalab.labs.run_consistency`): the values the rows read are the facts its timeline and report record.
"""

from __future__ import annotations

from pathlib import Path

from kafkalab.analysis.report import loss_split
from kafkalab.labs.expectations import holds, make_expectation
from kafkalab.labs.grade import ACTIONS_ROW, FAULTS_ROW, Grade, GradeOutcome, GradeRow, cap, fault_rows, score_of
from kafkalab.labs.measured import Unmeasured, num
from kafkalab.labs.results import Outcome, RunResult
from kafkalab.labs.run_consistency import read_result, run_contradictions

COMPLETED = (Outcome.PASSED, Outcome.FAILED)


def contradictions(grade: Grade) -> list[str]:
    """Everything ``grade`` says that its own rows, its score rule or its runs' files contradict."""
    out = _within(grade)
    results = []
    for run_dir in map(Path, grade.runs):
        try:
            results.append(read_result(run_dir))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            out.append(f"run {run_dir}: its result.json cannot be read ({exc})")
    if len(results) == len(grade.runs):
        out += _against_runs(grade, results)
    return out


def _within(g: Grade) -> list[str]:
    """What the grade contradicts by itself: its outcome, rows and score."""
    out = []
    if not g.graded:
        if g.rows or g.rules or g.score is not None:
            out.append("not graded, yet it has rows, rules or a score")
        return out
    out += [f"row {row.text!r}: {problem}" for row in g.rows if (problem := _row_problem(row))]
    all_held = bool(g.rows) and all(row.passed for row in g.rows)
    if g.outcome == GradeOutcome.FIXED and not all_held:
        out.append("FIXED, yet a row failed")
    if g.outcome == GradeOutcome.NOT_FIXED and all_held:
        out.append("NOT FIXED, yet every row passed")
    if g.outcome == GradeOutcome.FIXED and g.score != score_of(g.max_score, g.hint_cost, g.given_up):
        out.append(f"score {g.score}, the rule gives {score_of(g.max_score, g.hint_cost, g.given_up)}")
    if g.outcome == GradeOutcome.NOT_FIXED and g.score != 0:
        out.append(f"not fixed, yet scored {g.score}")
    if g.outcome == GradeOutcome.SOLUTION and g.score is not None:
        out.append("the reference solution's run is scored")
    if g.given_up and (g.score or 0) > cap(g.max_score):
        out.append(f"given up, yet scored {g.score} (at most {cap(g.max_score)})")
    return out


def _row_problem(row: GradeRow) -> str:
    if row.runs_held > row.runs or (row.passed and row.runs_held != row.runs) or (row.passed and row.runs == 0):
        return f"PASS/FAIL against held in {row.runs_held}/{row.runs} runs"
    if not row.passed:
        return ""
    if row.seen is None or row.seen == Unmeasured.NOT_OBSERVED:
        return f"PASS on a value not observed ({num(row.seen)})"
    if row.text in (FAULTS_ROW, ACTIONS_ROW):
        return "" if row.seen == row.wanted else f"PASS, yet {num(row.seen)} of {num(row.wanted)} fired"
    op = row.text.split()[1]
    if row.wanted is None or not holds(op, row.seen, row.wanted):
        return f"PASS, yet seen {num(row.seen)} does not satisfy {row.wanted_text}"
    return ""


def _against_runs(g: Grade, results: list[RunResult]) -> list[str]:
    out = []
    for n, r in enumerate(results, start=1):
        if r.lab_sha256 != g.lab_sha256:
            out.append(f"graded run {n} ran another lab file than the grade names")
        if r.changes != g.changes:
            out.append(f"graded run {n} ran the changes {r.changes}, the grade names {g.changes}")
        out += [f"graded run {n}: {problem}" for problem in run_contradictions(r)]
    ended = [n for n, r in enumerate(results, start=1) if r.outcome not in COMPLETED]
    if g.graded and ended:
        out.append(f"graded, yet run {ended[0]} did not run to its end")
    if not g.graded and results and not ended and not g.unobserved:
        out.append("not graded, yet every run ran to its end")
    for text in g.unobserved:
        if not any(_unobserved(r, text) for r in results):
            out.append(f"not graded for {text!r} not observed, yet every run observed it")
    last = results[-1].report if results else None
    if g.graded and last is not None and g.loss != loss_split(last.classes):
        out.append(f"the grade says {g.loss or 'nothing'!r} of the loss, the last run's report.json "
                   f"{loss_split(last.classes) or 'nothing'!r}")
    if g.graded:
        for row in g.rows:
            held = [_held(r, row.text) for r in results]
            if None in held:
                out.append(f"row {row.text!r}: a run did not judge it")
            elif row.passed != all(held) or row.runs_held != sum(bool(h) for h in held):
                out.append(f"row {row.text!r}: the runs' values give {sum(bool(h) for h in held)}/{len(held)}, "
                           f"the grade {row.runs_held}/{row.runs}")
    return out


def _unobserved(r: RunResult, text: str) -> bool:
    """The run could not observe the value ``text`` judges."""
    judged = [x.actual for x in r.expectations if x.text == text]
    return not judged or Unmeasured.NOT_OBSERVED in judged


def _held(r: RunResult, text: str) -> bool | None:
    """Whether ``text`` held in run ``r``, recomputed from its metrics (None: the run has no value for it)."""
    if (faults := fault_rows(r, text)) is not None:
        return faults[0]
    metric, _, comparison = text.partition(" ")
    try:
        e = make_expectation(metric, comparison)
    except ValueError:
        return None
    if metric not in r.metrics and not any(x.text == text for x in r.expectations):
        return None
    return e.evaluate(r.metrics)[0]
