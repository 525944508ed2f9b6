"""The change prompt (e), driven with Pilot: a refused line stays to be corrected with why under it, ↑ ↓ bring
back earlier lines, `-NAME` takes a kept change back, an empty line says so, Kafka's names are taken (in a fix lab
and in the plain prompt), and `n` says what a reset keeps."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input, Static

from kafkalab.ui.app import LabConsole
from kafkalab.ui.modals import ConfirmScreen, InputScreen
from tests.test_ui_app import running, settle, sync, type_line
from tests.test_ui_feed import FakeSource
from tests.test_ui_fix import console, in_tmp, lab_facts, lab_file, until


async def enter(pilot: Pilot[None], line: str) -> None:
    """Open the prompt (e) and give it ``line``."""
    await pilot.press("e")
    await pilot.pause()
    await type_line(pilot, line)


def said(app: LabConsole) -> str:
    """What the open prompt says under its line ("" when nothing)."""
    text = app.screen.query_one("#input-said", Static)
    return str(text.render()) if text.display else ""


def typed(app: LabConsole) -> str:
    return app.screen.query_one(Input).value


def closed(app: LabConsole) -> bool:
    return not isinstance(app.screen, InputScreen)


@in_tmp
async def test_a_refused_line_stays_as_typed_with_why_under_it(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, source):
        await enter(pilot, "broker unclean.leader.election.enable=true")
        await until(pilot, lambda: "not yours to change" in said(app))
        assert "broker.unclean.leader.election.enable is not yours to change" in said(app)
        assert typed(app) == "broker unclean.leader.election.enable=true"  # to correct, not to type again
        await type_line(pilot, "producer.acks=all")  # corrected in place: kept, the prompt closes
        await until(pilot, lambda: closed(app))
        assert source.exercise is not None and [c.text for c in source.exercise.changes] == ["producer.acks=all"]


@in_tmp
async def test_up_and_down_bring_back_earlier_lines(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, _source):
        await enter(pilot, "producer.acks=all")
        await until(pilot, lambda: closed(app))
        await enter(pilot, "producer.linger=abc")  # refused: in the history too, the line worth correcting
        await until(pilot, lambda: "whole number" in said(app))
        await pilot.press("escape")
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one(Input).value = "producer.re"  # a draft, kept while ↑ shows earlier lines
        await pilot.press("up")
        assert typed(app) == "producer.linger=abc"
        await pilot.press("up", "up")  # no further back than the first
        assert typed(app) == "producer.acks=all"
        await pilot.press("down", "down")
        assert typed(app) == "producer.re"


@in_tmp
async def test_minus_name_takes_a_kept_change_back(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, source):
        await enter(pilot, "producer.acks=all producer.linger=20")
        await until(pilot, lambda: "producer.linger=20" in lab_facts(app))
        await enter(pilot, "-producer.linger")
        await until(pilot, lambda: closed(app) and "producer.linger" not in lab_facts(app))
        assert "took back producer.linger=20; your changes now: producer.acks=all" in app.last_action
        assert source.session.lab.producer.config.linger_ms == 0  # what g runs: the lab's own again
        await enter(pilot, "-producer.linger")
        await until(pilot, lambda: "none of your changes is producer.linger (yours: producer.acks=all)" in said(app))


@in_tmp
async def test_a_300_digit_number_is_refused_with_the_range(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, source):
        await enter(pilot, "producer.batch=" + "9" * 300)
        await until(pilot, lambda: "give 1..2147483647" in said(app))
        assert "(300 characters)" in said(app) and "together" not in said(app)
        assert source.exercise is not None and source.exercise.changes == []


@in_tmp
async def test_a_type_error_is_not_told_that_settings_go_together(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, _source):
        await enter(pilot, "producer.linger=abc")
        await until(pilot, lambda: "producer.linger=abc is not a whole number" in said(app))
        assert "work together" not in said(app)
        await type_line(pilot, "producer.idempotent=true")  # with the lab's acks=0: a conflict, so it is told
        await until(pilot, lambda: "settings that only work together go on one line" in said(app))


@in_tmp
async def test_an_empty_line_keeps_the_prompt_open_and_says_nothing_changed(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, _source):
        await enter(pilot, "   ")
        assert not closed(app) and "nothing typed, so nothing changed" in said(app) and "esc" in said(app)
        await pilot.press("escape")
        assert closed(app)


@in_tmp
async def test_kafkas_names_are_kept_as_kafkalabs_at_the_prompt(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, source):
        await enter(pilot, "acks=all enable.idempotence=true")
        await until(pilot, lambda: closed(app))
        assert "enable.idempotence = producer.idempotent" in app.last_action
        assert "YOUR CHANGES  producer.acks=all, producer.idempotent=true" in lab_facts(app)
        assert source.session.lab.producer.config.idempotent


@sync
async def test_the_plain_prompt_takes_kafkas_names_and_the_same_keys() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await enter(pilot, "session.timeout.ms=6000")
        await until(pilot, lambda: closed(app))
        assert ("consumer.session-timeout", "6000") in feed.actions
        assert app.last_action == "consumer.session-timeout (session.timeout.ms) = 6000 for the next run"
        await enter(pilot, "")
        assert "nothing typed" in said(app)
        await pilot.press("up")
        assert typed(app) == "session.timeout.ms=6000"


@in_tmp
async def test_reset_says_what_it_keeps_and_keeps_it(tmp_path: Path) -> None:
    async with console(tmp_path, lab_file(tmp_path)) as (app, pilot, source):
        await enter(pilot, "producer.acks=all")
        await until(pilot, lambda: closed(app))
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "Kept: your changes (e), the hints you took and your progress" in app.screen.detail
        await pilot.press("y")
        await until(pilot, lambda: app.last_action == "lab reset to a clean state")
        await settle(pilot)
        assert source.exercise is not None and [c.text for c in source.exercise.changes] == ["producer.acks=all"]
        assert source.session.lab.producer.config.acks == "all"
