"""The incident labs (21..24): a ticket named by its symptom, the cause among plausible choices, a fix.

Unit tests, no cluster: each incident loads, neither its id, its title nor its ticket gives the cause away,
its answer names a real choice, its reference solution and wrong fixes are changes the exercise allows.
One test, marked ``cluster``, grades the shortest incident on a real cluster: as shipped it is not fixed,
its reference solution fixes it.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest
from rich.console import Console

from kafkalab.labs import load_lab
from kafkalab.labs.fix import Change, ChangeKind
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade_consistency import contradictions
from kafkalab.labs.graded import graded_lab
from kafkalab.labs.loader import find_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.run import PortChoice
from kafkalab.labs.runner import HeadlessRun
from tests.test_labs_cluster import leftovers

# each incident, with the words of its cause: none may show in its id, title or ticket
CAUSE_WORDS: dict[str, tuple[str, ...]] = {
    "orders-stall-during-maintenance": ("rf1", "rf", "replica", "replication", "reassign", "factor", "isr"),
    "consumer-receives-nothing": ("offsets", "__consumer_offsets", "replication", "replica", "factor", "coordinator",
                                  "rf"),
    "orders-arrive-twice": ("idempoten", "retries", "retry", "retried", "sequence"),
    "confirmed-orders-vanish": ("acks", "min.insync", "insync", "in-sync", "isr", "acks=1"),
}


def incident(lab_id: str) -> Lab:
    return load_lab(find_lab(lab_id))


def words(text: str) -> set[str]:
    """The text's words, lower-case, split on anything that is not a letter, digit, dot, dash, = or _."""
    return set(re.findall(r"[a-z0-9_.=-]+", text.lower()))


def mentions(text: str, cause_word: str) -> bool:
    """True when ``cause_word`` starts one of the text's words (``idempoten`` matches ``idempotence``)."""
    return any(w.strip(".-").startswith(cause_word) for w in words(text))


def test_the_catalog_holds_every_incident_after_the_course_labs() -> None:
    for lab_id in CAUSE_WORDS:
        path = find_lab(lab_id)
        number = int(path.stem.split("-", 1)[0])
        assert 21 <= number <= 29, path


@pytest.mark.parametrize("lab_id", sorted(CAUSE_WORDS))
def test_incident_loads_with_a_ticket_choices_and_a_fix(lab_id: str) -> None:
    lab = incident(lab_id)
    assert lab.id == lab_id
    assert lab.incident is not None and lab.fix is not None
    assert lab.incident.question == "What is the root cause?"
    assert 4 <= len(lab.incident.choices) <= 5
    assert 0 <= lab.incident.answer < len(lab.incident.choices)
    assert len(set(lab.incident.choices)) == len(lab.incident.choices)
    assert lab.incident.explanation.strip() and lab.incident.ticket.strip()
    assert lab.fix.wrong, "an incident's fix needs at least one wrong fix that must fail"
    assert lab.fix.hints and sum(h.cost for h in lab.fix.hints) < 100


@pytest.mark.parametrize("lab_id", sorted(CAUSE_WORDS))
def test_the_symptom_names_the_incident_not_the_cause(lab_id: str) -> None:
    lab = incident(lab_id)
    assert lab.incident is not None
    right = lab.incident.choices[lab.incident.answer]
    for cause in CAUSE_WORDS[lab_id]:
        # the list is the cause's vocabulary: the right answer must use some of it, or the list is stale
        for name, text in (("id", lab.id.replace("-", " ")), ("title", lab.title), ("ticket", lab.incident.ticket)):
            assert not mentions(text, cause), f"{lab_id}: its {name} says {cause!r}, which gives the cause away"
    assert any(mentions(right, cause) for cause in CAUSE_WORDS[lab_id]), \
        f"{lab_id}: the right answer uses none of {CAUSE_WORDS[lab_id]}: the words checked are stale"


@pytest.mark.parametrize("lab_id", sorted(CAUSE_WORDS))
def test_solution_and_wrong_fixes_are_allowed_changes(lab_id: str) -> None:
    lab = incident(lab_id)
    assert lab.fix is not None
    for changes in (lab.fix.solution, *lab.fix.wrong):
        lab.fix.check(changes)  # KafkalabError if the exercise does not allow one of them
        graded = graded_lab(lab, changes)  # and the changed lab is valid
        assert graded.expectations == lab.fix.expectations
    assert all(tuple(w) != tuple(lab.fix.solution) for w in lab.fix.wrong)


def test_the_solution_of_the_unreplicated_topic_is_a_live_reassignment_fired_once_three_brokers_run() -> None:
    lab = incident("orders-stall-during-maintenance")
    assert lab.fix is not None
    (change,) = lab.fix.solution
    assert change.kind == ChangeKind.ACTION and change.fault is not None
    assert change.fault.action == "replicate" and change.fault.replication_factor == 3
    graded = graded_lab(lab, lab.fix.solution)
    assert [f.action for f in graded.actions] == ["replicate"]
    # the lab's stop waits for every replica in sync: what makes the reassignment complete before it
    stop = next(f for f in lab.faults if f.action == "stop")
    assert stop.at.text == "preferred test-topic"


# the metric that shows each incident's symptom: [expect] (the break) and [fix.expect] both name it, differently
SYMPTOM = {"orders-stall-during-maintenance": "timeline.offline", "consumer-receives-nothing": "missed_by_consumers",
           "orders-arrive-twice": "duplicated", "confirmed-orders-vanish": "lost"}


@pytest.mark.parametrize("lab_id", sorted(CAUSE_WORDS))
def test_the_break_shows_the_symptom_the_fix_must_remove(lab_id: str) -> None:
    lab = incident(lab_id)
    assert lab.fix is not None
    broken = {e.text for e in lab.expectations if e.metric == SYMPTOM[lab_id]}
    fixed = {e.text for e in lab.fix.expectations if e.metric == SYMPTOM[lab_id]}
    assert broken and fixed and not broken & fixed, (broken, fixed)


@pytest.mark.cluster
def test_shortest_incident_shipped_fails_and_its_solution_passes(tmp_path: Path) -> None:
    """consumer-receives-nothing on a real cluster, one seeded run each: as shipped the consumer gets nothing
    (NOT FIXED, on the symptom's row), with the reference solution it joins and gets every record (FIXED)."""
    lab = incident("consumer-receives-nothing")
    assert lab.fix is not None
    grades = {}
    for name, changes in (("shipped", ()), ("solution", lab.fix.solution)):
        attempt = FixAttempt(lab, changes, "test", runs=1)
        runs = tmp_path / name
        result = HeadlessRun(attempt.lab, runs, Console(quiet=True), seed=attempt.seeds[0],
                             ports=PortChoice.picked(attempt.lab)).run()
        grades[name] = attempt.grade([result])
        assert (result.run_dir / "grade.json").is_file()
        assert contradictions(grades[name]) == []
        assert leftovers(runs) == []
    assert not grades["shipped"].passed
    assert "missed_by_consumers == 0" in [r.text for r in grades["shipped"].rows if not r.passed]
    waited = next(r for r in grades["shipped"].rows if r.text == "consumer.1.assign_wait_s < 10")
    assert not waited.passed and waited.seen_text == "never"  # never assigned: once PASS -1
    assert grades["solution"].passed, [r for r in grades["solution"].rows if not r.passed]
    assert grades["solution"].rules  # the rule naming offsets.topic.replication.factor=1


@pytest.mark.parametrize("lab_id", sorted(CAUSE_WORDS))
def test_the_right_choice_is_not_given_away_by_its_length(lab_id: str) -> None:
    """The right root cause was the longest and most detailed of five: the choices read alike, whichever is
    right."""
    lab = incident(lab_id)
    assert lab.incident is not None
    others = [len(c) for c in lab.incident.choices]
    right = others.pop(lab.incident.answer)
    assert right <= max(others), f"{lab_id}: the right choice is the longest ({right} characters; others {others})"
    assert right <= 1.3 * statistics.median(others), f"{lab_id}: the right choice is much longer ({right}; {others})"


def solution_words(change: Change) -> tuple[str, ...]:
    """How a change of the reference solution would read in a text that gives it away."""
    if change.kind == ChangeKind.ACTION:
        return ("reassign", "replicate")
    name = change.topic_key if change.kind == ChangeKind.TOPIC else change.name.split(".", 1)[1]
    return (f"{name}={change.value}",)


@pytest.mark.parametrize("lab_id", sorted(CAUSE_WORDS))
def test_the_explanation_names_the_cause_and_the_cure_is_apart(lab_id: str) -> None:
    """A right answer shows the explanation: it must explain the cause, never hand over the fix, which is shown
    (the cure) only once the lab is fixed or given up."""
    lab = incident(lab_id)
    assert lab.incident is not None and lab.fix is not None
    assert lab.incident.cure.strip(), f"{lab_id}: no cure to show once it is fixed or given up"
    said = lab.incident.explanation.lower()
    for word in ("cure", "the fix", "set `", *(w for c in lab.fix.solution for w in solution_words(c))):
        assert word not in said, f"{lab_id}: its explanation says {word!r}, which gives the fix away"
