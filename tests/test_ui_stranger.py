"""What a stranger tripped over in the console (issue 33, items 4, 10, 11 and 15's console parts), driven with
Pilot on the fake feed: the palette's one quit (which asks while a run is live) and one help, ctrl+c saying how
to quit, a node key that has nothing to do saying so, toasts folded and clear of the partition table at
100x30, the partition header's clock kept at 100 columns, the groups card wrapped at its separators, the
brokers a wait names in order, a down node without a pid."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import replace

from rich.console import Console
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import Static
from textual.widgets._toast import Toast

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.admin.groups import GroupDescription, Member, PartitionLag
from kafkalab.cluster import NodeState
from kafkalab.feeds.groups_feed import GroupsFrame, RecordsFrame
from kafkalab.feeds.workload import waiting_for
from kafkalab.ui.app import LabConsole
from kafkalab.ui.groups import GroupCard, member_text
from kafkalab.ui.modals import ConfirmScreen, TextScreen
from kafkalab.ui.nodepane import usage_lines
from kafkalab.ui.partitions import PartitionTable
from tests.screen_text import svg_rows
from tests.test_ui_app import console, running, settle, sync
from tests.test_ui_feed import TOPIC, FakeSource, node_info


@contextlib.asynccontextmanager
async def with_toasts(feed: FakeSource, size: tuple[int, int]) -> AsyncIterator[tuple[LabConsole, Pilot[None]]]:
    """The console on ``feed`` with its toasts laid out (Pilot leaves them out unless asked)."""
    app = console(feed)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        yield app, pilot


def toasts(app: LabConsole) -> list[str]:
    """The toasts on screen now, each as its title and message."""
    return [f"{n.title}: {n.message}" for n in app._notifications]


async def palette_entries(app: LabConsole) -> list[str]:
    """The palette's entries as it lists them before anything is typed."""
    await app.run_action("command_palette")
    for _ in range(100):
        await asyncio.sleep(0.05)
        if isinstance(app.screen, CommandPalette) and app.screen.query_one(CommandList).option_count:
            break
    await asyncio.sleep(0.3)  # discovery hits arrive in batches
    options = app.screen.query_one(CommandList).options
    return [str(option.prompt).split("\n")[0] for option in options]


@sync
async def test_the_palette_offers_one_quit_one_help_and_no_textual_extras() -> None:
    async with running(FakeSource()) as (app, _pilot):
        app.query_one(PartitionTable).focus()  # a focused table made Textual offer "Maximize"
        entries = await palette_entries(app)
        titles = [entry.strip() for entry in entries]
        assert titles.count("Quit") == 1, titles
        assert titles.count("Keys") == 1, titles
        assert "Maximize" not in titles and "Minimize" not in titles, titles
        assert not any("as soon as possible" in e or "focused widget" in e for e in entries), entries
        assert sum(t.startswith("Screenshot") for t in titles) == 1, titles


@sync
async def test_the_palettes_quit_asks_while_a_run_is_live() -> None:
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("g")
        await settle(pilot)
        assert app.run_frame.live
        await palette_entries(app)
        await pilot.press(*"quit")
        await asyncio.sleep(0.5)
        await pilot.press("enter")
        await pilot.pause()
        await asyncio.sleep(0.2)
        assert isinstance(app.screen, ConfirmScreen), app.screen
        assert "A run is live" in app.screen.question
        assert app.return_code is None and not feed.closed


@sync
async def test_ctrl_c_says_that_ctrl_q_quits() -> None:
    async with running(FakeSource()) as (app, pilot):
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert any("ctrl+q" in said for said in toasts(app)), toasts(app)
        assert app.return_code is None


@sync
async def test_a_node_key_with_nothing_to_do_says_why() -> None:
    """k on a killed broker, s on a stopped one, p on a down one: nothing sent, and a toast says why."""
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        await pilot.press("2", "k")
        await settle(pilot)
        app.clear_notifications()
        await pilot.press("k")
        await settle(pilot)
        assert feed.actions == [("broker-2", "kill")]
        assert any("broker-2 is already killed" in said for said in toasts(app)), toasts(app)
        await pilot.press("p")
        await settle(pilot)
        assert feed.actions == [("broker-2", "kill")]
        assert any("broker-2 is killed: nothing to pause" in said for said in toasts(app)), toasts(app)
        await pilot.press("3", "s")
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        assert feed.actions == [("broker-2", "kill"), ("broker-3", "stop")]
        assert any("broker-3 is already stopped" in said for said in toasts(app)), toasts(app)
        await pilot.press("1", "r")  # a running broker restarts: the key says so
        await settle(pilot)
        assert feed.actions[-1] == ("broker-1", "restart")
        assert "restart" in str(app.query_one("#topbar", Static).render())


@sync
async def test_toasts_fold_and_leave_the_partition_table_clear_at_100x30() -> None:
    """A kill, a restart and a kill: one toast per kind (the newest), none over the partition table."""
    feed = FakeSource()
    async with with_toasts(feed, (100, 30)) as (app, pilot):
        for keys in (("2", "k"), ("r",), ("3", "k")):
            await pilot.press(*keys)
            await settle(pilot)
        await pilot.pause()
        shown = list(app.screen.query(Toast))
        assert 1 <= len(shown) <= 2, toasts(app)  # a node's state, the leaders that moved
        assert any("broker-3 killed" in said for said in toasts(app)), toasts(app)
        assert not any("broker-2" in said for said in toasts(app)), toasts(app)  # older news, replaced
        assert any(said.startswith("leaders moved: test-topic/") for said in toasts(app)), toasts(app)
        table = app.query_one("#partitions").region
        for toast in shown:
            assert not toast.region.overlaps(table), (toast.region, table)


@sync
async def test_toasts_stay_readable_at_160x48() -> None:
    feed = FakeSource()
    async with with_toasts(feed, (160, 48)) as (app, pilot):
        await pilot.press("2", "k")
        await settle(pilot)
        await pilot.pause()
        shown = list(app.screen.query(Toast))
        assert shown and all(t.region.width >= 40 for t in shown), [t.region for t in shown]
        rows = svg_rows(app.export_screenshot(), 48, 160)
        assert any("broker-2 killed" in row for row in rows)


@sync
async def test_the_partition_header_keeps_its_clock_at_100_columns() -> None:
    """Under-replicated, under min ISR and offline partitions at once: the words give way, not the time."""
    feed = FakeSource()
    feed.partitions = [replace(p, isr=(1, 2)) if p.partition < 2 else
                       replace(p, isr=(1,)) if p.partition < 4 else replace(p, isr=(), leader=None)
                       for p in feed.partitions]
    async with running(feed, size=(100, 30)) as (app, _pilot):
        rows = svg_rows(app.export_screenshot(), 30, 100)
        line = app.query_one("#partitions-status", Static).region
        shown = " ".join(rows[line.y][line.x:line.right].split())
        assert shown.startswith("2 under-replicated 2 under min ISR 2 offline"), shown
        assert re.search(r"\d\d:\d\d:\d\d$", shown), shown


@sync
async def test_the_partition_header_reads_whole_where_it_fits() -> None:
    feed = FakeSource()
    feed.partitions = [replace(p, isr=(1, 2)) for p in feed.partitions]
    async with running(feed, size=(160, 48)) as (app, _pilot):
        shown = str(app.query_one("#partitions-status", Static).render())
        assert re.search(r"6 under-replicated +controller 1 +partitions 6 +updated \d\d:\d\d:\d\d", shown), shown


def test_the_groups_card_wraps_between_partitions_not_inside_one() -> None:
    member = Member("m-1", "consumer-1", "/127.0.0.1", tuple((TOPIC, p) for p in range(8)))
    text = member_text(GroupDescription("test-app", "Stable", members=(member,)))
    console = Console(width=34, color_system=None)
    with console.capture() as captured:
        console.print(text)
    lines = captured.get().splitlines()
    assert len(lines) > 1, lines
    for line in lines:
        for word in re.findall(r"[\w.:-]*topic[\w.:-]*|\S*-topic:\S*", line):
            assert re.fullmatch(rf"{TOPIC}:\d,?", word), lines


def test_a_wait_names_its_down_brokers_in_order() -> None:
    p = PartitionState(TOPIC, 0, leader=3, replicas=(3, 2, 1), isr=(3,), end_offset=10, min_isr=2)
    said = waiting_for(ClusterSnapshot(0.0, True, controller=3, brokers=(3,), partitions=(p,)), TOPIC)
    assert said.endswith("brokers 1, 2 down"), said


def test_a_down_node_shows_no_pid_or_uptime() -> None:
    """A killed broker's process is still reaped for a moment: its pid is known but nothing runs."""
    info = replace(node_info("broker-1", NodeState.KILLED, 1), pid=30603, uptime_s=0.0)
    shown = usage_lines(info).plain
    assert "pid" not in shown and "up 0s" not in shown, shown
    assert "no process" in shown
    running_info = node_info("broker-1", NodeState.RUNNING, 1)
    assert "pid 4001" in usage_lines(running_info).plain


async def close_palette(app: LabConsole, pilot: Pilot[None]) -> None:
    await pilot.press("escape")
    for _ in range(40):
        if not isinstance(app.screen, CommandPalette):
            return
        await asyncio.sleep(0.05)


@sync
async def test_the_palette_offers_samples_and_consumer_controls_only_when_they_can_act() -> None:
    """Before any run: no "Anomaly samples" (no report) and no "Consumers: crash/quit/wait" (no consumer), and
    their keys send nothing; a live run offers the controls, its report the samples."""
    controls = {"Consumers: crash", "Consumers: quit", "Consumers: wait"}
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        titles = {entry.strip() for entry in await palette_entries(app)}
        assert "Start run" in titles, titles  # the palette is listed, just without the two
        assert "Anomaly samples" not in titles and not controls & titles, titles
        await close_palette(app, pilot)
        await pilot.press("a", "C")
        await settle(pilot)
        assert feed.actions == [] and not isinstance(app.screen, TextScreen), (feed.actions, app.screen)
        assert not any("Consumers:" in row[1] or "samples" in row[1] for row in app.help_rows())

        await pilot.press("g")  # a live run with a consumer, no report yet
        await settle(pilot)
        titles = {entry.strip() for entry in await palette_entries(app)}
        assert controls <= titles and "Anomaly samples" not in titles, titles
        await close_palette(app, pilot)
        await pilot.press("C")
        await settle(pilot)
        assert feed.actions == [("consumers", "crash")]

        await pilot.press("x")  # stopped, analysed: the report's samples, no consumer to control
        await settle(pilot)
        titles = {entry.strip() for entry in await palette_entries(app)}
        assert "Anomaly samples" in titles and not controls & titles, titles
        await close_palette(app, pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, TextScreen), app.screen


MEMBER = Member("m-1", "consumer-1", "/127.0.0.1", tuple((TOPIC, p) for p in range(3)))


class OneGroup:
    """A groups feed with one group 933 records behind its commits (the nodes and run come from the fake feed)."""

    desc = GroupDescription("test-app", "Stable", "localhost:9093 (2)", "range", (MEMBER,),
                            tuple(PartitionLag(TOPIC, p, 1000 * p, 1000 * p + 311, MEMBER) for p in range(3)))

    def groups(self) -> GroupsFrame:
        return GroupsFrame((self.desc,), {"test-app": (900, 933)})

    def records(self) -> RecordsFrame:
        return RecordsFrame()

    def close(self) -> None: ...


@sync
async def test_the_groups_tab_calls_its_figure_commit_lag_apart_from_the_clients_unread() -> None:
    """The consumers pane says "unread" (from the consumer's position); the Groups tab's figure counts from the
    committed offset: "commit lag", whole on screen at 100x30 and 160x48, never a bare "lag"."""
    for width, height in ((100, 30), (160, 48)):
        app = LabConsole(FakeSource(), [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0,
                         groups_feed=OneGroup())  # type: ignore[arg-type]
        async with app.run_test(size=(width, height)) as pilot:
            await settle(pilot)
            await pilot.press("o")
            await settle(pilot)
            await asyncio.sleep(0.3)
            await pilot.pause()
            card = app.query_one(GroupCard)
            rows = svg_rows(app.export_screenshot(), height, width)
            shown = [rows[y][card.region.x:card.region.right] for y in range(card.region.y, card.region.bottom)]
            assert any("commit lag 933" in row for row in shown), (width, shown)
            heading = next(row for row in shown if "committed" in row and "log-end" in row)
            assert re.search(r"log-end +commit lag +member", heading), (width, heading)
            assert re.sub(r"commit lag", "", " ".join(shown)).count(" lag") == 0, (width, shown)
            assert "unread" in (card.query_one(".group-header", Static).tooltip or ""), "the tip names the other"
