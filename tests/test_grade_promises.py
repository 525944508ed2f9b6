"""A grade is a promise: a row passes only on what was observed, a check that could not run judges nothing,
a give-up travels with every later grade, and `kafkalab grades --check` finds any grade its runs contradict."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kafkalab.cli import main
from kafkalab.errors import KafkalabError
from kafkalab.labs import load_lab
from kafkalab.labs import progress as progress_store
from kafkalab.labs.expectations import make_expectation
from kafkalab.labs.fix import parse_changes
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import GRADE_FILE, AttemptHistory, Grade, GradeOutcome, RowMark, read_grade
from kafkalab.labs.grade_consistency import contradictions
from kafkalab.labs.graded_check import CheckPhase, CheckStatus, GradedCheck
from kafkalab.labs.measured import Unmeasured
from kafkalab.labs.model import Lab
from kafkalab.labs.results import ExpectationResult, FaultState, FaultStatus, Outcome, RunResult
from kafkalab.ui.check_view import check_toast
from tests.test_fix_core import FIX, lab_file

WAIT = "consumer.1.assign_wait_s < 10"


pytestmark = pytest.mark.usefixtures("fresh_state")  # progress and config of these tests' own


# ---- 1. never happened is a value of its own -------------------------------------------------------
@pytest.mark.parametrize(("comparison", "on_never", "on_number"), [
    ("< 10", False, True), ("> 0", False, True), ("== 0", False, False), ("!= 5", False, True),
    ("== never", True, False), ("!= never", False, True),
])
def test_never_passes_only_a_comparison_that_names_it(comparison: str, on_never: bool, on_number: bool) -> None:
    e = make_expectation("consumer.1.assign_wait_s", comparison)
    assert e.evaluate({"consumer.1.assign_wait_s": Unmeasured.NEVER})[0] is on_never
    assert e.evaluate({"consumer.1.assign_wait_s": 2.0})[0] is on_number
    assert e.evaluate({"consumer.1.assign_wait_s": Unmeasured.NOT_OBSERVED})[0] is False  # not observed: nothing
    assert e.evaluate({})[0] is False  # a time the run did not produce was not observed


def test_never_takes_no_order_and_a_negative_time_is_refused() -> None:
    with pytest.raises(ValueError, match="never is not a number"):
        make_expectation("consumer.1.assign_wait_s", "< never")
    with pytest.raises(ValueError, match='== never'):
        make_expectation("consumer.1.assign_wait_s", -1)  # the old sentinel: say how to ask for never now
    assert make_expectation("lost", 0).evaluate({})[0]  # a count the run did not produce is still 0


def wait_lab(tmp_path: Path) -> Lab:
    text = FIX.replace("[fix.expect]\nlost = 0", '[fix.expect]\n"consumer.1.assign_wait_s" = "< 10"\nlost = 0', 1)
    return load_lab(lab_file(tmp_path, text))


def run(run_dir: Path, seed: int, *, wait: float | Unmeasured = 2.0, outcome: Outcome = Outcome.PASSED,
        error: str = "", lab: Lab | None = None) -> RunResult:
    """A graded run's result.json as a run writes it: its metrics, and each expectation judged from them."""
    run_dir.mkdir(parents=True, exist_ok=True)
    metrics: dict[str, float | Unmeasured] = {"consumer.1.assign_wait_s": wait, "lost": 0.0, "producer.acked": 900.0}
    exps = lab.fix.expectations if lab is not None and lab.fix is not None else ()
    r = RunResult("demo", run_dir, outcome, seed=seed, duration_s=30.0, error=error, metrics=metrics,
                  lab_sha256=lab.file_sha256() if lab else "", changes=["producer.acks=all"],
                  expectations=[ExpectationResult(e.text, *e.evaluate(metrics)) for e in exps])
    r.faults = [FaultStatus(0, "kill", FaultState.FIRED)]
    (run_dir / "result.json").write_text(json.dumps(r.as_dict()), encoding="utf-8")
    return r


def test_a_consumer_never_assigned_fails_its_wait_row_and_shows_never(tmp_path: Path) -> None:
    lab = wait_lab(tmp_path)
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", runs=2)
    g = attempt.grade([run(tmp_path / f"r{k}", k, wait=Unmeasured.NEVER, lab=lab) for k in (1, 2)])
    row = next(r for r in g.rows if r.text == WAIT)
    assert not row.passed and row.seen_text == "never" and row.runs_held == 0  # once: PASS ... -1 2/2
    assert not g.passed and g.outcome == GradeOutcome.NOT_FIXED
    assert read_grade(Path(g.runs[-1]) / GRADE_FILE).rows == g.rows  # "never" survives grade.json
    assert contradictions(g) == []


# ---- 2. NOT GRADED judges nothing --------------------------------------------------------------------
def test_a_check_whose_run_ended_early_is_not_graded_and_stops_there(tmp_path: Path) -> None:
    lab = wait_lab(tmp_path)
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", runs=3)
    ran: list[int] = []
    statuses: list[CheckStatus] = []

    def run_one(graded: Lab, seed: int) -> RunResult:
        ran.append(seed)
        broken = len(ran) == 2
        return run(tmp_path / f"r{seed}", seed, lab=lab, outcome=Outcome.ERROR if broken else Outcome.PASSED,
                   error="broker 2 did not start: Invalid value one" if broken else "")

    status = GradedCheck(attempt, run_one, statuses.append).run()
    assert ran == attempt.seeds[:2]  # nothing more would be judged: the third run never starts
    assert [s.phase for s in statuses] == [CheckPhase.RUNNING, CheckPhase.RUNNING, CheckPhase.NOT_GRADED]
    g = status.grade
    assert g is not None and g.outcome == GradeOutcome.NOT_GRADED
    assert g.rows == [] and g.rules == [] and g.score is None  # the faults' row once said PASS 5 == 5 here
    assert "broker 2 did not start" in status.reason and "score" not in status.text
    toast = check_toast(statuses[-2], status)
    assert toast is not None and "score" not in toast.title + toast.text and "check it again" in toast.text
    assert contradictions(g) == []


def test_a_stopped_check_has_no_grade(tmp_path: Path) -> None:
    lab = wait_lab(tmp_path)
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", runs=2)
    check = GradedCheck(attempt, lambda graded, seed: run(tmp_path / "r", seed, lab=lab, outcome=Outcome.STOPPED),
                        lambda _s: None)
    status = check.run()
    assert status.phase == CheckPhase.STOPPED and status.grade is None
    assert not list(tmp_path.rglob(GRADE_FILE))


# ---- 3. a give-up travels with every later grade ---------------------------------------------------
def test_a_fix_after_giving_up_passes_capped_and_says_so(tmp_path: Path) -> None:
    lab = wait_lab(tmp_path)
    p = progress_store.LabProgress(given_up=True, hints_taken=1)
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", history=p.history(), runs=2)
    g = attempt.grade([run(tmp_path / f"r{k}", k, lab=lab) for k in (1, 2)])
    assert g.passed and g.given_up and g.capped
    assert g.score == 50  # never the 90 of a solve without the solution (100 less the hint's 10)
    assert "after giving up" in g.verdict
    assert contradictions(g) == []
    assert "given up, yet scored" in " ".join(contradictions(replace(g, score=90)))


def test_the_solution_run_on_giving_up_is_shown_not_scored(tmp_path: Path) -> None:
    lab = wait_lab(tmp_path)
    attempt = FixAttempt.reference(lab, "ann", AttemptHistory())
    g = attempt.grade([run(tmp_path / f"r{k}", k, lab=lab) for k in (1, 2)])
    assert g.outcome == GradeOutcome.SOLUTION and g.score is None and g.given_up and not g.passed
    assert g.all_held and "not scored" in g.verdict


def test_fix_after_a_give_up_on_the_command_line_is_capped(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`labs --give-up`, then a passing `kafkalab fix`: once 100/100 although progress said given up."""
    from kafkalab.cli import fix_cmds
    from tests.test_fix_cli import FakeRun  # the CLI's runs faked: the grading is what this test claims

    FakeRun.made = []
    monkeypatch.setattr(fix_cmds, "HeadlessRun", FakeRun)
    assert main(["labs", "--give-up", "acks-0"]) == 0
    assert main(["fix", "acks-0", "-D", "producer.acks=all", "--runs-dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    g = read_grade(next((tmp_path / "runs").rglob(GRADE_FILE)))
    assert g.given_up and g.score == 50 and "score: 50 / 100" in out and "at most 50" in out
    assert contradictions(g) == []


# ---- the run-consistency check -----------------------------------------------------------------------
def graded_dir(tmp_path: Path) -> Grade:
    lab = wait_lab(tmp_path)
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", runs=2)
    return attempt.grade([run(tmp_path / f"r{k}", k, lab=lab) for k in (1, 2)])


def test_consistency_check_finds_every_kind_of_broken_promise(tmp_path: Path) -> None:
    g = graded_dir(tmp_path)
    assert g.passed and contradictions(g) == []
    wait_row = next(i for i, r in enumerate(g.rows) if r.text == WAIT)
    never = replace(g.rows[wait_row], seen=Unmeasured.NEVER)
    rows = [never if i == wait_row else r for i, r in enumerate(g.rows)]
    assert any("does not satisfy" in c for c in contradictions(replace(g, rows=rows)))
    assert any("not graded, yet it has rows" in c
               for c in contradictions(replace(g, outcome=GradeOutcome.NOT_GRADED)))
    assert any("another lab file" in c for c in contradictions(replace(g, lab_sha256="0" * 64)))
    assert any("the changes" in c for c in contradictions(replace(g, changes=["producer.acks=1"])))
    assert any("score 100, the rule gives" in c for c in contradictions(replace(g, score=100, hint_cost=10)))
    # a run's metric that does not hold what the grade says held
    result = json.loads((tmp_path / "r2" / "result.json").read_text())
    result["metrics"]["consumer.1.assign_wait_s"] = "never"
    (tmp_path / "r2" / "result.json").write_text(json.dumps(result))
    assert any(WAIT in c and "1/2" in c for c in contradictions(g))


def test_grades_check_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = graded_dir(tmp_path)
    assert main(["grades", "--check", str(tmp_path)]) == 0
    assert "every one consistent" in capsys.readouterr().out
    replace(g, score=100, rows=[replace(r, passed=True) for r in g.rows]).write(Path(g.runs[-1]))
    (tmp_path / "r1" / "result.json").unlink()
    assert main(["grades", "--check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "cannot be read" in out and "contradiction" in out


def test_old_grade_files_still_read(tmp_path: Path) -> None:
    """grade.json from before outcomes: given_up meant the solution's run, ended_early not graded."""
    old = {"lab_id": "acks-0", "who": "ann", "changes": [], "rows": [], "rules": [], "hints_taken": 0,
           "hint_cost": 0, "score": 0, "passed": False, "given_up": True, "verdict": "x"}
    (tmp_path / GRADE_FILE).write_text(json.dumps(old))
    assert read_grade(tmp_path / GRADE_FILE).outcome == GradeOutcome.SOLUTION
    (tmp_path / GRADE_FILE).write_text(json.dumps({**old, "given_up": False, "ended_early": ["x"]}))
    assert read_grade(tmp_path / GRADE_FILE).outcome == GradeOutcome.NOT_GRADED


def test_a_lab_file_with_the_old_never_sentinel_is_refused(tmp_path: Path) -> None:
    text = FIX.replace("[fix.expect]\nlost = 0", '[fix.expect]\n"consumer.1.assign_wait_s" = -1\nlost = 0', 1)
    with pytest.raises(KafkalabError, match="never"):
        load_lab(lab_file(tmp_path, text))


# ---- a value not observed judges nothing ---------------------------------------------------------
def test_a_row_not_observed_is_not_judged_and_alone_leaves_the_check_not_graded(tmp_path: Path) -> None:
    """A foreign consumer that does not report its rebalances: its wait was not observed. Once such a row
    read FAIL and the check NOT FIXED (score 0) although nothing seen had failed."""
    lab = wait_lab(tmp_path)
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", runs=2)
    g = attempt.grade([run(tmp_path / f"r{k}", k, wait=Unmeasured.NOT_OBSERVED, lab=lab) for k in (1, 2)])
    assert g.outcome == GradeOutcome.NOT_GRADED and g.rows == [] and g.score is None
    assert g.unobserved == [WAIT] and "not observed in the graded runs: " + WAIT in g.verdict
    assert "check it again" not in g.todo and "clients python" in g.todo  # the same runs would judge nothing again
    assert read_grade(Path(g.runs[-1]) / GRADE_FILE).unobserved == [WAIT]
    assert contradictions(g) == []
    assert "yet every run observed it" in " ".join(contradictions(replace(g, unobserved=["lost == 0"])))


def test_a_failure_seen_outranks_a_value_not_observed(tmp_path: Path) -> None:
    lab = wait_lab(tmp_path)
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", runs=2)
    results = [run(tmp_path / "r1", 1, wait=Unmeasured.NOT_OBSERVED, lab=lab),
               run(tmp_path / "r2", 2, wait=30.0, lab=lab)]
    g = attempt.grade(results)
    row = next(r for r in g.rows if r.text == WAIT)
    assert g.outcome == GradeOutcome.NOT_FIXED and row.mark == RowMark.FAIL and row.seen == 30.0
    others = attempt.grade([run(tmp_path / "r3", 3, lab=lab), run(tmp_path / "r4", 4, lab=lab)])
    assert {r.mark for r in others.rows} == {RowMark.PASS}
    assert contradictions(g) == []


def test_a_class_the_logs_cannot_tell_is_not_observed_never_zero() -> None:
    """partition-growth played by Java clients graded PASS on ``key_reordered == 0``, seen 0, where report.json
    said null: course-format logs carry no sequence numbers, and an absent count read as 0."""
    from kafkalab.analysis.report import Report
    from kafkalab.labs.expectations import Expectation
    from kafkalab.labs.metrics import report_metrics

    report = Report(run=None, totals={"lost": 0}, classes={"lost": 0, "key_reordered": None}, per_partition=[],
                    samples={}, verdict="", inputs=[], elapsed_s=0.0)
    values = report_metrics(report)
    assert values["key_reordered"] == Unmeasured.NOT_OBSERVED and values["lost"] == 0.0
    held, seen, _ = Expectation("key_reordered", "==", 0.0).evaluate(values)
    assert not held and seen == Unmeasured.NOT_OBSERVED
