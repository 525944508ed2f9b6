"""What an attendee reads of a run that did not go as the lab expects: sentences, never the check syntax of
the lab file (``faults.missed == 0 (was 2)``, ``'isr test-topic == 3' did not happen within 90s``). The tables
that list the checks themselves (the headless run's, the grade card's check column) keep the expressions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkalab.labs.grade import Grade, GradeOutcome, GradeRow
from kafkalab.labs.measured import Unmeasured
from kafkalab.labs.results import ExpectationResult, FaultState, FaultStatus, Outcome, RunResult
from kafkalab.labs.wording import unmet
from tests.lab_fakes import World
from tests.test_labs_run import execute, lab_of

# what check syntax looks like: an operator between words, a metric's dotted name, a quoted trigger
SYNTAX = re.compile(r"[<>!=]=|\s[<>]\s|\b[a-z_]+\.[a-z_]+\b|'\w[^']* [^']*'")


def test_an_unmet_expectation_reads_as_a_sentence() -> None:
    assert unmet("faults.missed == 0", 2.0, 0.0) == "2 of the lab's faults did not fire (expected none)"
    assert unmet("lost == 0", 312.0, 0.0) == "312 acknowledged records were never processed (expected none)"
    assert unmet("consumer.1.assign_wait_s < 10", 12.5, 10.0) == \
        "consumer 1 waited 12.5 s for its first partitions (expected less than 10 s)"
    assert unmet("consumer.1.assign_wait_s < 10", Unmeasured.NEVER, 10.0) == \
        "consumer 1 never got a partition (expected less than 10 s)"
    assert unmet("distinct_consumed == acknowledged", 1990.0, 2000.0) == \
        "1,990 distinct records were processed (expected as many as records were acknowledged: 2,000)"
    assert unmet("missed_by_consumers > 0", 0.0, 0.0) == \
        "0 records in the topic were never processed (expected more than 0)"
    for text, seen, wanted in (("producer.failed.NOT_ENOUGH_REPLICAS >= 1", 0.0, 1.0),
                               ("group.static.stopped_s > 5", 1.0, 5.0), ("timeline.leader_changes == 0", 3.0, 0.0),
                               ("truncated == 0", 10.0, 0.0), ("consumers.processed == 0", 5.0, 0.0)):
        said = unmet(text, seen, wanted)
        assert not SYNTAX.search(said), said


def test_a_runs_failures_are_sentences(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [[fault]]
        at = "isr test-topic > 3"
        do = "note"
        note = "every replica in sync"
        timeout = 0.2

        [[fault]]
        at = "start"
        do = "kill"
        on = "broker 2"

        [expect]
        "faults.missed" = 0
    """)
    _run, result = execute(tmp_path, lab, World())
    assert result.failures == [
        "2 of the lab's faults did not fire (expected none)",
        "fault 1 (a note) did not fire: it waited 0.2 s for the ISR of test-topic to be above 3",
        "fault 2 (kill broker 2) did not fire: an earlier fault never fired",
    ]
    # the Lab tab's timeline says the same
    assert result.faults[0].detail == "it waited 0.2 s for the ISR of test-topic to be above 3"


def test_a_failed_check_and_a_failed_fault_are_sentences() -> None:
    result = RunResult("lab", Path("/r"), Outcome.FAILED,
                       checks=[ExpectationResult("consumers.processed == 0", False, 5.0, 0.0, at=12.0)],
                       faults=[FaultStatus(0, "create topic t at start", FaultState.FAILED, detail="timed out",
                                           what="create topic t")])
    assert result.failures == ["at 12 s, 5 records were processed by the consumers (expected none)",
                               "fault 1 (create topic t) failed: timed out"]


@pytest.mark.parametrize(("rows", "said"), [
    ([GradeRow("lost == 0", False, 312.0, 0.0, 0, 2)],
     "NOT FIXED YET: 312 acknowledged records were never processed (expected none)"),
    ([GradeRow("the lab's faults all fired", False, 3.0, 5.0, 1, 2)],
     "NOT FIXED YET: only 3 of the lab's 5 faults fired"),
])
def test_a_grades_verdict_is_a_sentence(rows: list[GradeRow], said: str) -> None:
    g = Grade("lab", "ada", [], rows, [], 0, 0, 0, GradeOutcome.NOT_FIXED, runs=["/r/1", "/r/2"])
    assert g.verdict == said
