"""The console's behaviour with Pilot on the fake feed: node keys, confirmations, the run, errors, quit."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import re
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.pilot import Pilot
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Label, Static

from kafkalab.admin import ClusterSnapshot
from kafkalab.clients.stats import ClientState
from kafkalab.cluster import NodeState
from kafkalab.feeds.cluster_source import ClusterSource
from kafkalab.feeds.frames import NO_CLUSTER_YET, NodesFrame, ReportView, RunFrame
from kafkalab.feeds.source import CLOSING
from kafkalab.feeds.workload import waiting_for
from kafkalab.labs.results import Phase
from kafkalab.ui.app import LabConsole, fit_topbar
from kafkalab.ui.broker import BrokerPane
from kafkalab.ui.consumers import ConsumersTable
from kafkalab.ui.logtail import LogTail
from kafkalab.ui.modals import ConfirmScreen, ErrorScreen, HelpScreen, InputScreen, TextScreen
from kafkalab.ui.nodepane import NodePane
from kafkalab.ui.partitions import PartitionsPane, PartitionTable
from tests.screen_text import svg_rows
from tests.test_ui_feed import TOPIC, FakeSource, sample_run

SIZE = (120, 36)


def sync(scenario: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """Run an async Pilot scenario as a plain test (the suite has no asyncio plugin)."""

    @functools.wraps(scenario)
    def test() -> None:
        asyncio.run(scenario())

    return test


def console(source: FakeSource, **kwargs: object) -> LabConsole:
    return LabConsole(source, [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0,  # type: ignore[arg-type]
                      **kwargs)


@contextlib.asynccontextmanager
async def running(feed: FakeSource, size: tuple[int, int] = SIZE) -> AsyncIterator[tuple[LabConsole, Pilot[None]]]:
    """The console on ``feed``, its first frames applied."""
    app = console(feed)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot


async def settle(pilot: Pilot[None], polls: int = 2) -> None:
    """Wait until every poller applied ``polls`` more frames."""
    app = pilot.app
    assert isinstance(app, LabConsole)
    wanted = [p.polls + polls for p in app.pollers]
    for _ in range(1200):  # generous: the machine may be busy
        if all(p.polls >= w for p, w in zip(app.pollers, wanted, strict=True)):
            await pilot.pause()
            return
        await asyncio.sleep(0.05)
    raise AssertionError("pollers did not deliver frames within 60 s")


async def type_line(pilot: Pilot[None], text: str) -> None:
    """Type ``text`` into the open prompt and submit it: the value is set at once, since a key press per character
    repaints the whole console each time (about 0.5 s of CPU per character)."""
    await pilot.pause()
    pilot.app.screen.query_one(Input).value = text
    await pilot.press("enter")


def leader_cell(app: LabConsole, key: str) -> str:
    table = app.query_one(PartitionTable)
    return table.get_cell(key, "leader").plain.strip()


@sync
async def test_kill_on_leader_changes_badge_and_table_leader() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        assert leader_cell(app, "test-topic/1") == "2"
        await pilot.press("2", "k")
        await settle(pilot)
        pane = app.query_one("#node-broker-2", BrokerPane)
        assert pane.has_class("-killed") and pane.has_class("-selected")
        assert "KILLED" in str(pane.query_one(".badge-line", Static).render())
        assert feed.actions == [("broker-2", "kill")]
        assert leader_cell(app, "test-topic/1") == "3"
        assert ("test-topic/1", "leader") in app.query_one(PartitionTable).marks


@sync
async def test_a_killed_leader_is_marked_down_at_once_then_the_election_shows() -> None:
    feed = FakeSource()
    feed.delay_election = True
    async with running(feed) as (app, pilot):
        await pilot.press("2", "k")
        await settle(pilot)
        table = app.query_one(PartitionTable)
        assert leader_cell(app, "test-topic/1") == "2✗"  # metadata still names broker 2: kafkalab knows better
        assert table.get_cell("test-topic/1", "status").plain.strip() == "electing a leader"
        assert table.get_cell("test-topic/0", "status").plain.strip() == "ok"
        with feed.lock:
            feed.elect(2)
        await settle(pilot)
        assert leader_cell(app, "test-topic/1") == "3"
        assert table.get_cell("test-topic/1", "status").plain.strip() == "under-replicated"


@sync
async def test_selection_restyles_only_the_pane_and_matches_a_full_restyle() -> None:
    """NodePane.set_selected restyles the pane alone: no CSS rule may style a pane's children by -selected."""
    async with running(FakeSource()) as (app, pilot):
        await pilot.press("2", "3")
        await pilot.pause()
        assert [p.node_name for p in app.query(NodePane) if p.has_class("-selected")] == ["broker-3"]
        assert "selected: broker-3" in str(app.query_one("#topbar", Static).render())
        for pane in app.query(NodePane):
            shown = [w.styles.css for w in pane.walk_children(with_self=True)]
            app.stylesheet.update(pane)
            assert [w.styles.css for w in pane.walk_children(with_self=True)] == shown, pane.node_name


@sync
async def test_controller_mark_follows_the_controller() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        assert app.query_one("#node-broker-1", BrokerPane).border_title == "[1] broker-1 ★"
        await pilot.press("1", "k")
        await settle(pilot)
        assert app.query_one("#node-broker-1", BrokerPane).border_title == "[1] broker-1"
        assert app.query_one("#node-broker-2", BrokerPane).border_title == "[2] broker-2 ★"


@sync
async def test_consumers_table_follows_changes_and_removals() -> None:
    feed = FakeSource(with_run=True)
    async with running(feed) as (app, pilot):
        table = app.query_one(ConsumersTable)
        assert table.get_cell("consumer", "rebalances").plain.strip() == "1"
        consumer = feed.run_frame.consumers[0]
        feed.run_frame = replace(feed.run_frame, consumers=(replace(consumer, rebalances=2),))
        await settle(pilot)
        assert table.get_cell("consumer", "rebalances").plain.strip() == "2"
        feed.run_frame = replace(feed.run_frame, consumers=())
        await settle(pilot)
        assert table.row_count == 0


@sync
async def test_at_100_columns_a_consumers_name_takes_its_states_colour_as_the_state_changes() -> None:
    """At 100 columns the state column gives way and the name carries the state's colour. A cell was updated only
    when its text changed, so the name kept the colour of the state it was first shown in: a consumer that
    crashed, or waited behind an open transaction, looked as it did at its start."""
    feed = FakeSource(with_run=True)
    consumer = replace(feed.run_frame.consumers[0], name="consumer-1", state=ClientState.RUNNING,
                       group_state="stable")
    feed.run_frame = replace(feed.run_frame, consumers=(consumer,))
    async with running(feed, size=(100, 30)) as (app, pilot):
        await pilot.press("u")
        await settle(pilot)
        table = app.query_one(ConsumersTable)
        assert "state" not in table.columns_shown
        assert table.get_cell("consumer-1", "name").style == "green"
        for changed, style in ((replace(consumer, held={0: 12.0}), "bold yellow"),
                               (replace(consumer, state=ClientState.CRASHED), "bold red")):
            feed.run_frame = replace(feed.run_frame, consumers=(changed,))
            await settle(pilot)
            assert table.get_cell("consumer-1", "name").style == style


@sync
async def test_startup_objects_are_frozen_while_the_console_runs() -> None:
    async with running(FakeSource()):
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


@sync
async def test_killing_the_last_in_sync_replica_asks_first() -> None:
    feed = FakeSource()
    feed.partitions = [replace(p, isr=(3,), leader=3) if p.partition == 0 else p for p in feed.partitions]
    app = console(feed)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3", "k")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "test-topic/0" in app.screen.detail
        await pilot.press("n")
        await settle(pilot)
        assert feed.actions == []
        await pilot.press("k", "y")
        await settle(pilot)
        assert feed.actions == [("broker-3", "kill")]


@sync
async def test_pause_key_toggles_and_buttons_act_on_their_broker() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("1", "p")
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        await pilot.click("#node-broker-3 .btn-stop")
        await settle(pilot)
        assert feed.actions == [("broker-1", "pause"), ("broker-1", "resume"), ("broker-3", "stop")]
        assert app.node_states["broker-3"] == NodeState.STOPPED


@sync
async def test_start_and_stop_run_fill_the_results_pane() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("g")
        await settle(pilot)
        assert app.run_frame.live
        assert "run: running" in str(app.query_one("#topbar", Static).render())
        await pilot.press("x")
        await settle(pilot)
        assert not app.run_frame.live
        assert app.query_one("#side").active == "tab-results"  # type: ignore[attr-defined]
        verdict = str(app.query_one("#verdict", Static).render())
        assert "nothing acknowledged was lost" in verdict
        table = app.query_one("#per-partition", Static).content
        assert isinstance(table, Table) and table.row_count == 6
        headings = [str(c.header) for c in table.columns]
        assert headings == ["part", "acked", "proc.", "lost", "dupl.", "redel.", "reord.", "leader moves", "recov."]
        assert [str(c) for c in table.columns[1].cells] == ["83,133"] * 6
        # its samples are a key away, and the pane says which (no footer has room for it at 100x30)
        assert "a shows samples of these records" in str(app.query_one("#totals", Static).render())


@sync
async def test_a_new_run_clears_the_last_runs_counts_and_says_its_report_comes_at_the_end() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        for key in "gx":
            await pilot.press(key)
            await settle(pilot)
        assert "nothing acknowledged was lost" in str(app.query_one("#verdict", Static).render())
        await pilot.press("g")
        await settle(pilot)
        verdict = str(app.query_one("#verdict", Static).render())
        assert "a run is under way: its report appears here when it ends" in verdict
        assert "the last run's verdict: acks=all, min ISR 2: nothing acknowledged was lost" in verdict
        assert app.query_one("#per-partition", Static).content == ""
        assert app.query_one("#totals", Static).has_class("-empty")
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.query_one("#per-partition", Static).content, Table)


@sync
async def test_the_top_bar_follows_the_run_and_ends_on_its_outcome_not_on_run_started() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("g")
        await settle(pilot)
        feed.run_frame = replace(feed.run_frame, message="creating topic test-topic: 6 partitions")
        await settle(pilot)
        assert "» creating topic test-topic" in topbar_text(app)
        feed.run_frame = replace(sample_run(), live=False, phase=Phase.DONE)  # the run ends by itself
        await settle(pilot)
        assert "run started" not in topbar_text(app)
        assert "run: done" in topbar_text(app) and "report in Results (v)" in topbar_text(app)


@sync
async def test_unreachable_cluster_keeps_last_values_greyed() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        feed.reachable = False
        await settle(pilot)
        status = str(app.query_one("#partitions-status", Static).render())
        assert "UNREACHABLE" in status and "last known values" in status
        table = app.query_one(PartitionTable)
        assert table.stale and table.row_count == 6
        assert leader_cell(app, "test-topic/2") == "3"
        assert "dim" in str(table.get_cell("test-topic/2", "leader").style)


@sync
async def test_an_end_offset_not_given_in_time_keeps_its_last_known_value() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        table = app.query_one(PartitionTable)
        assert table.get_cell("test-topic/2", "end").plain.strip() == "3,000"
        with feed.lock:  # the leader of partition 2 did not answer; partition 3 moved on
            feed.partitions = [replace(p, end_offset=None if p.partition == 2 else p.end_offset + 7)
                               for p in feed.partitions]
        await settle(pilot)
        assert table.get_cell("test-topic/2", "end").plain.strip() == "3,000"
        assert table.get_cell("test-topic/3", "end").plain.strip() == "4,007"


@sync
async def test_a_failing_poll_shows_a_dismissable_error_and_polling_goes_on() -> None:
    feed = FakeSource()
    calls = {"n": 0}
    real = feed.snapshot

    def flaky() -> ClusterSnapshot:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("admin socket went away")
        return real()

    feed.snapshot = flaky  # type: ignore[method-assign]
    app = console(feed)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, 3)
        assert isinstance(app.screen, ErrorScreen)
        assert "admin socket went away" in app.screen.message
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ErrorScreen)
        assert calls["n"] >= 4


@sync
async def test_help_lists_bindings_by_id_with_user_keymap() -> None:
    feed = FakeSource()
    app = console(feed, keymap={"broker.kill": "K"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = {row[2]: row[0] for row in app.screen.rows}
        assert rows["broker.kill"] == "K"
        assert {"broker.stop", "broker.pause", "broker.start", "run.start", "app.quit"} <= set(rows)
        await pilot.press("escape", "2", "k")
        await settle(pilot)
        assert feed.actions == []  # k is no longer kill
        await pilot.press("K")
        await settle(pilot)
        assert feed.actions == [("broker-2", "kill")]


@sync
async def test_quit_during_a_live_run_confirms_and_closes_the_source() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert not feed.closed
        await pilot.press("ctrl+q", "y")
        for _ in range(100):
            if feed.closed:
                break
            await asyncio.sleep(0.05)
    assert feed.closed


@sync
async def test_consumers_table_shows_every_column_at_160_columns_and_titles_are_not_doubled() -> None:
    feed = FakeSource(with_run=True)
    consumer = feed.run_frame.consumers[0]
    wide = replace(consumer, name="consumer-1", state="running", group_state="rebalancing", received=498_796,
                   processed=498_796, committed={p: 83_000 for p in range(6)}, lag={p: 12_345 for p in range(6)})
    feed.run_frame = replace(feed.run_frame, consumers=(wide, replace(wide, name="consumer-2")))
    app = console(feed)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("u")  # the report took the Results tab
        await pilot.pause()
        table = app.query_one(ConsumersTable)
        assert [str(c.label).strip() for c in table.columns.values()][-2:] == ["unread", "rebal"]
        assert table.virtual_size.width <= table.scrollable_content_region.width, "columns cut off"
        assert table.get_cell("consumer-1", "assigned").plain.strip() == "0-5"
        assert table.border_title == "consumers · group test-app"
        assert app.query_one("#producer").border_title == "producer"


@sync
async def test_bare_console_offers_only_keys_that_act_and_brokers_that_exist() -> None:
    feed = FakeSource()
    feed.offers = ClusterSource.offers
    app = console(feed)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        footer = " ".join(str(k.description) for k in app.query("FooterKey"))  # type: ignore[attr-defined]
        assert "Start run" in footer and "Stop run" not in footer  # no run to stop yet
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2] for row in app.screen.rows}
        assert {"run.start", "topic.alter"} <= ids and "run.stop" not in ids  # x while a run is live
        assert not ids & {"lab.reset", "run.setting", "consumer.quit", "consumer.crash", "consumer.wait"}
        assert not any(i.startswith("broker.select.") and int(i[-1]) > 3 for i in ids)
        await pilot.press("escape", "n", "e", "4")
        await settle(pilot)
        assert isinstance(app.screen, Screen) and not isinstance(app.screen, ModalScreen)
        assert app.selected is None and not app._notifications  # no toast, nothing happened


def test_waiting_for_names_the_partition_its_missing_replicas_and_the_broker_down() -> None:
    feed = FakeSource()
    assert waiting_for(feed.snapshot(), TOPIC) == ""
    feed.node_action("broker-2", "kill")
    feed.node_action("broker-3", "kill")
    said = waiting_for(feed.snapshot(), TOPIC)
    assert said == f"waiting for 2 in-sync replicas of {TOPIC}/0: brokers 2, 3 down"
    assert waiting_for(ClusterSnapshot(0.0, False), TOPIC) == "waiting for the brokers to answer"


@sync
async def test_lab_console_before_its_first_run_says_no_cluster_yet_not_unreachable() -> None:
    feed = FakeSource()
    feed.snapshot = lambda: ClusterSnapshot(0.0, False, error=NO_CLUSTER_YET)  # type: ignore[method-assign]
    feed.nodes = lambda: NodesFrame(())  # type: ignore[method-assign]
    app = LabConsole(feed, [1, 2, 3], poll_s=0.15, clock=lambda: 0.0)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        footer = " ".join(str(k.description) for k in app.query("FooterKey"))  # type: ignore[attr-defined]
        assert "Start run" in footer and "Kill" not in footer  # no nodes to act on yet
        status = str(app.query_one("#partitions-status", Static).render())
        assert "NO CLUSTER YET" in status and "g starts the lab's run" in status
        assert "UNREACHABLE" not in status and not app.query_one("#partitions").has_class("-stale")
        topbar = str(app.query_one("#topbar", Static).render())
        assert "fake cluster ready" in topbar and "» cluster ready" not in topbar
        facts = [str(line.render()).strip() for line in app.query(".facts-line")]
        assert facts == ["not started yet"] * 4, facts  # not 'not registered' / 'clients: unknown': no fault


@sync
async def test_a_starting_nodes_reason_is_shown_whole_at_100x30() -> None:
    feed = FakeSource()
    feed.states["broker-2"] = NodeState.STARTING
    feed.reasons["broker-2"] = "launched, waiting until ready"
    app = console(feed)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        rows = svg_rows(app.export_screenshot(), 30, 100)
        pane = app.query_one("#node-broker-2", BrokerPane).region
        text = " ".join(row[pane.x + 1:pane.right - 1].strip() for row in rows[pane.y + 1:pane.y + 4])
        assert "STARTING launched, waiting until ready" in " ".join(text.split())


@sync
async def test_the_partition_status_line_names_what_is_wrong_at_100x30() -> None:
    """The line is cut at the pane's edge: the under-replicated count comes first, the clock last."""
    async with running(FakeSource(), size=(100, 30)) as (app, pilot):
        await pilot.press("2", "k")
        await settle(pilot)
        rows = svg_rows(app.export_screenshot(), 30, 100)
        line = app.query_one("#partitions-status", Static).region
        shown = " ".join(rows[line.y][line.x:line.right].split())
        assert re.match(r"\d+ under-replicated controller", shown), shown


@sync
async def test_topic_prompt_shows_its_brackets_and_offers_a_reassignment_for_an_rf_change() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, InputScreen)
        assert "NAME [rf=N] [min.isr=N]" in str(app.screen.query_one(Label).render())
        await type_line(pilot, "test-topic rf=5")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "RF 3 to RF 5" in app.screen.question
        await pilot.press("y")
        await settle(pilot)
        assert ("reassign test-topic", "5") in feed.actions
        await pilot.press("t")
        await type_line(pilot, "new-topic rf=9")
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert app.screen.title_text == "topic new-topic failed" and "give rf=3 or fewer" in app.screen.message


@sync
async def test_a_runs_verdict_is_told_once_though_its_report_is_rebuilt() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("g", "x")
        await settle(pilot)
        report = feed.run_frame.report
        assert report is not None
        feed.run_frame = replace(feed.run_frame, report=replace(report, samples={}))  # same verdict, new report
        await settle(pilot)
        told = [n for n in app._notifications if n.message == report.verdict]
        assert len(told) == 1


@sync
async def test_presenter_mode_shows_the_report_when_a_run_ends() -> None:
    feed = FakeSource()
    app = console(feed, presenter=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.query_one("#side").display
        await pilot.press("g", "x")
        await settle(pilot)
        assert app.query_one("#side").display and app.query_one("#side").active == "tab-results"  # type: ignore[attr-defined]


@sync
async def test_consumers_table_keeps_its_essential_columns_whole_at_100_columns() -> None:
    """The side pane of a 100-column terminal: consumer, partitions, committed, lag and rebalances, no
    horizontal scrolling; the wide layout comes back when the pane is wide again."""
    feed = FakeSource(with_run=True)
    consumer = feed.run_frame.consumers[0]
    busy = replace(consumer, name="consumer-1", state="running", group_state="rebalancing", assignment=(0, 2, 4),
                   committed={p: 83_000 for p in range(6)}, lag={p: 12_345 for p in range(6)}, rebalances=12)
    feed.run_frame = replace(feed.run_frame, consumers=(busy, replace(busy, name="consumer-2", assignment=(1, 3, 5))))
    app = console(feed)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("u")  # the report took the Results tab
        await settle(pilot)
        table = app.query_one(ConsumersTable)
        assert [str(c.label).strip() for c in table.columns.values()] == ["consumer", "part", "commit", "unrd", "reb"]
        assert table.virtual_size.width <= table.scrollable_content_region.width, "columns cut off"
        assert table.max_scroll_x == 0
        row = [table.get_cell("consumer-1", k).plain.strip() for k in ("assigned", "committed", "lag", "rebalances")]
        assert row == ["0,2,4", "498k", "74.1k", "12"]
        assert "yellow" in str(table.get_cell("consumer-1", "name").style)  # rebalancing, as the name's colour
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert [str(c.label).strip() for c in table.columns.values()][-3:] == ["commit", "unread", "rebal"]
        assert table.get_cell("consumer-1", "lag").plain.strip() == "74,070"


@sync
async def test_node_panes_grow_with_the_terminal_height() -> None:
    """11 rows where room is short (100x30 and 120x36); taller terminals give the log tails the rows."""
    app = console(FakeSource())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        heights = {}
        for size in ((100, 30), (120, 36), (160, 48), (240, 67)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            heights[size] = app.query_one("#nodes").outer_size.height
        tails = app.query(".log-tail")
        assert all(tail.size.height >= 7 for tail in tails), [tail.size.height for tail in tails]
    assert heights[(100, 30)] == heights[(120, 36)] == 11
    assert 14 <= heights[(160, 48)] < heights[(240, 67)] <= 24, heights


def topbar_text(app: LabConsole) -> str:
    return str(app.query_one("#topbar", Static).render())


@sync
async def test_the_top_bar_says_its_state_whole_at_100_columns() -> None:
    """After a run at 100x30 the hint "g runs again" is whole (the node hint gives way); a long lab id too."""
    feed = FakeSource()
    feed.run_frame = replace(sample_run(), lab=replace(sample_run().lab, lab_id="consumer-groups-typed"))
    app = console(feed)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.apply_run(replace(feed.run_frame, live=True, phase=Phase.RUNNING, report=None))
        app.apply_run(feed.run_frame)  # the run ends
        await pilot.pause()
        topbar = topbar_text(app)
        assert topbar.rstrip().endswith("report in Results (v); g runs again"), topbar
        assert "consumer-groups-typed" in topbar and "run: done" in topbar and len(topbar.rstrip()) <= 100


def test_the_top_bar_drops_the_hint_then_the_brand_and_cuts_only_news_too_long_alone() -> None:
    state, hint = Text(" consumer-groups-typed  run: done "), Text("  pick a node: 1..3, 0")
    news = Text("  » report in Results (v); g runs again")
    assert fit_topbar(state, news, hint, 120).plain.startswith(" kafkalab ") and "pick a node" in fit_topbar(
        state, news, hint, 120).plain
    at_100 = fit_topbar(state, news, hint, 100).plain
    assert at_100.startswith(" kafkalab ") and "pick a node" not in at_100 and at_100.endswith("g runs again")
    at_80 = fit_topbar(state, news, hint, 80).plain
    assert at_80 == state.plain + news.plain and len(at_80) <= 80
    long_news = Text("  » " + "waiting for 2 in-sync replicas of test-topic/2: brokers 2, 3 down " * 2)
    cut = fit_topbar(state, long_news, hint, 80).plain
    assert len(cut) == 80 and cut.endswith("…") and cut.startswith(state.plain)


FAILED = ReportView("cluster did not start: broker-2 exited with 1 (see broker-2.log)", False, {}, {},
                    analysed=False)


@sync
async def test_a_failed_run_says_why_and_no_report_never_report_ready() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        app.apply_run(RunFrame(live=True, phase=Phase.STARTING))
        feed.run_frame = RunFrame(live=False, phase=Phase.ERROR, report=FAILED)  # the next polls say so too
        app.apply_run(feed.run_frame)
        await pilot.pause()
        topbar = topbar_text(app)
        assert "run failed, no report: cluster did not start" in topbar and "report in" not in topbar
        titles = [n.title for n in app._notifications]
        assert "run failed: no report" in titles and "report ready" not in titles
        results = app.query_one("#results")
        verdict = str(results.query_one("#verdict", Static).render())
        assert "the run failed: no report" in verdict and "broker-2 exited with 1" in verdict
        assert not results.query_one("#totals").display and not str(results.query_one("#per-partition",
                                                                                       Static).render())
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, TextScreen) and "No report: the run ended before its analysis" in app.screen.body


def test_a_run_that_ended_before_its_analysis_has_no_report_view() -> None:
    from kafkalab.feeds.lab_source import report_view
    from kafkalab.labs.results import Outcome, RunResult
    from tests.lab_fakes import clean_report

    failed = RunResult("setup-check", Path("run"), Outcome.ERROR, error="cluster did not start: port 9092 is taken")
    view = report_view(failed)
    assert view is not None and not view.analysed and not view.ok and not view.totals
    assert view.verdict == "cluster did not start: port 9092 is taken"  # once, not "X — X"
    stopped = RunResult("setup-check", Path("run"), Outcome.STOPPED, error="stopped before the end")
    assert report_view(stopped) == ReportView("stopped before the end", False, {}, {}, analysed=False)
    done = RunResult("setup-check", Path("run"), Outcome.PASSED, report=clean_report("ok"), verdict="ok")
    assert report_view(done).analysed  # type: ignore[union-attr]


@sync
async def test_a_bare_console_explains_its_lab_and_results_tabs() -> None:
    feed = FakeSource()
    feed.reports = False  # as ClusterSource: the default workload is not analysed
    app = console(feed)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await pilot.pause()
        rows = svg_rows(app.export_screenshot(), 30, 100)
        side = app.query_one("#side").region
        lab = " ".join(" ".join(r[side.x:side.right].split()) for r in rows[side.y:side.bottom])
        assert "No lab loaded: g runs the default workload" in lab and "kafkalab console LAB opens a lab" in lab
        assert rows[side.y + 2][side.x:side.right].strip().startswith("No lab loaded"), "blank lines above it"
        await pilot.press("v")
        await pilot.pause()
        verdict = str(app.query_one("#verdict", Static).render())
        assert "the default workload (g) is not analysed" in verdict and "No report yet" not in verdict


def test_an_attached_console_says_on_quit_that_the_cluster_keeps_running_and_how_to_stop_it(tmp_path: Path) -> None:
    cluster = SimpleNamespace(spec=SimpleNamespace(state_dir=tmp_path), nodes=[])
    attached = ClusterSource(cluster, owned=False)  # type: ignore[arg-type]
    assert "keeps running" in attached.closing and "stopping every process" not in attached.closing
    assert attached.after_quit == (f"the cluster in {tmp_path} keeps running: `kafkalab cluster down --state-dir "
                                   f"{tmp_path}` stops it, `kafkalab console --attach {tmp_path}` shows it again")
    owned = ClusterSource(cluster)  # type: ignore[arg-type]
    assert owned.closing == CLOSING and owned.after_quit == ""


@sync
async def test_quitting_an_attached_console_says_the_cluster_keeps_running() -> None:
    class AttachedFake(FakeSource):
        closing = "closing the console (its workload only): the attached cluster keeps running ..."
        after_quit = "the cluster in /x keeps running: ..."

    feed = AttachedFake()
    feed.run_frame = replace(sample_run(), live=True, phase=Phase.RUNNING)
    async with running(feed) as (app, pilot):
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "The attached cluster keeps running." in app.screen.detail
        await pilot.press("y")
        await pilot.pause()
        assert "the attached cluster keeps running" in topbar_text(app) and "stopping every" not in topbar_text(app)


@sync
async def test_presenter_mode_at_100x30_shows_the_runs_progress_and_goes_back_from_the_report_to_the_table() -> None:
    """The clients pane is hidden: a progress line says the run. On a narrow screen the report then takes the
    whole row; u brings the table back, v the report."""
    feed = FakeSource()
    app = console(feed, presenter=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        line = app.query_one("#presenter-run", Static)
        assert line.display and "no run yet: g starts one" in str(line.render())
        await pilot.press("g")
        await settle(pilot)
        said = " ".join(str(line.render()).split())
        assert "FINISHED 498,796/500,000 acked" in said and "failed 1,204" in said and "consumed 498,796" in said
        await pilot.press("x")
        await settle(pilot)
        assert app.query_one("#side").display and not app.query_one("#partitions").display
        await pilot.press("u")
        await pilot.pause()
        assert app.query_one("#partitions").display and not app.query_one("#side").display
        assert "presenter mode shows the table" in topbar_text(app)
        await pilot.press("v")
        await pilot.pause()
        assert app.query_one("#side").display and not app.query_one("#partitions").display
        await pilot.press("P")  # out of presenter mode: the clients pane says it
        await pilot.pause()
        assert not line.display


@sync
async def test_a_group_card_picked_before_it_has_mounted_shows_its_rows_once_it_has() -> None:
    """The shared cluster's groups appear while `]` cycles through them: picking a card mounted this very
    frame (no columns yet) must not add rows to a table without columns (a CI run died so)."""
    from textual.app import App
    from textual.widgets import DataTable

    from kafkalab.admin.groups import GroupDescription, PartitionLag
    from kafkalab.feeds.groups_feed import GroupsFrame
    from kafkalab.ui.groups import GroupsPane

    def group(name: str) -> GroupDescription:
        return GroupDescription(name, "Stable", partitions=(PartitionLag("t", 0, 5, 9), PartitionLag("t", 1, 1, 2)))

    class Host(App[None]):
        def compose(self) -> Any:
            yield GroupsPane()

    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(GroupsPane)
        pane.show(GroupsFrame((group("a"),)))
        await pilot.pause()
        pane.show(GroupsFrame((group("a"), group("b"))))
        assert pane.select_next() == "b"  # card b mounts in this frame
        await pilot.pause()
        table = pane.cards["b"].query_one(DataTable)
        assert table.row_count == 2 and table.get_cell("t/0", "lag") == "4"
        assert pane.cards["b"].has_class("-selected") and not pane.cards["a"].has_class("-selected")


@sync
async def test_at_100x30_the_keys_scroll_the_results_down_to_the_chart() -> None:
    """At the smallest supported size the report's chart lies below its table: the Results tab takes the focus,
    so PgDn / End reach the chart without a mouse (they did nothing before)."""
    from kafkalab.ui.chart import ThroughputChart
    from kafkalab.ui.results import ResultsPane

    async with running(FakeSource(), size=(100, 30)) as (app, pilot):
        await pilot.press("g", "x")
        await settle(pilot)
        results = app.query_one(ResultsPane)
        chart = app.query_one(ThroughputChart)
        assert app.focused is results and results.scroll_y == 0
        assert chart.region.y >= results.region.bottom, "the chart starts below the fold"
        await pilot.press("end")
        await settle(pilot)
        assert results.scroll_y > 0 and chart.region.y < results.region.bottom
        await pilot.press("o")  # groups take the whole row on a narrow screen, as the results do
        await settle(pilot)
        assert not app.query_one("#partitions").display and app.query_one("#side").region.width > 90


@sync
async def test_a_reset_clears_the_panes_of_the_cluster_that_is_gone() -> None:
    """After `n` the bar said the lab was reset while the panes still showed KILLED with the old log: a pane of a
    node that no longer exists shows no state of it."""
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("2", "k")
        await settle(pilot)
        pane = app.query_one("#node-broker-2", BrokerPane)
        assert pane.has_class("-killed")
        with feed.lock:
            feed.states = {}  # the reset ended the cluster: the source has no node now
        await settle(pilot)
        badge = str(pane.query_one(".badge-line", Static).render())
        assert "KILLED" not in badge and "not started yet" in badge and not pane.has_class("-killed")
        assert app.query_one("#node-broker-1", BrokerPane).query_one(LogTail).line_count == 0
        assert not app.node_states


@sync
async def test_the_lab_tab_takes_the_whole_row_at_100_columns() -> None:
    """After a run the Lab tab was squeezed beside the partition table into 34 columns: at 100x30 it takes the
    row, as Results does."""
    feed = FakeSource(with_run=True)
    async with running(feed, size=(100, 30)) as (app, pilot):
        app.action_show_tab("lab")
        await settle(pilot)
        assert app.query_one("#side").size.width > 90
        assert not app.query_one(PartitionsPane).display
