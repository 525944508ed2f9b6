"""One truth on every screen (issue 44, "how to keep it true"): a run's files checked against each other. Each fact
the views share (leader changes, failover time, faults fired, missed and by whom, lost against missed,
truncation) is recomputed from what the run recorded with the core's own functions; a consistent run has no
contradiction, and one file tampered with is named in words, by `kafkalab grades --check` too."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kafkalab.analysis.report import PartitionRow, Report
from kafkalab.analysis.verdict import verdict
from kafkalab.cli import main
from kafkalab.labs import load_lab
from kafkalab.labs.failover import lab_topics
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.fix import actions_of, parse_changes
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade_consistency import contradictions
from kafkalab.labs.judge import judge
from kafkalab.labs.metrics import timeline_metrics
from kafkalab.labs.results import ExpectationResult, Outcome, RunResult
from kafkalab.labs.run import LabRun
from kafkalab.labs.run_consistency import read_result, run_dir_contradictions
from tests.lab_fakes import World
from tests.test_fix_core import lab_file
from tests.test_labs_run import lab_of
from tests.test_loss_split import SAID, audited_run
from tests.test_truncation import LABS, report, write_logs, zombie_timeline

RECORDED = Path(__file__).resolve().parent / "recorded"
# the lab's four faults and an attendee's action: the first three faults fire, the third never comes (nor the
# fourth after it), the action fires beside them
FAULTS = """
    [[fault]]
    at = "progress 30%"
    do = "kill"
    on = "leader test-topic/0"

    [[fault]]
    at = "after 0.5s"
    do = "start"
    on = "same"

    [[fault]]
    at = "isr test-topic/0 == 7"
    do = "note"
    note = "never: the topic has 3 replicas"
    timeout = 1

    [[fault]]
    at = "after 0s"
    do = "note"
    note = "nor this one: the one before never fired"
"""
ACTION = "progress 50% -> alter-config topic test-topic retention.ms=60000"
# an audited analysis: two records in the topic that the consumers skipped, on partition 0
CLASSES = {"lost": 2, "lost_by_brokers": 0, "missed_by_consumers": 2, "duplicated": 0}

pytestmark = pytest.mark.usefixtures("fresh_state")


def analysed(run_dir: Path, _audits: list[Path], leader_changes: Mapping[tuple[str, int], int]) -> Report:
    """The analysis as the run's own writes it: report.json, with the leader changes the run handed it."""
    rows = [PartitionRow("test-topic", p, {**dict.fromkeys(CLASSES, 0), **(CLASSES if p == 0 else {})},
                         leader_changes.get(("test-topic", p), 0)) for p in range(3)]
    totals = {"attempted": 1000, "acknowledged": 1000, "consumed_rows": 998, "typed": 0}
    r = Report(run=None, totals=totals, classes=dict(CLASSES), per_partition=rows, samples={},
               verdict=verdict(CLASSES, 1000, 0, 998), inputs=[], elapsed_s=0.0, audit=True)
    r.write_json(run_dir / "report.json")
    return r


@pytest.fixture(scope="module")
def failover_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of a fake cluster (tests/lab_fakes.py) through the real pipeline: the lab kills the leader of
    test-topic/0 and starts it again, a note's trigger never comes, the attendee's action alters the topic."""
    tmp = tmp_path_factory.mktemp("failover")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KAFKALAB_STATE", str(tmp / "state"))
        lab = lab_of(tmp, FAULTS)
        lab = replace(lab, actions=actions_of(parse_changes(3, actions=[ACTION])))
        run_dir = tmp / "run"
        run_dir.mkdir()
        LabRun(lab, run_dir, replace(World().deps(), analyze=analysed), seed=3).execute()
    return run_dir


@pytest.fixture
def run_copy(failover_run: Path, tmp_path: Path) -> Path:
    """The failover run's files, to tamper with."""
    return Path(shutil.copytree(failover_run, tmp_path / "run"))


def edit(path: Path, change: Callable[[Any], None]) -> None:
    """``path``'s JSON, changed in place by ``change``."""
    d = json.loads(path.read_text(encoding="utf-8"))
    change(d)
    path.write_text(json.dumps(d), encoding="utf-8")


def without(run_dir: Path, drop: Callable[[dict[str, Any]], bool]) -> None:
    """timeline.json without its first event that ``drop`` picks."""
    def change(d: dict[str, Any]) -> None:
        d["events"].remove(next(e for e in d["events"] if drop(e)))
    edit(run_dir / "timeline.json", change)


def said(run_dir: Path) -> str:
    return "\n".join(run_dir_contradictions(run_dir))


def test_a_run_with_a_failover_a_missed_fault_and_an_action_agrees_with_itself(failover_run: Path) -> None:
    run = read_result(failover_run)
    assert "timeline.failover_s" in run.metrics and run.metrics["timeline.leader_changes"]  # what is claimed
    assert [line for line in run.verdict.split("\n") if line.startswith("leader of test-topic/0: broker 1 -> ")]
    assert [f.state for f in run.faults] == ["fired", "fired", "missed", "missed", "fired"]
    assert run.faults[-1].attendee
    assert run_dir_contradictions(failover_run) == []


# ---- leader changes and failover -----------------------------------------------------------------------------
def test_a_failover_time_the_timeline_does_not_give_is_found(run_copy: Path) -> None:
    failover = read_result(run_copy).metrics["timeline.failover_s"]
    edit(run_copy / "result.json", lambda d: d["metrics"].update({"timeline.failover_s": 99.0}))
    assert f"timeline.failover_s is 99 in result.json, the timeline gives {failover:g}" in said(run_copy)


def test_a_failover_line_the_timeline_does_not_give_is_found(run_copy: Path) -> None:
    line = next(line for line in read_result(run_copy).verdict.split("\n") if line.startswith("leader of "))
    late = line.replace(" in ", " within ", 1)  # the watch blind for longer than a poll
    edit(run_copy / "result.json", lambda d: d.update(verdict=d["verdict"].replace(line, late)))
    assert f"the verdict says {late!r}, the timeline gives {line!r}" in said(run_copy)


def test_a_leader_change_dropped_from_the_timeline_is_found(run_copy: Path) -> None:
    run = read_result(run_copy)
    assert run.report is not None
    changes, on_0 = run.metrics["timeline.leader_changes"], run.report.per_partition[0].leader_changes
    assert isinstance(changes, float) and on_0
    without(run_copy, lambda e: e["kind"] == "leader-change" and e["source"] == "test-topic/0")
    found = said(run_copy)
    assert f"timeline.leader_changes is {changes:g} in result.json, the timeline gives {changes - 1:g}" in found
    assert f"report.json counts {on_0} leader change(s) of test-topic/0, the timeline {on_0 - 1}" in found
    assert "timeline.failover_s is" in found and "the timeline gives absent (not observed)" in found  # no failover


def test_a_reports_leader_changes_the_timeline_does_not_give_are_found(run_copy: Path) -> None:
    edit(run_copy / "report.json", lambda d: d["per_partition"][1].update(leader_changes=4))
    assert "report.json counts 4 leader change(s) of test-topic/1, the timeline 0" in said(run_copy)


# ---- faults: fired, missed and by whom ------------------------------------------------------------------------
def test_a_missed_count_its_fault_list_does_not_give_is_found(run_copy: Path) -> None:
    edit(run_copy / "result.json", lambda d: d["metrics"].update({"faults.missed": 1.0}))
    assert "faults.missed is 1 in result.json, its fault list gives 2" in said(run_copy)


def done_by(run_dir: Path, action: str, actor: str) -> None:
    """The timeline's first fault event of ``action`` said to be done by ``actor``."""
    def recast(d: dict[str, Any]) -> None:
        next(e for e in d["events"] if e["kind"] == "fault" and e["action"] == action)["actor"] = actor
    edit(run_dir / "timeline.json", recast)


def test_a_fault_the_timeline_says_someone_else_did_is_found(run_copy: Path) -> None:
    done_by(run_copy, "kill", "attendee")
    found = said(run_copy)
    assert "the timeline says kill broker-1 by hand at " in found
    assert "result.json lists it as the lab's fault 1 (kill leader test-topic/0)" in found


def test_a_fired_fault_without_its_event_is_found(run_copy: Path) -> None:
    without(run_copy, lambda e: e["kind"] == "fault" and e["action"] == "start")
    found = said(run_copy)
    assert "result.json lists the lab's fault 2 (start same) as fired, the timeline has no event of it" in found


def test_a_missed_fault_the_timeline_does_not_say_is_found(run_copy: Path) -> None:
    without(run_copy, lambda e: e["kind"] == "fault-missed")
    assert "the timeline says fault(s) none did not fire, result.json 3" in said(run_copy)


def test_an_action_the_timeline_says_the_lab_did_is_found(run_copy: Path) -> None:
    done_by(run_copy, "alter-config", "lab")
    found = said(run_copy)
    assert "the timeline says alter-config topic test-topic: retention.ms=60000 by the lab at " in found
    assert "result.json lists it as the attendee's fault 1 (alter-config topic test-topic)" in found


# ---- lost against missed --------------------------------------------------------------------------------------
def test_a_missed_count_the_report_does_not_give_is_found(run_copy: Path) -> None:
    edit(run_copy / "report.json", lambda d: d.update(missed_by_consumers=1))
    found = said(run_copy)
    assert "missed_by_consumers is 2 in result.json, 1 in report.json" in found
    assert "report.json counts 2 lost, yet 0 lost by the brokers and 1 missed by the consumers" in found


def test_a_partitions_split_that_does_not_add_up_is_found(run_copy: Path) -> None:
    edit(run_copy / "report.json", lambda d: d["per_partition"][0].update(lost_by_brokers=2))
    assert ("report.json counts 2 lost for test-topic/0, yet 2 lost by the brokers and 2 missed by the consumers"
            in said(run_copy))


def test_a_verdict_that_is_not_the_reports_counts_is_found(run_copy: Path) -> None:
    edit(run_copy / "result.json", lambda d: d.update(verdict=d["verdict"].replace("2 records", "3 records", 1)))
    assert "the verdict '3 records in the topic were never processed" in said(run_copy)
    assert "is not what report.json's counts give" in said(run_copy)


def test_the_grade_says_the_loss_its_last_run_reports(tmp_path: Path) -> None:
    lab = load_lab(lab_file(tmp_path))
    fix = lab.fix
    assert fix is not None
    runs = []
    for seed in (1, 2):
        run = audited_run(tmp_path / f"r{seed}")
        run.seed, run.lab_sha256, run.changes = seed, lab.file_sha256(), ["producer.acks=all"]
        run.metrics["producer.acked"] = 2000.0
        run.expectations = [ExpectationResult(e.text, *e.evaluate(run.metrics)) for e in fix.expectations]
        run.run_dir.mkdir()
        (run.run_dir / "result.json").write_text(json.dumps(run.as_dict()), encoding="utf-8")
        assert run.report is not None
        run.report.write_json(run.run_dir / "report.json")
        runs.append(run)
    g = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", runs=2).grade(runs)
    assert g.loss == SAID and contradictions(g) == []
    assert [c for c in contradictions(replace(g, loss="")) if c.startswith("the grade says 'nothing' of the loss")]
    edit(tmp_path / "r2" / "report.json", lambda d: d.update(missed_by_consumers=1500))
    assert "graded run 2: missed_by_consumers is 2000 in result.json, 1500 in report.json" in contradictions(g)


# ---- truncation -----------------------------------------------------------------------------------------------
@pytest.fixture
def zombie_run(tmp_path: Path) -> Path:
    """zombie-leader judged as a run judges it (tests/test_truncation.py's isolation and broker-1's log), its files
    written as the run writes them."""
    lab = load_lab(LABS / "26-zombie-leader.toml")
    run_dir = tmp_path / "run"
    write_logs(run_dir / "cluster")
    shutil.copy(LABS / "26-zombie-leader.toml", run_dir / "lab.toml")
    timeline = zombie_timeline()
    faults = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    said_by_report = report("4,414 acknowledged records never reached the log")
    result = judge(RunResult(lab.id, run_dir, Outcome.ERROR, duration_s=60.0), lab, {},
                   timeline_metrics(timeline, lab_topics(lab), [1]), said_by_report, faults, timeline)
    result.faults = [f.copy() for f in faults.statuses]
    timeline.save(run_dir / "timeline.json")
    (run_dir / "result.json").write_text(json.dumps(result.as_dict()), encoding="utf-8")
    said_by_report.write_json(run_dir / "report.json")
    return run_dir


def test_a_truncation_agrees_with_the_brokers_logs(zombie_run: Path) -> None:
    run = read_result(zombie_run)
    assert run.metrics["truncated"] == 4414 and run.findings and run.metrics["timeline.failover_s"] == 10.323
    assert run_dir_contradictions(zombie_run) == []


def test_a_truncated_count_the_logs_do_not_give_is_found(zombie_run: Path) -> None:
    edit(zombie_run / "result.json", lambda d: d["metrics"].update(truncated=1))
    assert "truncated is 1 in result.json, the brokers' logs give 4,414" in said(zombie_run)


def test_a_truncation_gone_from_the_logs_is_found(zombie_run: Path) -> None:
    log = zombie_run / "cluster" / "broker-1" / "logs" / "server.log"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                           if "Truncating to offset 1391" not in line))
    found = said(zombie_run)
    assert "truncated is 4414 in result.json, the brokers' logs give 0" in found
    assert "the findings say 'partition 0: broker-1 truncated 4,414 records" in found
    assert "not what the brokers' logs give (0 truncation(s) of 0 records)" in found


def test_findings_the_verdict_does_not_end_with_are_found(zombie_run: Path) -> None:
    edit(zombie_run / "result.json", lambda d: d.update(verdict=d["verdict"].rsplit("\n", 1)[0]))
    assert "the findings are not the verdict's last lines" in said(zombie_run)


# ---- every recorded run, and the command line -----------------------------------------------------------------
def recorded_runs() -> Iterator[Path]:
    return (p.parent for p in sorted(RECORDED.glob("*/result.json")))


@pytest.mark.parametrize("run_dir", list(recorded_runs()), ids=lambda p: p.name)
def test_every_recorded_run_agrees_with_itself(run_dir: Path) -> None:
    assert run_dir_contradictions(run_dir) == []


def test_grades_check_checks_runs_without_a_grade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "kafkalab-runs"
    run_dir = Path(shutil.copytree(RECORDED / "controller-failover", runs / "controller-failover-1"))
    assert main(["grades", "--check", str(runs)]) == 0
    said = capsys.readouterr()
    assert "1 run(s) without a grade against their own files: every one consistent" in said.out
    assert "no grade.json" not in said.err  # a folder of runs is what --check reads: no complaint beside its answer
    edit(run_dir / "result.json", lambda d: d["metrics"].update({"timeline.leader_changes": 5}))
    assert main(["grades", "--check", str(runs)]) == 1
    out = capsys.readouterr().out
    assert f"{run_dir}: timeline.leader_changes is 5 in result.json, the timeline gives 0" in out
    assert "1 contradiction(s)" in out
    (tmp_path / "empty").mkdir()
    assert main(["grades", "--check", str(tmp_path / "empty")]) == 2
