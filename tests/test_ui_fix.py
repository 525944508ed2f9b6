"""The console's break-fix mode, driven with Pilot on the fake world (tests/lab_fakes.py): a lab's task shown
before its first run, hints (their cost first), changes kept or refused, an incident's question, the graded
check's card in Results, giving up."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Markdown, Static, TabbedContent

from kafkalab.admin import ClusterSnapshot
from kafkalab.feeds.exercise import Exercise
from kafkalab.feeds.frames import NO_CLUSTER_YET, ExerciseView, NodesFrame, RunFrame
from kafkalab.feeds.lab_source import LabSource
from kafkalab.labs import LabSession, progress
from kafkalab.labs.grade import Grade, GradeOutcome, GradeRow
from kafkalab.labs.grade_consistency import contradictions
from kafkalab.labs.graded_check import CheckStatus
from kafkalab.labs.loader import load_lab
from kafkalab.labs.model import Lab
from kafkalab.ui.app import LabConsole
from kafkalab.ui.modals import ChoiceScreen, ConfirmScreen, ErrorScreen, InputScreen, TextScreen
from tests.lab_fakes import World
from tests.screen_text import svg_rows
from tests.test_ui_app import settle, sync, type_line
from tests.test_ui_feed import FakeSource, sample_run

LAB = """\
[lab]
id = "fake-fix"
title = "Records go missing"
teaches = "acks"
why = "fakes"
instructions = "WALKTHROUGH: the cause is acks=0"

[[topic]]
name = "test-topic"
partitions = 3

[producer]
"producer.acks" = "0"
"producer.num-records-per-roll" = 1000

[[consumer]]
local_id = 1

[expect]
"producer.acked" = "< 10"

[fix]
task = "TASK: make every record the producer counts as sent reach the consumer"
allow = ["producer.*", "topic.test-topic.*"]
runs = 2

[fix.expect]
"producer.acked" = "== 1000"

[[fix.rule]]
when = ["producer.acks=all"]
says = "RULE: acks=all waits for the leader"
outcome = "passed"

[[fix.hint]]
after = {after}
cost = 10
text = "HINT ONE: compare what was sent with what arrived"

[[fix.hint]]
after = 600
cost = 20
text = "HINT TWO: which setting says how many acknowledgements?"

[fix.solution]
settings = ["producer.acks=all"]
"""

INCIDENT = """
[incident]
ticket = "TICKET: the nightly job reports missing orders"
question = "What is the root cause?"
choices = ["the consumer commits too early", "the producer does not wait for acknowledgements", "disk full"]
answer = 2
explanation = "EXPLANATION: acks=0 never waits for a broker"
"""
SIZE = (120, 36)


def in_tmp(scenario: Callable[[Path], Coroutine[Any, Any, None]]) -> Callable[[Path], None]:
    """An async Pilot scenario given pytest's tmp_path, as a plain test."""

    @functools.wraps(scenario)
    def test(tmp_path: Path) -> None:
        asyncio.run(scenario(tmp_path))

    return test


def lab_file(tmp_path: Path, after: int = 0, incident: bool = False) -> Lab:
    path = tmp_path / "fake-fix.toml"
    path.write_text(LAB.format(after=after) + (INCIDENT if incident else ""))
    return load_lab(path)


class FakeWorldSource(LabSource):
    """The lab source on the fake world: its runs are real LabSession runs; the fake cluster has no nodes to show
    or table to ask (those are the lab source's own tests' business)."""

    def nodes(self) -> NodesFrame:
        return NodesFrame(())

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(0.0, False, error=NO_CLUSTER_YET)


@contextlib.asynccontextmanager
async def console(tmp_path: Path, lab: Lab, size: tuple[int, int] = SIZE,
                  clock: float = 1e9) -> AsyncIterator[tuple[LabConsole, Pilot[None], FakeWorldSource]]:
    """The console on ``lab`` run on the fake world; progress kept in tmp_path; the task first shown at 0."""
    path = tmp_path / "progress.json"
    progress.save(lab.id, progress.LabProgress(first_seen=clock - 30), path)  # shown 30 s ago
    exercise = Exercise(lab, path, clock=lambda: clock)
    session = LabSession(lab, tmp_path / "runs", deps=World().deps(), keep_cluster=True)
    source = FakeWorldSource(session, exercise=exercise, who="tester")
    app = LabConsole(source, [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0)
    try:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            yield app, pilot, source
    finally:
        source.close()


def screen(app: LabConsole) -> str:
    return "\n".join(svg_rows(app.export_screenshot(), app.size.height, app.size.width))


def lab_facts(app: LabConsole) -> str:
    return str(app.query_one("#lab-exercise", Static).render())


async def until(pilot: Pilot[None], done: Callable[[], bool], timeout_s: float = 600) -> None:
    """Frame by frame until ``done``: bounded by the clock, not by a count of frames (a graded check's runs and
    their analysis took longer than 200 frames on a busy machine)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"the console never got there in {timeout_s:.0f} s")
        await settle(pilot, 1)


@in_tmp
async def test_before_the_first_run_the_task_fills_the_row_and_the_walkthrough_waits(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, _pilot, _source):
        assert app.query_one("#side", TabbedContent).active == "tab-lab"
        assert not app.query_one("#partitions").display  # no empty table with NO CLUSTER YET beside the task
        text = screen(app)
        assert "TASK: make every record" in text and "YOU MAY CHANGE  producer.*, topic.test-topic.*" in text
        assert "f checks your fix: 2 graded runs" in text
        assert "WALKTHROUGH" not in text  # it names the cause
        footer = " ".join(str(k.description) for k in app.query("FooterKey"))  # type: ignore[attr-defined]
        assert "Check fix" in footer and "Hint" in footer and "Name the cause" not in footer  # no [incident]


@in_tmp
async def test_a_hint_shows_its_cost_first_then_is_shown_and_counted(tmp_path: Path) -> None:
    lab = lab_file(tmp_path)
    async with console(tmp_path, lab) as (app, pilot, source):
        assert "hint 1 of 2 is offered: h shows it (costs 10 points)" in lab_facts(app)
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "costs 10 points" in app.screen.question
        assert "HINT ONE" not in lab_facts(app)  # not before it is confirmed
        await pilot.press("y")
        await until(pilot, lambda: "HINT ONE" in lab_facts(app))
        assert progress.load(lab.id, tmp_path / "progress.json").hints_taken == 1
        assert "next hint in 9:30 (costs 20 points)" in lab_facts(app)  # 600 s after it was shown, 30 s ago
        await pilot.press("h")  # the second is not offered yet: said, nothing taken
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert source.exercise is not None and source.exercise.progress.hints_taken == 1


@in_tmp
async def test_a_change_the_lab_does_not_allow_is_refused_in_one_line(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, source):
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, InputScreen)
        await type_line(pilot, "broker unclean.leader.election.enable=true")
        refusal = app.screen.query_one("#input-said", Static)  # under the line, which stays to be corrected
        await until(pilot, lambda: refusal.display)
        assert "broker.unclean.leader.election.enable is not yours to change" in str(refusal.render())
        assert "\n" not in str(refusal.render())
        await pilot.press("escape")
        assert source.exercise is not None and source.exercise.changes == []
        assert "none yet" in lab_facts(app)


@in_tmp
async def test_an_allowed_change_is_listed_and_runs_with_the_demonstration(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, source):
        await pilot.press("e")
        await type_line(pilot, "producer.acks=all")
        await until(pilot, lambda: "YOUR CHANGES  producer.acks=all" in lab_facts(app))
        await pilot.press("t")
        await type_line(pilot, "test-topic rf=3")
        await until(pilot, lambda: "topic test-topic replication_factor=3" in lab_facts(app))
        assert "YOUR CHANGES  producer.acks=all, topic test-topic replication_factor=3" in lab_facts(app)
        lab = source.session.lab  # what g runs: the demonstration with the changes
        assert lab.producer.settings["producer.acks"] == "all" and lab.topics[0].replication_factor == 3
        assert [e.text for e in lab.expectations] == ["producer.acked < 10"]


@in_tmp
async def test_an_incident_wrong_answer_is_counted_then_the_right_one_reveals_the_cause(tmp_path: Path) -> None:
    lab = lab_file(tmp_path, incident=True)
    async with console(tmp_path, lab) as (app, pilot, _source):
        text = screen(app)
        assert "TICKET: the nightly job" in text and "Records go missing" not in text  # the title names the cause
        assert "EXPLANATION" not in text and "WALKTHROUGH" not in text
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen) and "2. the producer does not wait" in app.screen.detail
        await pilot.press("1")  # wrong
        await until(pilot, lambda: "1 wrong so far" in lab_facts(app))
        assert progress.load(lab.id, tmp_path / "progress.json").wrong_answers == 1
        assert "EXPLANATION" not in screen(app)
        await pilot.press("d", "2")  # right
        await until(pilot, lambda: "diagnosed" in lab_facts(app))
        assert progress.load(lab.id, tmp_path / "progress.json").diagnosed
        instructions = app.query_one("#lab-instructions", Markdown)
        assert instructions.display and "EXPLANATION" in instructions.source
        assert "WALKTHROUGH" not in instructions.source  # it names the fix too: it waits for the fix or a give-up
        footer = " ".join(str(k.description) for k in app.query("FooterKey"))  # type: ignore[attr-defined]
        assert "Name the cause" not in footer  # answered


GRADE = Grade(
    lab_id="fake-fix", who="tester", changes=["producer.retries=5"],
    rows=[GradeRow("lost == 0", False, 312.0, 0.0, 0, 2), GradeRow("producer.acked > 0", True, 200000.0, 0.0, 2, 2),
          GradeRow("the lab's faults all fired", True, 3.0, 3.0, 2, 2)],
    rules=["retries did not matter: with acks=0 nothing comes back to retry on"], hints_taken=1, hint_cost=10,
    score=0, outcome=GradeOutcome.NOT_FIXED, runs=["/r/1", "/r/2"], seeds=[1, 2])


def checked(status: CheckStatus) -> RunFrame:
    """The sample run's frame with a graded check's status on its exercise (where the console reads it)."""
    frame = sample_run()
    assert frame.lab is not None
    return replace(frame, lab=replace(frame.lab, exercise=ExerciseView(True, check=status)))


@sync
async def test_the_grade_card_has_a_row_per_check_the_rules_and_the_score() -> None:
    feed = FakeSource()
    feed.run_frame = checked(CheckStatus.of_grade(GRADE))
    app = LabConsole(feed, [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0)  # type: ignore[arg-type]
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.action_show_tab("results")
        await pilot.pause()
        text = screen(app)
        col = next(line.index("NOT FIXED YET") for line in text.splitlines() if "NOT FIXED YET" in line) - 2
        card = " ".join(" ".join(line[col:] for line in text.splitlines()).split())  # the card's column, unwrapped
        assert "NOT FIXED YET: 312 acknowledged records were never processed (expected none)" in card, text
        rows = [" ".join(r.split()) for r in text.splitlines()]
        assert any("FAIL lost == 0 312 == 0 0/2" in r for r in rows), text
        assert any("PASS producer.acked > 0 200000 > 0 2/2" in r for r in rows), text
        assert "retries did not matter" in text and "score 0 / 100" in text and "-10 points" in text
        assert sample_run().report.verdict not in text  # type: ignore[union-attr]  # the card replaces it
        fixed = replace(GRADE, outcome=GradeOutcome.FIXED, score=90, rows=[
            replace(r, passed=True, seen=0.0, runs_held=2) for r in GRADE.rows])
        feed.run_frame = checked(CheckStatus.of_grade(fixed))
        await settle(pilot)
        text = screen(app)
        assert "FIXED: every check held in all 2" in text and "score 90 / 100" in text
        assert "FAIL" not in text
        early = ["graded run 2 ended early: broker 2 did not start"]  # no verdict on the fix: said, and why
        not_graded = replace(GRADE, outcome=GradeOutcome.NOT_GRADED, rows=[], rules=[], score=None, ended_early=early)
        feed.run_frame = checked(CheckStatus.of_grade(not_graded))
        await settle(pilot)
        text = screen(app)
        col = next(line.index("NOT GRADED") for line in text.splitlines() if "NOT GRADED" in line) - 2
        words = " ".join(" ".join(line[col:] for line in text.splitlines()).split())  # the card's column, unwrapped
        assert "NOT GRADED: graded run 2 ended early:" in words and "Nothing was judged" in words, text
        assert "your fix was not judged" in " ".join(text.split()) and "NOT FIXED YET" not in text
        # nothing judged: no row, no score, no rule (the console once showed FAIL rows and "graded: score 0")
        assert "FAIL" not in text and "PASS" not in text and "score" not in text and "did not matter" not in text
        toasts = " ".join(str(n.message) + n.title for n in app._notifications)
        assert "score" not in toasts and "not graded" in toasts


@in_tmp
async def test_the_graded_check_runs_each_seed_and_shows_its_grade_not_the_demos_verdict(tmp_path: Path) -> None:
    lab = lab_file(tmp_path)
    async with console(tmp_path, lab, size=(160, 48)) as (app, pilot, source):
        await pilot.press("e")
        await type_line(pilot, "producer.acks=all")
        await until(pilot, lambda: "producer.acks=all" in lab_facts(app))
        await pilot.press("f")
        await until(pilot, lambda: app.run_frame.check.grade is not None)
        assert not [s for s in app.screen_stack if isinstance(s, ErrorScreen)]
        grade = app.run_frame.check.grade
        assert grade is not None and grade.passed and grade.seeds == [1, 2] and grade.score == 100
        assert app.query_one("#side", TabbedContent).active == "tab-results"
        text = screen(app)
        assert "FIXED: every check held in all 2" in text and "RULE: acks=all waits" in text
        assert "< 10" not in text  # the demonstration's expectation is not the fix's
        saved = progress.load(lab.id, tmp_path / "progress.json")
        assert saved.fixed and saved.best_score == 100
        assert source.session.lab.expectations[0].text == "producer.acked < 10"  # g runs the demonstration again
        assert (Path(grade.runs[-1]) / "grade.json").exists()
        assert contradictions(grade) == []


@in_tmp
async def test_giving_up_asks_then_shows_the_solution_and_runs_it_graded(tmp_path: Path) -> None:
    lab = lab_file(tmp_path)
    async with console(tmp_path, lab, size=(160, 48)) as (app, pilot, _source):
        await pilot.press("G")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "Give up" in app.screen.question
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, TextScreen))
        assert isinstance(app.screen, TextScreen) and "The reference solution: producer.acks=all" in (
            app.screen.body_text)
        await pilot.press("escape")
        await until(pilot, lambda: app.run_frame.check.grade is not None)
        grade = app.run_frame.check.grade
        assert grade is not None and grade.given_up and grade.score is None and grade.outcome == GradeOutcome.SOLUTION
        assert contradictions(grade) == []
        assert grade.changes == ["producer.acks=all"] and all(r.passed for r in grade.rows)
        assert "THE REFERENCE SOLUTION: every check held" in screen(app) and "not scored" in screen(app)
        assert progress.load(lab.id, tmp_path / "progress.json").given_up
        app.action_show_tab("lab")
        await pilot.pause()
        assert "THE SOLUTION  producer.acks=all" in lab_facts(app)
        assert app.query_one("#lab-instructions", Markdown).display  # the walkthrough, now
        # the attendee then makes the fix: it passes, capped, and the card says why (once 100/100)
        await pilot.press("e")
        await type_line(pilot, "producer.acks=all")
        await until(pilot, lambda: "producer.acks=all" in lab_facts(app))
        await pilot.press("f")
        await until(pilot, lambda: (g := app.run_frame.check.grade) is not None and g.outcome == GradeOutcome.FIXED)
        fixed = app.run_frame.check.grade
        assert fixed is not None and fixed.given_up and fixed.score == 50 and contradictions(fixed) == []
        text = " ".join(screen(app).split())
        assert "FIXED (after giving up)" in text and "score 50 / 100" in text and "at most 50" in text
