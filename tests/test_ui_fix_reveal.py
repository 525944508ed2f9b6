"""What the console's Lab tab reveals of an incident with a fix, and when (Pilot on the fake world): the task
beside the ticket before and after the diagnosis; a right answer explains the cause, never the cure; a wrong
one says "not the cause" once; giving up shows the cause, the cure and the solution, and ends the hints."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Markdown

from kafkalab.labs.loader import load_lab
from kafkalab.labs.model import Lab
from kafkalab.ui.app import LabConsole
from kafkalab.ui.modals import ConfirmScreen, TextScreen
from tests.test_ui_fix import LAB, console, in_tmp, lab_facts, screen, until

INCIDENT = """
[incident]
ticket = "TICKET: the nightly job reports missing orders"
choices = ["the consumer commits too early", "the producer does not wait for acknowledgements", "disk full"]
answer = 2
explanation = "EXPLANATION: acks=0 never waits for a broker"
"""
CURE = 'cure = "CURE: set acks=all"\n'


def incident_lab(tmp_path: Path, cure: bool = False) -> Lab:
    path = tmp_path / "fake-fix.toml"
    path.write_text(LAB.format(after=0) + INCIDENT + (CURE if cure else ""))
    return load_lab(path)


def lab_tab(app: LabConsole) -> str:
    """The Lab tab's Markdown parts (task, instructions) and its facts, as their sources say."""
    parts = [m.source for m in app.query("#lab-task, #lab-instructions").results(Markdown) if m.display]
    return "\n".join([*parts, lab_facts(app)])


def toasts(app: LabConsole) -> list[tuple[str, str]]:
    return [(n.title, n.message) for n in app._notifications]


@in_tmp
async def test_the_task_shows_beside_the_ticket_before_and_after_the_diagnosis(tmp_path: Path) -> None:
    async with console(tmp_path, incident_lab(tmp_path)) as (app, pilot, _source):
        before = lab_tab(app)
        assert "TICKET: the nightly job" in before and "TASK: make every record" in before
        await pilot.press("d", "2")  # right
        await until(pilot, lambda: "diagnosed" in lab_facts(app))
        after = lab_tab(app)
        assert "TICKET: the nightly job" in after and "TASK: make every record" in after


@in_tmp
async def test_a_right_answer_explains_the_cause_never_the_cure(tmp_path: Path) -> None:
    async with console(tmp_path, incident_lab(tmp_path, cure=True)) as (app, pilot, _source):
        await pilot.press("d", "2")
        await until(pilot, lambda: "EXPLANATION" in lab_tab(app))
        shown = lab_tab(app) + screen(app)
        assert "CURE" not in shown and "WALKTHROUGH" not in shown  # the walkthrough names the fix too
        assert "THE SOLUTION" not in lab_facts(app)  # nor the reference solution
        assert ("diagnosed", "that is the cause: the Lab tab explains it") in toasts(app)


@in_tmp
async def test_a_wrong_answer_says_not_the_cause_once(tmp_path: Path) -> None:
    async with console(tmp_path, incident_lab(tmp_path)) as (app, pilot, _source):
        await pilot.press("d", "1")
        await until(pilot, lambda: "1 wrong so far" in lab_facts(app))
        (said,) = [f"{title}: {message}" for title, message in toasts(app) if "cause" in title + message]
        assert said.count("not the cause") == 1, said


@in_tmp
async def test_giving_up_shows_the_cause_the_cure_and_the_solution_under_a_true_title(tmp_path: Path) -> None:
    async with console(tmp_path, incident_lab(tmp_path, cure=True), size=(160, 48)) as (app, pilot, _source):
        await pilot.press("G", "y")
        await until(pilot, lambda: isinstance(app.screen, TextScreen))
        assert isinstance(app.screen, TextScreen)
        body = app.screen.body_text
        assert "EXPLANATION" in body and "CURE" in body and "producer.acks=all" in body
        assert "cause" in app.screen.title_text and "solution" in app.screen.title_text


@in_tmp
async def test_a_fix_lab_given_up_names_what_it_shows_in_the_title(tmp_path: Path) -> None:
    """A fix lab without an incident has no explanation of its own: its give-up shows what the lab teaches as
    the cause, so the modal's title is true."""
    path = tmp_path / "fake-fix.toml"
    path.write_text(LAB.format(after=0))
    async with console(tmp_path, load_lab(path), size=(160, 48)) as (app, pilot, _source):
        await pilot.press("G", "y")
        await until(pilot, lambda: isinstance(app.screen, TextScreen))
        assert isinstance(app.screen, TextScreen)
        body = app.screen.body_text
        assert "The cause: Acks." in body and "producer.acks=all" in body, body
        assert app.screen.title_text == "the cause and the solution"


@in_tmp
async def test_after_giving_up_no_hint_is_offered(tmp_path: Path) -> None:
    async with console(tmp_path, incident_lab(tmp_path), size=(160, 48)) as (app, pilot, source):
        assert "hint 1 of 2 is offered" in lab_facts(app)
        await pilot.press("G", "y")
        await until(pilot, lambda: isinstance(app.screen, TextScreen))
        await pilot.press("escape")
        await until(pilot, lambda: "given up" in lab_facts(app))
        assert "hint 1 of 2" not in lab_facts(app) and "costs" not in lab_facts(app)
        assert "none: you gave up" in lab_facts(app)
        footer = " ".join(str(k.description) for k in app.query("FooterKey"))  # type: ignore[attr-defined]
        assert "Hint" not in footer
        await pilot.press("h")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert source.exercise is not None and source.exercise.progress.hints_taken == 0
