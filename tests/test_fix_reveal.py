"""What a break-fix lab reveals, and when, without the console: `kafkalab labs --show / --answer / --give-up`
(the task always; after a right answer the cause, never the cure; after giving up everything), the exercise's
hints (none after giving up), and a run's verdict (it names a fix lab's cause only once the attendee found it
or gave up)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafkalab.analysis.job import CLASSES, TOTALS
from kafkalab.analysis.report import Report
from kafkalab.analysis.verdict import verdict
from kafkalab.cli import main
from kafkalab.feeds.exercise import Exercise
from kafkalab.labs import progress
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.judge import judge
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.results import Outcome, RunResult
from kafkalab.labs.timeline import Timeline
from tests.test_fix_cli import FIX_TABLE, INCIDENT_LAB

CURE = 'cure = "CURE: set acks=all before anything is sent"\n'


pytestmark = pytest.mark.usefixtures("fresh_state")  # progress and config of these tests' own


def incident_with_fix(tmp_path: Path, cure: bool = False) -> str:
    path = tmp_path / "orders-go-missing.toml"
    path.write_text(INCIDENT_LAB.format(id="orders-go-missing") + (CURE if cure else "") + FIX_TABLE,
                    encoding="utf-8")
    return str(path)


def shown(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    main(["labs", *argv])
    return capsys.readouterr().out


def test_labs_show_gives_the_task_before_and_after_the_diagnosis_and_never_the_walkthrough_then(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = incident_with_fix(tmp_path)
    before = shown(capsys, "--show", path)
    assert "TICKET" in before and "TASK" in before and "EXPLANATION" not in before

    answered = shown(capsys, "--answer", path, "2")
    assert "EXPLANATION" in answered and "TASK" in answered  # what to do next: the task
    assert "producer.acks=all" not in answered

    after = shown(capsys, "--show", path)
    assert "TICKET" in after and "TASK" in after and "EXPLANATION" in after
    for secret in ("SECRET-INSTRUCTIONS", "SECRET-WHY", "producer.acks=all"):  # the walkthrough names the fix
        assert secret not in after, secret


def test_the_cure_shows_once_given_up_never_after_a_right_answer(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = incident_with_fix(tmp_path, cure=True)
    assert "CURE" not in shown(capsys, "--answer", path, "2") + shown(capsys, "--show", path)
    given_up = shown(capsys, "--give-up", path)
    assert "EXPLANATION" in given_up and "CURE" in given_up and "-D producer.acks=all" in given_up
    everything = shown(capsys, "--show", path)
    assert "CURE" in everything and "SECRET-INSTRUCTIONS" in everything and "TASK" in everything


def test_no_hint_is_offered_after_giving_up(tmp_path: Path) -> None:
    lab = load_lab(Path(incident_with_fix(tmp_path)))
    exercise = Exercise(lab, tmp_path / "progress.json", clock=lambda: 1e12)  # every hint's time has come
    assert exercise.next_hint() is not None
    exercise.give_up()
    assert exercise.next_hint() is None
    view = exercise.view()
    assert view.next_hint is None and view.given_up


def test_giving_up_reveals_the_cause_the_cure_and_the_solution(tmp_path: Path) -> None:
    lab = load_lab(Path(incident_with_fix(tmp_path, cure=True)))
    text = Exercise(lab, tmp_path / "progress.json").give_up()
    assert "EXPLANATION" in text and "CURE" in text and "producer.acks=all" in text


def test_an_exercise_view_shows_the_cause_after_the_diagnosis_and_the_cure_after_the_fix(tmp_path: Path) -> None:
    lab = load_lab(Path(incident_with_fix(tmp_path, cure=True)))
    exercise = Exercise(lab, tmp_path / "progress.json")
    exercise.answer(1)
    view = exercise.view()
    assert view.incident is not None and "EXPLANATION" in view.incident.explanation
    assert not view.incident.cure and not view.solved and not view.solution
    exercise.give_up()
    view = exercise.view()
    assert view.incident is not None and "CURE" in view.incident.cure and view.solved


def missed_report() -> Report:
    """What commit-too-early's break shows: records in the topic that no consumer processed."""
    classes: dict[str, int | None] = dict.fromkeys(CLASSES, 0) | {"lost": 84, "missed_by_consumers": 84}
    totals = dict.fromkeys(TOTALS, 3000) | {"typed": 0}
    return Report(run="r", totals=totals, classes=classes, per_partition=[], samples={},
                  verdict=verdict(classes, 3000, 0, 2916), inputs=[], elapsed_s=1.0)


def judged_verdict(tmp_path: Path) -> str:
    lab = load_lab(find_lab("commit-too-early"))
    result = RunResult(lab.id, tmp_path, Outcome.FAILED)
    faults = FaultFiring([], Timeline(lab.id), random.Random(0), [])
    return judge(result, lab, {}, {}, missed_report(), faults).verdict


@pytest.mark.parametrize("found", ["diagnosed", "fixed", "given_up"])
def test_a_fix_labs_verdict_names_the_cause_only_once_it_was_found(tmp_path: Path, found: str) -> None:
    said = judged_verdict(tmp_path)
    assert "84 records in the topic were never processed" in said
    assert "committed" not in said, said  # the cause: the attendee's to find
    progress.save("commit-too-early", progress.LabProgress(**{found: True}))
    assert "offsets were committed before processing" in judged_verdict(tmp_path)
