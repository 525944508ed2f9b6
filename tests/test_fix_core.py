"""Fix exercises and incidents, the core: parsing a lab's [fix] and [incident], changes and their refusals,
the graded lab, the grade of a set of runs, progress. No cluster needed."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from kafkalab.analysis.verdict import verdict
from kafkalab.errors import KafkalabError
from kafkalab.labs import load_lab
from kafkalab.labs import progress as progress_store
from kafkalab.labs.fix import ChangeKind, action_change, change_from_text, parse_changes, topic_changes
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import ACTIONS_ROW, FAULTS_ROW, AttemptHistory, GradeOutcome, read_grade
from kafkalab.labs.graded import apply_changes, graded_lab
from kafkalab.labs.results import ExpectationResult, FaultState, FaultStatus, Outcome, RunResult
from tests.test_labs_unit import MINIMAL

FIX = MINIMAL + """
[[fault]]
at = "after 3s"
do = "start"
on = "same"

[fix]
task = "Nothing acknowledged may go missing."
allow = ["producer.acks", "topic.test-topic.*", "broker.min.insync.replicas", "action.replicate"]
runs = 3
seed = 40
drop_faults = [2]

[fix.expect]
lost = 0
"producer.acked" = "> 0"

[[fix.rule]]
when = ["producer.acks=all"]
says = "acks=all mattered"
outcome = "passed"

[[fix.rule]]
when = ["topic.test-topic.replication_factor", "!producer.acks"]
says = "replicas alone did not matter"

[[fix.hint]]
after = 30
cost = 10
text = "look at the producer"

[[fix.hint]]
after = 90
cost = 25
text = "acks"

[fix.solution]
settings = ["producer.acks=all"]
topics = ["test-topic min.isr=2"]

[[fix.wrong]]
topics = ["test-topic rf=3"]
"""


def lab_file(tmp_path: Path, text: str = FIX) -> Path:
    path = tmp_path / "demo.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_fix_table_parses(tmp_path: Path) -> None:
    lab = load_lab(lab_file(tmp_path))
    assert lab.fix is not None
    assert lab.fix.runs == 3 and lab.fix.seed == 40 and lab.fix.drop_faults == (2,)
    assert [e.text for e in lab.fix.expectations] == ["lost == 0", "producer.acked > 0"]
    assert [c.text for c in lab.fix.solution] == ["producer.acks=all", "topic test-topic min.insync.replicas=2"]
    assert [h.cost for h in lab.fix.hints] == [10, 25]


@pytest.mark.parametrize(("old", "new", "words"), [
    ('"topic.test-topic.*", ', "", "not yours to change"),  # the solution's topic change is then refused
    ("runs = 3", "runs = 11", "1..10"),
    ("drop_faults = [2]", "drop_faults = [3]", "within 1..2"),
    ("cost = 25", "cost = 95", "100 points"),
])
def test_fix_table_refusals_name_the_field(tmp_path: Path, old: str, new: str, words: str) -> None:
    text = FIX.replace(old, new, 1)
    with pytest.raises(KafkalabError, match=re.escape(words)) as err:
        load_lab(lab_file(tmp_path, text))
    assert "demo.toml:" in str(err.value) and "\n" not in str(err.value)


def test_changes_parse_and_refuse_in_one_line() -> None:
    assert [c.name for c in topic_changes("test-topic rf=3 min.isr=2")] == [
        "topic.test-topic.replication_factor", "topic.test-topic.min.insync.replicas"]
    action = action_change("brokers >= 3 -> replicate topic test-topic rf=3", brokers=3)
    assert action.kind == ChangeKind.ACTION and action.fault is not None
    assert action.fault.replication_factor == 3 and action.fault.action == "replicate"
    assert change_from_text(3, "broker unclean.leader.election.enable=true")[0].name == \
        "broker.unclean.leader.election.enable"
    together = change_from_text(3, "producer.acks=all  producer.idempotent=true")  # only valid together
    assert [c.text for c in together] == ["producer.acks=all", "producer.idempotent=true"]
    for bad in (lambda: parse_changes(3, ["ack=all"]), lambda: topic_changes("test-topic rf=three"),
                lambda: action_change("soon -> replicate topic t rf=3", 3),
                lambda: action_change("brokers >= 3 -> kill topic t", 3)):
        with pytest.raises(KafkalabError) as err:
            bad()
        assert "\n" not in str(err.value)


def test_graded_lab_applies_changes_drops_the_cure_and_grades_the_fix(tmp_path: Path) -> None:
    lab = load_lab(lab_file(tmp_path))
    changes = parse_changes(3, ["producer.acks=all"], ["test-topic rf=3 min.isr=2"], ["min.insync.replicas=2"],
                            ["brokers >= 3 -> replicate topic test-topic rf=3"])
    graded = graded_lab(lab, changes)
    assert graded.producer.config.acks == "all"
    assert graded.topics[0].replication_factor == 3 and graded.topics[0].configs["min.insync.replicas"] == "2"
    assert graded.cluster.overrides["min.insync.replicas"] == "2"
    assert len(graded.faults) == 1 and len(graded.actions) == 1
    assert graded.expectations == lab.fix.expectations  # never the demonstration's `lost > 0`
    with pytest.raises(KafkalabError, match="frozen"):
        graded_lab(lab, parse_changes(3, ["producer.num-records-per-roll=10"]))
    with pytest.raises(KafkalabError, match=r"you may change producer\.acks"):
        graded_lab(lab, parse_changes(3, ["producer.retries=5"]))
    with pytest.raises(KafkalabError, match="no such topic"):
        apply_changes(lab, topic_changes("other rf=2"))


def result(run_dir: Path, lost: float, seed: int, action_missed: bool = False) -> RunResult:
    r = RunResult("demo", run_dir, Outcome.PASSED, seed=seed, duration_s=30.0)
    r.expectations = [ExpectationResult("lost == 0", lost == 0, lost, 0.0),
                      ExpectationResult("producer.acked > 0", True, 900.0, 0.0)]
    r.faults = [FaultStatus(0, "kill", FaultState.FIRED),
                FaultStatus(0, "replicate", FaultState.MISSED if action_missed else FaultState.FIRED, attendee=True)]
    return r


def test_grade_passes_only_when_every_run_held(tmp_path: Path) -> None:
    lab = load_lab(lab_file(tmp_path))
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann", history=AttemptHistory(hints_taken=1))
    assert attempt.seeds == [40, 41, 42]
    dirs = [tmp_path / f"run{i}" for i in range(3)]
    for d in dirs:
        d.mkdir()
    good = attempt.grade([result(d, 0, 40 + i) for i, d in enumerate(dirs)], time_on_task_s=200)
    assert good.passed and good.score == 90 and good.rules == ["acks=all mattered"]
    assert [r.text for r in good.rows] == ["lost == 0", "producer.acked > 0", FAULTS_ROW, ACTIONS_ROW]
    assert read_grade(dirs[-1] / "grade.json").as_dict() == good.as_dict()
    once = attempt.grade([result(dirs[0], 0, 40), result(dirs[1], 17, 41), result(dirs[2], 0, 42)])
    lost = once.rows[0]
    assert not once.passed and once.score == 0 and (lost.seen, lost.runs_held, lost.runs) == (17, 2, 3)
    assert "NOT FIXED YET" in once.verdict and "acks=all mattered" not in once.rules
    missed = attempt.grade([result(d, 0, 40, action_missed=True) for d in dirs])
    assert not missed.passed and not next(r for r in missed.rows if r.text == ACTIONS_ROW).passed


def test_a_run_that_ended_early_leaves_the_fix_not_graded_and_says_why(tmp_path: Path) -> None:
    """A run the cluster or the machine ended is no verdict on the fix: the grade says so, and why."""
    lab = load_lab(lab_file(tmp_path))
    attempt = FixAttempt(lab, parse_changes(3, ["producer.acks=all"]), "ann")
    broken = RunResult("demo", tmp_path, Outcome.ERROR, seed=41, error="broker 2 did not start")
    grade = attempt.grade([result(tmp_path, 0, 40), broken, result(tmp_path, 0, 42)])
    assert not grade.passed and grade.score is None and grade.outcome == GradeOutcome.NOT_GRADED
    assert grade.verdict == "NOT GRADED: graded run 2 ended early: broker 2 did not start. Nothing was judged."
    assert grade.rows == [] and grade.rules == []  # runs 1 and 3 held, yet nothing is judged: no row passes
    assert read_grade(tmp_path / "grade.json").ended_early == grade.ended_early  # kept in grade.json


def test_wrong_fix_gets_the_rule_that_says_why(tmp_path: Path) -> None:
    lab = load_lab(lab_file(tmp_path))
    assert lab.fix is not None
    wrong = lab.fix.wrong[0]
    assert lab.fix.rules_for(wrong, passed=False) == ["replicas alone did not matter"]


INCIDENT = MINIMAL + """
[incident]
ticket = "Orders stopped arriving."
choices = ["the network", "acks=0", "the disk"]
answer = 2
explanation = "acks=0 never waits"
"""


def test_incident_parses_and_progress_persists(tmp_path: Path) -> None:
    lab = load_lab(lab_file(tmp_path, INCIDENT))
    assert lab.incident is not None and lab.incident.is_right(1) and not lab.incident.is_right(0)
    assert lab.incident.question == "What is the root cause?"
    with pytest.raises(KafkalabError, match=r"1\.\.3"):
        load_lab(lab_file(tmp_path, INCIDENT.replace("answer = 2", "answer = 4")))
    store = tmp_path / "progress.json"
    p = progress_store.load("demo", store)
    assert not p.revealed
    p.wrong_answers, p.diagnosed = 1, True
    progress_store.save("demo", p, store)
    again = progress_store.load("demo", store)
    assert again.revealed and again.wrong_answers == 1
    store.write_text("{not json")
    assert not progress_store.load("demo", store).revealed  # unreadable: no progress, no crash


def test_an_incident_verdict_says_what_was_seen_not_why() -> None:
    classes = {"lost_by_brokers": 15113, "missed_by_consumers": 0, "duplicated": 3}
    full = verdict(classes, acknowledged=90000)
    assert "acks=1" in full and full.startswith("15,113 acknowledged records never reached the log")
    symptom = verdict(classes, acknowledged=90000, causes=False)
    assert symptom == "15,113 acknowledged records never reached the log; also 3 duplicated"
    assert "acks" not in verdict({"duplicated": 446}, causes=False) and "idempotence" not in verdict(
        {"duplicated": 446}, causes=False)


def test_nothing_processed_is_not_named_a_commit_too_early() -> None:
    said = verdict({"missed_by_consumers": 2000, "lost": 2000, "lost_by_brokers": 0}, acknowledged=2000, consumed=0)
    assert said.startswith("no consumer processed a single record: 2,000 acknowledged records were never read")
    assert "committed" not in said
    assert "committed before" in verdict({"missed_by_consumers": 341, "lost_by_brokers": 0}, acknowledged=2000,
                                         consumed=1659)


def test_a_broker_line_takes_one_setting_and_says_so() -> None:
    """`broker X=1 -consumer.y` once read `1 -consumer.y` as X's value, and Kafka refused a number that was none."""
    with pytest.raises(KafkalabError, match="one broker setting a line") as err:
        change_from_text(3, "broker offsets.topic.replication.factor=1 -consumer.auto-offset-reset")
    assert "'-consumer.auto-offset-reset' on a line of its own" in str(err.value)


@pytest.mark.parametrize("line, says", [
    ("ebroker offsets.topic.replication.factor=1", "'ebroker' is not name=value: write e.g. producer.acks=all"),
    ("broker offsets.topic.replication.factor", "broker 'offsets.topic.replication.factor' is not name=value"),
    ("topic test-topic rf=x", "topic 'test-topic rf=x': replication_factor must be a whole number"),
    ("action soon replicate", "e.g. action brokers >= 3 -> replicate topic test-topic rf=3"),
    ("lingering=5", "lingering is not a producer.* or consumer.* setting"),
])
def test_the_prompts_errors_quote_what_was_typed_there_never_a_flag(line: str, says: str) -> None:
    """The console's change prompt answered a line it could not read with the command line's words ("-D 'ebroker'
    is not name=value: write e.g. -D producer.acks=all"), which the attendee never typed."""
    with pytest.raises(KafkalabError) as refused:
        change_from_text(3, line)
    assert says in str(refused.value)
    assert not re.search(r"(^|\s)(-D|--topic|--broker-config|--action)\b", str(refused.value))
