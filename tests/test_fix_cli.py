"""`kafkalab fix`, `kafkalab grades`, `run -D/--topic/--broker-config` and the break-fix side of `kafkalab labs`,
without a cluster: every refusal is one line and exit 2 before anything starts; a graded attempt's flow runs on
a fake HeadlessRun (the real one is tests/test_fix_cli_cluster.py); grade files built from Grade objects."""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kafkalab.cli import build_parser, fix_cmds, main
from kafkalab.labs import progress
from kafkalab.labs.grade import GRADE_FILE, Grade, GradeOutcome, GradeRow, read_grade, who_am_i
from kafkalab.labs.grade_consistency import contradictions
from kafkalab.labs.loader import catalog, find_lab, load_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.results import ExpectationResult, FaultState, FaultStatus, Outcome, RunResult

INCIDENT_LAB = """\
[lab]
id = "{id}"
title = "Acks zero loses records"
teaches = "SECRET-TEACHES acks=0 loses what a dying broker held"
why = "SECRET-WHY the leader is paused, then killed"
instructions = "SECRET-INSTRUCTIONS set acks=0 and watch"

[[topic]]
name = "test-topic"
partitions = 3

[producer]
"producer.acks" = "0"
"producer.num-records-per-roll" = 1000

[[consumer]]
local_id = 1

[expect]
lost = "> 0"

[incident]
ticket = "TICKET: the billing team says some orders never show up downstream"
question = "What is the root cause?"
choices = ["the consumer commits too early", "the producer does not wait for acknowledgements", "disk full"]
answer = 2
explanation = "EXPLANATION: with acks=0 a record counts as sent once it left the socket"
"""

FIX_TABLE = """
[fix]
task = "TASK: make every record reach the consumer"
allow = ["producer.*"]
runs = 2

[fix.expect]
lost = 0

[[fix.rule]]
when = ["producer.acks=all"]
says = "RULE-SECRET acks=all waits for the leader"

[[fix.hint]]
after = 60
cost = 10
text = "HINT-SECRET look at acks"

[fix.solution]
settings = ["producer.acks=all"]
"""


pytestmark = pytest.mark.usefixtures("fresh_state")  # progress and config of these tests' own


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """A HeadlessRun that must never be made: refusals come before anything starts."""
    made: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        made.append(args)
        raise AssertionError("a run was started")

    monkeypatch.setattr(fix_cmds, "HeadlessRun", refuse)
    yield made
    assert not made


def incident_lab(tmp_path: Path, lab_id: str = "orders-go-missing", fix: bool = False) -> Path:
    path = tmp_path / f"{lab_id}.toml"
    path.write_text(INCIDENT_LAB.format(id=lab_id) + (FIX_TABLE if fix else ""), encoding="utf-8")
    return path


def plain_lab(tmp_path: Path, lab_id: str = "plain") -> Path:
    """A lab with neither [fix] nor [incident] (the catalog's may all gain one)."""
    path = tmp_path / f"{lab_id}.toml"
    text = INCIDENT_LAB.format(id=lab_id).split("[incident]")[0]
    text = text.replace("Acks zero loses records", "A plain lab").replace("SECRET-TEACHES", "plainly")
    path.write_text(text, encoding="utf-8")
    return path


def one_line_error(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kafkalab: error: "), err
    for word in words:
        assert word in err[0], err[0]
    return err[0]


# ---- kafkalab fix: refused before anything starts ------------------------------------------------------
@pytest.mark.parametrize(("argv", "words"), [
    (["acks-0", "-D", "consumer.group-id=x"], ["consumer.group-id", "you may change producer.*"]),
    (["acks-0", "-D", "producer.num-records-per-roll=10"], ["frozen", "you may change"]),
    (["acks-0", "--topic", "other-topic rf=1"], ["topic.other-topic.replication_factor", "you may change"]),
    (["acks-0", "--topic", "test-topic rf=9"], ["give 1..3"]),
    (["acks-0", "--topic", "test-topic rf=three"], ["whole number"]),
    (["acks-0", "-D", "producer.acks"], ["-D"]),
    (["acks-0", "-D", "producer.acks=maybe"], ["producer.acks"]),
    (["acks-0", "-D", "broker.x=1"], ["not a producer.* or consumer.* setting"]),
    (["acks-0", "--action", "whenever do something"], ["WHEN -> DO"]),
    (["acks-0"], ["give your fix", "--shipped"]),
    (["acks-0", "--solution", "-D", "producer.acks=1"], ["--solution", "without -D"]),
    (["FIXLAB", "--wrong", "1"], ["has no [[fix.wrong]]"]),
    (["acks-0", "--wrong", "99"], ["--wrong 99", "wrong fixes 1.."]),
    (["acks-0", "--shipped", "--runs", "0"], ["--runs 0", "1..10"]),
    (["FIXLAB", "--shipped", "--hints", "2"], ["--hints 2", "0..1"]),
    (["PLAIN", "-D", "producer.acks=all"], ["no fix exercise"]),
    (["no-such-lab", "--shipped"], ["no-such-lab"]),
])
def test_fix_refuses_bad_input_in_one_line(argv: list[str], words: list[str], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str], no_run: list[Any]) -> None:
    runs = tmp_path / "runs"
    labs = {"FIXLAB": str(incident_lab(tmp_path, fix=True)), "PLAIN": str(plain_lab(tmp_path))}
    assert main(["fix", *[labs.get(a, a) for a in argv], "--runs-dir", str(runs)]) == 2
    one_line_error(capsys, *words)
    assert not runs.exists()  # no run dir: nothing started


def test_fix_refuses_an_option_that_does_not_exist(capsys: pytest.CaptureFixture[str], no_run: list[Any]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["fix", "acks-0", "--acks", "all"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --acks all" in capsys.readouterr().err


def test_fix_refuses_solution_and_shipped_together(capsys: pytest.CaptureFixture[str], no_run: list[Any]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["fix", "acks-0", "--solution", "--shipped"])
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


# ---- kafkalab fix: a graded attempt, its runs faked ----------------------------------------------------
class FakeRun:
    """Stands in for HeadlessRun: the graded lab's expectations judged on metrics that depend on its acks, as
    the real lab's would (acks=0 loses records), so the changes must have reached the lab that runs."""

    made: ClassVar[list[FakeRun]] = []

    def __init__(self, lab: Lab, runs_root: Path, console: Any, seed: int | None = None, ports: Any = None) -> None:
        self.lab, self.runs_root, self.seed = lab, runs_root, seed
        FakeRun.made.append(self)

    def run(self) -> RunResult:
        run_dir = self.runs_root / f"{self.lab.id}-{len(FakeRun.made)}-seed{self.seed}"
        run_dir.mkdir(parents=True)
        acks = self.lab.producer.settings.get("producer.acks", "1")
        metrics = {"lost": 312.0 if acks == "0" else 0.0, "producer.acked": 200000.0}
        expectations = [ExpectationResult(e.text, *e.evaluate(metrics)) for e in self.lab.expectations]
        faults = [FaultStatus(i, f.describe(), FaultState.FIRED) for i, f in enumerate(self.lab.faults)]
        held = all(e.held for e in expectations)
        result = RunResult(self.lab.id, run_dir, Outcome.PASSED if held else Outcome.FAILED, expectations,
                           faults=faults, metrics=dict(metrics), duration_s=40.0, seed=self.seed or 0,
                           lab_sha256=self.lab.file_sha256(), changes=list(self.lab.changes))
        (run_dir / "result.json").write_text(json.dumps(result.as_dict()), encoding="utf-8")  # as a run writes it
        return result


@pytest.fixture
def fake_runs(monkeypatch: pytest.MonkeyPatch) -> list[FakeRun]:
    FakeRun.made = []
    monkeypatch.setattr(fix_cmds, "HeadlessRun", FakeRun)
    return FakeRun.made


def test_fix_grades_each_seed_and_writes_the_grade(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  fake_runs: list[FakeRun]) -> None:
    out = tmp_path / "out" / "grade.json"
    code = main(["fix", "acks-0", "-D", "producer.acks=all", "--who", "ada", "--hints", "1", "--seed", "7",
                 "--runs-dir", str(tmp_path / "runs"), "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert [r.seed for r in fake_runs] == [7, 8]  # the lab's [fix] runs = 2, from --seed
    assert all(r.lab.producer.settings["producer.acks"] == "all" for r in fake_runs)
    assert len(fake_runs[0].lab.faults) == 3  # the same faults
    g = read_grade(Path(fake_runs[-1].runs_root) / "acks-0-2-seed8" / GRADE_FILE)
    assert g.passed and g.who == "ada" and g.score == 90 and g.changes == ["producer.acks=all"]
    assert json.loads(out.read_text())["score"] == 90
    for row in g.rows:  # a card row per grade row, each PASS
        assert "PASS" in next(line for line in text.splitlines() if row.text in line)
    assert "lost == 0" in text and "2/2 runs" in text and "score: 90 / 100" in text and "FIXED" in text
    assert "acks=all: the producer counts a record as sent only once" in text  # the rule that applied
    assert "grade written:" in text
    p = progress.load("acks-0")
    assert p.fixed and p.best_score == 90 and p.hints_taken == 1
    assert contradictions(g) == []  # every number on the card is what the runs' files say


def test_fix_shipped_fails_with_the_row_that_did_not_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         fake_runs: list[FakeRun]) -> None:
    assert main(["fix", "acks-0", "--shipped", "--runs", "1", "--runs-dir", str(tmp_path / "runs")]) == 1
    text = capsys.readouterr().out
    lost = next(line for line in text.splitlines() if "lost == 0" in line)
    assert "FAIL" in lost and "312" in lost and "0/1 runs" in lost
    assert "NOT FIXED YET" in text
    assert not progress.load("acks-0").fixed  # the self-check is not the attendee's attempt
    assert progress.progress_path().exists() is False


def test_fix_solution_passes_and_wrong_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            fake_runs: list[FakeRun]) -> None:
    runs = str(tmp_path / "runs")
    assert main(["fix", "acks-0", "--solution", "--runs", "1", "--runs-dir", runs]) == 0
    solution = read_grade(next((tmp_path / "runs").rglob(GRADE_FILE)))
    assert solution.outcome == GradeOutcome.SOLUTION and solution.score is None  # shown to work, never scored
    # the wrong fix (rf=3 with acks=0) would still lose records in the real lab: the fake says so too
    assert main(["fix", "acks-0", "--wrong", "1", "--runs", "1", "--runs-dir", runs]) == 1
    assert fake_runs[-1].lab.topics[0].replication_factor == 3
    assert "more replicas did not matter" in capsys.readouterr().out


def test_fix_run_that_could_not_go_on_fails_and_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(FakeRun):
        def run(self) -> RunResult:
            result = super().run()
            result.outcome, result.error = Outcome.ERROR, "broker 2 did not start: see its log"
            return result

    monkeypatch.setattr(fix_cmds, "HeadlessRun", Broken)
    assert main(["fix", "acks-0", "-D", "producer.acks=all", "--runs", "1", "--runs-dir", str(tmp_path / "r")]) == 1
    text = capsys.readouterr().out
    assert "ended early: broker 2 did not start: see its log" in text
    assert "NOT GRADED: graded run 1 ended early: broker 2 did not start: see its log. Nothing was judged." in text
    # a check that was not graded judges nothing: no row, no score, no rule, only why and what to do
    assert "PASS" not in text and "FAIL" not in text and "score" not in text and "did not matter" not in text
    assert "check it again" in text
    assert progress.load("acks-0").not_graded == 1 and not progress.load("acks-0").fixed


def test_fix_stops_cleanly_on_ctrl_c(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    class Interrupted(FakeRun):
        def run(self) -> RunResult:
            (self.runs_root / "partial").mkdir(parents=True)
            raise KeyboardInterrupt

    monkeypatch.setattr(fix_cmds, "HeadlessRun", Interrupted)
    assert main(["fix", "acks-0", "--shipped", "--runs-dir", str(tmp_path / "runs")]) == 130
    assert "files so far are kept" in capsys.readouterr().out
    assert (tmp_path / "runs" / "partial").is_dir()


# ---- kafkalab run with changes --------------------------------------------------------------------------
def test_run_applies_changes_with_no_allow_list() -> None:
    args = build_parser().parse_args(["run", "acks-0", "-D", "consumer.group-id=mine", "--topic",
                                      "test-topic rf=2 min.isr=2", "--broker-config", "num.io.threads=4"])
    lab, changes = fix_cmds.changed_lab(args, load_lab(find_lab("acks-0")))
    assert len(changes) == 4
    assert lab.consumers[0].settings["consumer.group-id"] == "mine"  # not in acks-0's allow list: a plain run
    assert lab.topics[0].replication_factor == 2 and lab.topics[0].configs["min.insync.replicas"] == "2"
    assert lab.cluster.overrides["num.io.threads"] == "4"


@pytest.mark.parametrize(("argv", "words"), [
    (["-D", "producer.acks=maybe"], ["producer.acks"]),
    (["--topic", "test-topic rf=7"], ["give 1..3"]),
    (["--topic", "nope rf=1"], ["no such topic"]),
    (["--broker-config", "novalue"], ["--broker-config"]),
])
def test_run_refuses_bad_changes_in_one_line(argv: list[str], words: list[str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    assert main(["run", "acks-0", *argv, "--headless", "--runs-dir", str(runs)]) == 2
    one_line_error(capsys, *words)
    assert not runs.exists()


def test_run_takes_no_action(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "acks-0", "--action", "brokers >= 3 -> replicate topic test-topic rf=3"])


# ---- kafkalab grades -----------------------------------------------------------------------------------
def a_grade(who: str, lab: str, passed: bool, score: int = 0, hints: int = 0, given_up: bool = False,
            on_task: float | None = None, at: float = 1_700_000_000.0,
            outcome: GradeOutcome | None = None) -> Grade:
    row = GradeRow("lost == 0", passed, 0 if passed else 312, 0, 2 if passed else 0, 2)
    outcome = outcome or (GradeOutcome.FIXED if passed else GradeOutcome.NOT_FIXED)
    graded = outcome != GradeOutcome.NOT_GRADED
    return Grade(lab_id=lab, who=who, changes=["producer.acks=all"], rows=[row] if graded else [], rules=[],
                 hints_taken=hints, hint_cost=10 * hints, score=score if graded else None, outcome=outcome,
                 runs=["r1", "r2"], seeds=[1, 2], duration_s=95.0, time_on_task_s=on_task, given_up=given_up,
                 finished_at=at, ended_early=[] if graded else ["graded run 1 ended early: broker 2 did not start"])


@pytest.fixture
def room(tmp_path: Path) -> Path:
    """Grades handed in as a room does: one folder per laptop, any depth, one grade.json per attempt."""
    root = tmp_path / "room"
    grades = [
        ("laptop-1/kafkalab-runs/acks-0-a", a_grade("ada", "acks-0", False, at=1)),
        ("laptop-1/kafkalab-runs/acks-0-b", a_grade("ada", "acks-0", True, 90, hints=1, on_task=754, at=2)),
        ("laptop-1/kafkalab-runs/acks-0-c", a_grade("ada", "acks-0", True, 80, hints=2, at=3)),
        ("laptop-1/kafkalab-runs/acks-0-d", a_grade("ada", "acks-0", False, at=4, outcome=GradeOutcome.NOT_GRADED)),
        ("laptop-2/x/y/z", a_grade("bob", "acks-0", True, given_up=True, outcome=GradeOutcome.SOLUTION)),
        ("laptop-2/w", a_grade("bob", "acks-0", False)),
        ("laptop-2/v", a_grade("bob", "acks-0", True, 50, given_up=True, at=5)),
        ("laptop-3", a_grade("cy", "min-isr-rf3", False)),
        ("laptop-5", a_grade("dee", "acks-0", False, outcome=GradeOutcome.NOT_GRADED)),
    ]
    for folder, g in grades:
        (root / folder).mkdir(parents=True)
        g.write(root / folder)
    (root / "laptop-4").mkdir()
    (root / "laptop-4" / GRADE_FILE).write_text("{not json", encoding="utf-8")
    return root


def test_grades_table_shows_the_best_attempt_and_the_count(room: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("COLUMNS", "120")  # every row on one line
    assert main(["grades", str(room), str(tmp_path / "empty")]) == 0
    captured = capsys.readouterr()
    rows = [re.split(r"\s{2,}", line.strip()) for line in captured.out.splitlines()]  # columns 2 spaces apart
    cells = {row[0]: row for row in rows if row[0] in ("ada", "bob", "cy", "dee")}
    # who, lab, solved, score, tries, not graded, gave up, hints, time: a not-graded attempt is never a try
    assert cells["ada"] == ["ada", "acks-0", "PASS", "90", "3", "1", "no", "2", "1m35s runs, 12m34s on task"]
    assert cells["bob"] == ["bob", "acks-0", "PASS after giving up", "50", "2", "0", "yes", "0", "1m35s runs"]
    assert cells["cy"] == ["cy", "min-isr-rf3", "FAIL", "0", "1", "0", "no", "0", "1m35s runs"]
    assert cells["dee"] == ["dee", "acks-0", "not graded", "-", "0", "1", "no", "0", "1m35s runs"]
    err = captured.err.strip().splitlines()
    assert len(err) == 2
    assert any("laptop-4" in line and "skipped" in line for line in err)  # the corrupt file, named, skipped
    assert any(str(tmp_path / "empty") in line and "no grade.json" in line for line in err)


def test_grades_without_a_folder_reads_the_runs_folder_here(room: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An attendee's own grades are where `kafkalab fix` and the console put them: `kafkalab grades` alone read
    nothing and asked for a folder."""
    monkeypatch.chdir(room / "laptop-1")  # holds kafkalab-runs/, as an attendee's working folder does
    assert main(["grades"]) == 0
    assert "ada" in capsys.readouterr().out
    monkeypatch.chdir(tmp_path)
    assert main(["grades"]) == 2
    assert "no ./kafkalab-runs here" in capsys.readouterr().err


def test_grades_csv(room: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grades", str(room), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["who"], r["lab"], r["solved"], r["score"], r["tries"], r["not_graded"], r["given_up"])
            for r in rows] == [
        ("ada", "acks-0", "PASS", "90", "3", "1", "no"),
        ("bob", "acks-0", "PASS after giving up", "50", "2", "0", "yes"),
        ("cy", "min-isr-rf3", "FAIL", "0", "1", "0", "no"),
        ("dee", "acks-0", "not graded", "", "0", "1", "no")]
    assert rows[0]["hints_taken"] == "2" and rows[0]["runs_s"] == "95" and rows[0]["time_on_task_s"] == "754"
    assert rows[0]["grade_file"].endswith("acks-0-b/grade.json")


def test_grades_with_none_at_all_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    assert main(["grades", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == f"kafkalab: {tmp_path / 'a'}: no grade.json in it"
    assert err[-1].startswith("kafkalab: error: no grade.json")


def test_grades_set_name_is_who_you_are(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grades", "--set-name", "Ada L."]) == 0
    assert "Ada L." in capsys.readouterr().out
    assert who_am_i() == "Ada L."
    assert who_am_i("given") == "given"
    assert main(["grades", "--set-name", " "]) == 2


# ---- kafkalab labs: what a fix exercise and an incident show -------------------------------------------
def test_labs_table_says_what_each_lab_offers(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    acks = next(p for p in catalog() if p.name == "03-acks-0.toml")
    ours = [acks, plain_lab(tmp_path), incident_lab(tmp_path, fix=True)]
    monkeypatch.setattr("kafkalab.labs.runner.catalog", lambda: ours)
    assert main(["labs"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    ids = [line.split()[1] if len(line.split()) > 1 and line.split()[0].isdigit() else "" for line in lines]
    offers = {lab_id: lines[i + 1].split("offers ")[1].split("  ")[0] if "offers " in lines[i + 1] else ""
              for i, lab_id in enumerate(ids) if lab_id}  # under each id, the line below says what it offers
    assert offers["acks-0"] == "fix"
    assert offers["orders-go-missing"] == "fix, incident"
    assert "Acks zero" not in out and "SECRET" not in out  # an incident's title and teaches give its cause away
    assert offers["plain"] == ""


def test_labs_show_of_a_fix_shows_the_task_never_the_solution(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["labs", "--show", "acks-0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Make every record the producer counts as sent reach the consumer" in out
    assert "you may change: producer.*, topic.test-topic.*, broker.*" in out
    assert "hint 1: offered after 1m00s, costs 10 points" in out and "hint 2: offered after 3m00s" in out
    assert "Compare what the producer" not in out  # a hint's text
    assert "acks=all: the producer counts" not in out  # a rule
    assert "producer.acks=all" not in out  # the solution


def test_incident_hidden_until_answered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(incident_lab(tmp_path, fix=True))
    assert main(["labs", "--show", path]) == 0
    out = capsys.readouterr().out
    assert "TICKET" in out and "What is the root cause?" in out
    assert "1. the consumer commits too early" in out and "3. disk full" in out
    assert "TASK" in out  # the fix's task
    for secret in ("EXPLANATION", "SECRET", "Acks zero", "<- the cause"):
        assert secret not in out

    assert main(["labs", "--answer", path, "1"]) == 1
    assert capsys.readouterr().out.strip() == "1. the consumer commits too early: not the cause"
    assert progress.load("orders-go-missing").wrong_answers == 1
    assert main(["labs", "--show", path]) == 0
    assert "EXPLANATION" not in capsys.readouterr().out  # a wrong answer reveals nothing

    assert main(["labs", "--answer", path, "2"]) == 0
    assert "EXPLANATION" in capsys.readouterr().out
    p = progress.load("orders-go-missing")
    assert p.diagnosed and p.wrong_answers == 1
    assert main(["labs", "--show", path]) == 0
    out = capsys.readouterr().out
    assert "EXPLANATION" in out and "2. the producer does not wait for acknowledgements  <- the cause" in out
    assert "SECRET-INSTRUCTIONS" not in out  # the walkthrough names the fix too: it waits for the fix
    assert "RULE-SECRET" not in out and "HINT-SECRET" not in out  # never the rules nor a hint's text


@pytest.mark.parametrize(("argv", "words"), [
    (["--answer", "PLAIN", "1"], ["is no incident"]),
    (["--answer", "INCIDENT", "4"], ["1..3"]),
    (["--answer", "INCIDENT", "two"], ["1..3"]),
    (["--give-up", "PLAIN"], ["nothing to give up"]),
])
def test_labs_answer_refusals(argv: list[str], words: list[str], tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    labs = {"INCIDENT": str(incident_lab(tmp_path)), "PLAIN": str(plain_lab(tmp_path))}
    assert main(["labs", *[labs.get(a, a) for a in argv]]) == 2
    one_line_error(capsys, *words)
    assert not progress.progress_path().exists()


def test_give_up_shows_the_cause_and_the_solution(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(incident_lab(tmp_path, fix=True))
    assert main(["labs", "--give-up", path]) == 0
    out = capsys.readouterr().out
    assert "EXPLANATION" in out and "-D producer.acks=all" in out
    assert progress.load("orders-go-missing").given_up
    assert main(["labs", "--show", path]) == 0
    assert "EXPLANATION" in capsys.readouterr().out


def test_give_up_of_a_topic_fix_reads_as_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rf-lab.toml"
    text = INCIDENT_LAB.format(id="rf-lab") + FIX_TABLE.replace('allow = ["producer.*"]', 'allow = ["topic.*"]')
    text = text.replace('settings = ["producer.acks=all"]', 'topics = ["test-topic rf=3 min.isr=2"]')
    text = text.replace('[[topic]]\nname = "test-topic"', '[cluster]\nbrokers = 3\n\n[[topic]]\nname = "test-topic"')
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    assert main(["labs", "--give-up", str(path)]) == 0
    out = capsys.readouterr().out
    assert '--topic "test-topic rf=3"; --topic "test-topic min.isr=2"' in out
