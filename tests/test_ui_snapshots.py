"""Snapshot tests of the console's main layouts: fake feed, frozen clock, fixed sizes.

Update the SVGs after a deliberate change with `pytest tests/test_ui_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from textual.pilot import Pilot

from kafkalab.admin import ClusterSnapshot
from kafkalab.cluster import NodeState
from kafkalab.feeds.frames import NO_CLUSTER_YET
from kafkalab.ui.app import LabConsole
from tests.test_ui_app import settle
from tests.test_ui_feed import FakeSource


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    """The table's 'updated HH:MM:SS' comes from the feed's frozen epoch, shown in local time: pin it."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def app(feed: FakeSource | None = None, presenter: bool = False) -> LabConsole:
    console = LabConsole(feed or FakeSource(), [1, 2, 3], boot=False, poll_s=0.2, clock=lambda: 0.0,
                         presenter=presenter)
    console.animation_level = "none"  # a tab underline caught mid-slide would differ run to run
    return console


async def ready(pilot: Pilot[None]) -> None:
    await settle(pilot, 2)
    pilot.app.clear_notifications()
    await pilot.pause()


def test_smallest_supported_size_100x30(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(app(), terminal_size=(100, 30), run_before=ready)


def test_below_the_smallest_size_80x24_says_what_size_is_needed(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(app(), terminal_size=(80, 24), run_before=ready)


def test_full_screen_with_results_after_a_run(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await ready(pilot)
        await pilot.press("2", "v")
        await ready(pilot)

    assert snap_compare(app(FakeSource(with_run=True)), terminal_size=(160, 48), run_before=run_before)


async def on_results(pilot: Pilot[None]) -> None:
    await ready(pilot)
    await pilot.press("v")
    await ready(pilot)


def test_results_after_a_run_at_100x30_show_the_table_and_the_legend(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(app(FakeSource(with_run=True)), terminal_size=(100, 30), run_before=on_results)


def test_results_scrolled_to_the_chart_at_100x30(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await on_results(pilot)
        pilot.app.query_one("#results").scroll_end(animate=False)
        await pilot.pause()

    assert snap_compare(app(FakeSource(with_run=True)), terminal_size=(100, 30), run_before=run_before)


def test_finished_run_after_reset_shows_stopped_nodes_and_the_full_table(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """Nodes kafkalab ended are grey 'stopped' with the reason, never red 'killed'."""
    feed = FakeSource(with_run=True)
    feed.states = dict.fromkeys(feed.states, NodeState.STOPPED)
    feed.reasons = dict.fromkeys(feed.states, "run reset")
    feed.snapshot = lambda: ClusterSnapshot(0.0, False, error=NO_CLUSTER_YET)  # type: ignore[method-assign]
    assert snap_compare(app(feed), terminal_size=(160, 48), run_before=on_results)


def test_broker_down_leaders_moved_and_marked(snap_compare) -> None:  # type: ignore[no-untyped-def]
    feed = FakeSource()

    async def run_before(pilot: Pilot[None]) -> None:
        await ready(pilot)
        await pilot.press("2", "k")
        await ready(pilot)

    assert snap_compare(app(feed), terminal_size=(120, 36), run_before=run_before)
    assert feed.actions == [("broker-2", "kill")]


def test_presenter_mode_with_a_broker_down(snap_compare) -> None:  # type: ignore[no-untyped-def]
    feed = FakeSource()
    feed.node_action("broker-3", "stop")

    assert snap_compare(app(feed, presenter=True), terminal_size=(120, 36), run_before=ready)


def test_lab_tab_shows_instructions_and_timeline(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await ready(pilot)
        await pilot.press("l")
        await pilot.pause()

    assert snap_compare(app(FakeSource(with_run=True)), terminal_size=(140, 40), run_before=run_before)


def test_presenter_mode_at_100x30_back_on_the_table_after_a_run(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The report took the row; u brings the table back, with the run's progress line above it."""
    async def run_before(pilot: Pilot[None]) -> None:
        await ready(pilot)
        await pilot.press("g", "x")
        await ready(pilot)
        await pilot.press("u")
        await ready(pilot)

    assert snap_compare(app(presenter=True), terminal_size=(100, 30), run_before=run_before)
