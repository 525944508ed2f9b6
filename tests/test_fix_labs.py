"""The catalog's fix exercises, without a cluster: each loads, its reference solution and wrong fixes are
changes it allows and make a valid graded lab, its hints leave solving worth something, and every wrong fix
is explained by a rule (a wrong fix graded FAIL must say why)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.feeds.exercise import Exercise
from kafkalab.labs.fix import ChangeKind, FixExercise, change_from_text, prompt_lines
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.loader import catalog, load_lab
from kafkalab.labs.model import Lab

FIX_LABS = [lab for lab in (load_lab(p) for p in catalog()) if lab.fix is not None]
# the course labs whose [fix] was proven both ways on a real cluster (benchmarks/bench_fix.py): each keeps one
COURSE_FIX_LABS = {"acks-0", "rf2-acks-0"}


def fix_of(lab: Lab) -> FixExercise:
    assert lab.fix is not None
    return lab.fix


def test_the_course_labs_have_fix_exercises() -> None:
    assert {lab.id for lab in FIX_LABS} >= COURSE_FIX_LABS


@pytest.mark.parametrize("lab", FIX_LABS, ids=lambda lab: lab.id)
def test_solution_and_wrong_fixes_are_allowed_and_make_a_valid_graded_lab(lab: Lab) -> None:
    fix = fix_of(lab)
    for changes in (fix.solution, *fix.wrong):
        fix.check(changes)  # raises for a change the exercise does not allow
        attempt = FixAttempt(lab, changes, "test")  # and for a graded lab that does not validate
        assert attempt.lab.expectations == fix.expectations
        assert len(attempt.lab.faults) == len(lab.faults) - len(fix.drop_faults)
        assert len(attempt.seeds) == fix.runs >= 2  # a fix that holds once by luck is not a fix


@pytest.mark.parametrize("lab", FIX_LABS, ids=lambda lab: lab.id)
def test_every_change_as_shown_can_be_typed_back_at_the_prompt(lab: Lab) -> None:
    """The console shows a change (the solution once given up, the changes kept, the grade card's) as its text:
    typed at the `e` prompt, that text is the same change."""
    fix = fix_of(lab)
    for change in (*fix.solution, *(c for wrong in fix.wrong for c in wrong)):
        assert change_from_text(lab.cluster.brokers, change.text) == [change], change.text


@pytest.mark.parametrize("lab", FIX_LABS, ids=lambda lab: lab.id)
def test_the_solution_typed_at_the_prompt_is_kept(lab: Lab, tmp_path: Path) -> None:
    """Settings valid only together (idempotence needs acks=all) go in on one line; the console keeps them."""
    exercise = Exercise(lab, tmp_path / "progress.json")
    for line in prompt_lines(fix_of(lab).solution):
        exercise.add(exercise.parse(line))
    assert exercise.changes == list(fix_of(lab).solution)


def test_a_setting_that_needs_another_is_refused_saying_both_go_on_one_line(tmp_path: Path) -> None:
    lab = next(lab for lab in FIX_LABS if lab.id == "idempotence-off")
    exercise = Exercise(lab, tmp_path / "progress.json")
    with pytest.raises(KafkalabError, match=r"needs producer\.acks=all .* settings that only work together go on "
                                            r"one line") as err:
        exercise.add(exercise.parse("producer.idempotent=true"))
    assert "\n" not in str(err.value) and exercise.changes == []


@pytest.mark.parametrize("lab", FIX_LABS, ids=lambda lab: lab.id)
def test_hints_are_offered_in_order_and_cost_less_than_solving_is_worth(lab: Lab) -> None:
    fix = fix_of(lab)
    assert 2 <= len(fix.hints) <= 3
    assert sum(h.cost for h in fix.hints) < fix.max_score
    assert [h.after_s for h in fix.hints] == sorted(h.after_s for h in fix.hints)


@pytest.mark.parametrize("lab", FIX_LABS, ids=lambda lab: lab.id)
def test_every_wrong_fix_is_explained_and_the_solution_is_named(lab: Lab) -> None:
    fix = fix_of(lab)
    assert fix.wrong, f"{lab.id}: give at least one plausible [[fix.wrong]]"
    for wrong in fix.wrong:
        assert fix.rules_for(wrong, passed=False), f"{lab.id}: no rule says why {[c.text for c in wrong]} fails"
    assert fix.rules_for(fix.solution, passed=True), f"{lab.id}: no rule names what the solution changed"


@pytest.mark.parametrize("lab", FIX_LABS, ids=lambda lab: lab.id)
def test_the_task_names_symptoms_not_the_solution(lab: Lab) -> None:
    fix = fix_of(lab)
    for change in fix.solution:
        if change.kind == ChangeKind.SETTING:
            assert f"{change.name}={change.value}" not in fix.task, f"{lab.id}: the task gives the answer away"


ACTION_LABS = [lab for lab in FIX_LABS if any(c.kind == ChangeKind.ACTION for c in fix_of(lab).solution)]


@pytest.mark.parametrize("lab", ACTION_LABS, ids=lambda lab: lab.id)
def test_an_action_solution_fires_beside_the_timeline(lab: Lab) -> None:
    attempt = FixAttempt(lab, fix_of(lab).solution, "test")
    wanted = [c.fault.action for c in fix_of(lab).solution if c.kind == ChangeKind.ACTION and c.fault is not None]
    assert [a.action for a in attempt.lab.actions] == wanted
