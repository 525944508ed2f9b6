"""The console in KRaft mode, with Pilot on a fake feed: controller panes in place of ZooKeeper's, the
active one marked with its epoch, the node keys on controllers, an election announced; each pane's title naming
its key, role and id in the room it has."""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from textual.widgets import Button, Static

from kafkalab.cluster import NodeState
from kafkalab.cluster.quorum import QuorumReplica, QuorumState
from kafkalab.feeds.frames import NodesFrame
from kafkalab.ui.app import LabConsole
from kafkalab.ui.broker import BrokerPane
from kafkalab.ui.controllers import ControllerPane, MetadataPanes, QuorumPane
from kafkalab.ui.modals import HelpScreen
from kafkalab.ui.nodepane import TITLE_FRAME, NodePane, TitleLevel, fitting_level
from kafkalab.ui.zookeeper import ZooKeeperPane
from tests.screen_text import svg_rows
from tests.test_ui_app import SIZE, settle, sync
from tests.test_ui_feed import FakeSource, node_info

VOTERS = (101, 102, 103)


class FakeKraftSource(FakeSource):
    """The fake feed's brokers with three dedicated controllers; killing the active one elects the next live
    voter with the next epoch, as the quorum would."""

    def __init__(self) -> None:
        super().__init__()
        del self.states["zookeeper"]
        self.states = {**{f"controller-{i}": NodeState.RUNNING for i in (1, 2, 3)}, **self.states}
        self.leader, self.epoch = 101, 5

    def quorum(self) -> QuorumState:
        live = [v for v in VOTERS if self.states[f"controller-{v - 100}"] == NodeState.RUNNING]
        if self.leader not in live:
            self.leader, self.epoch = live[0], self.epoch + 1
        replicas = tuple(QuorumReplica(v, True, 900 if v in live else None, 0 if v in live else None,
                                       120 if v in live else None, 120 if v in live else None) for v in VOTERS)
        return QuorumState(time.time(), True, self.leader, self.epoch, 900, replicas)

    def nodes(self) -> NodesFrame:
        with self.lock:
            infos = tuple(node_info(n, s, int(n[-1]) if n.startswith("broker-") else None)
                          for n, s in self.states.items())
            return NodesFrame(infos, {}, quorum=self.quorum())

    def node_action(self, node: str, action: str) -> None:
        if node.startswith("controller-"):
            with self.lock:
                self.actions.append((node, action))
                self.states[node] = {"kill": NodeState.KILLED, "stop": NodeState.STOPPED}.get(action, NodeState.RUNNING)
            return
        super().node_action(node, action)


def facts(pane: ControllerPane) -> str:
    return str(pane.query_one(".facts-line", Static).render())


@sync
async def test_controller_panes_mark_the_active_one_and_show_the_election() -> None:
    feed = FakeKraftSource()
    app = LabConsole(feed, [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0,  # type: ignore[arg-type]
                     metadata=MetadataPanes(3))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.query(ZooKeeperPane)
        panes = {p.node_name: p for p in app.query(ControllerPane)}
        assert list(panes) == ["controller-1", "controller-2", "controller-3"]
        assert "ACTIVE" in facts(panes["controller-1"]) and "epoch 5" in facts(panes["controller-1"])
        assert "follower  lag 0" in facts(panes["controller-2"])
        assert [p.title_shown for p in panes.values()] == ["[!] ctl 101 ★", "[@] ctl 102", "[#] ctl 103"]

        await pilot.press("0")  # 0 picks the controllers in turn
        assert app.selected == "controller-1" and panes["controller-1"].has_class("-selected")
        await pilot.press("k")
        await settle(pilot)
        assert ("controller-1", "kill") in feed.actions
        assert panes["controller-1"].has_class("-killed") and not panes["controller-1"].active
        assert panes["controller-2"].active and "epoch 6" in facts(panes["controller-2"])
        shown = [n.message for n in app._notifications]
        assert any("election: active controller 101 -> 102 (epoch 6)" in m for m in shown), shown

        await pilot.press("0", "0")
        assert app.selected == "controller-3"
        await pilot.press("0", "r")  # back to controller-1: start it again
        await settle(pilot)
        assert app.selected == "controller-1" and ("controller-1", "start") in feed.actions
        assert "follower" in facts(panes["controller-1"])


@sync
async def test_six_node_panes_at_160_columns_keep_every_button_whole() -> None:
    """Three controllers and three brokers make panes of 26 columns at 160: one row of buttons cut Restart."""
    app = LabConsole(FakeKraftSource(), [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0,  # type: ignore[arg-type]
                     metadata=MetadataPanes(3))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.screen.has_class("-crowded")
        for pane in app.query(BrokerPane):
            row = pane.query_one(".buttons")
            for button in row.query(Button):
                label = str(button.label)
                assert button.region.width >= len(label) + 2, (pane.node_name, label, button.region)
                assert row.region.contains_region(button.region), (pane.node_name, label)
        for pane in app.query(ControllerPane):  # the quorum role flows onto two rows, no part cut
            line = pane.query_one(".facts-line", Static)
            rows = str(line.render()).split("\n")
            assert all(len(r) <= line.content_size.width for r in rows), rows
            assert len(str(pane.border_title)) + 4 <= pane.region.width
        active = next(p for p in app.query(ControllerPane) if p.active)
        assert "ACTIVE" in facts(active) and "epoch 5" in facts(active) and re.search(r"hw \d+", facts(active))
    small = LabConsole(FakeKraftSource(), [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0,  # type: ignore[arg-type]
                       metadata=MetadataPanes(3))
    async with small.run_test(size=(100, 30)) as pilot:  # six panes of 16: no row holds "Restart"
        await settle(pilot)
        assert small.screen.has_class("-no-buttons")
        assert all(not pane.query_one(".buttons").display for pane in small.query(BrokerPane))
        await pilot.press("1", "k")  # the keys still act
        await settle(pilot)
        assert small.node_states["broker-1"] == NodeState.KILLED
    four = LabConsole(FakeSource(), [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0)  # type: ignore[arg-type]
    async with four.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert not four.screen.has_class("-crowded")  # four panes of 40: one row, as before
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert not four.screen.has_class("-no-buttons")  # four panes of 25: two rows, as before


@sync
async def test_kraft_names_the_active_controller_not_the_broker_the_metadata_picks() -> None:
    """A KRaft broker's metadata names a random broker as the controller: no broker is marked for it, and the
    partition pane names the quorum's active controller, before and after an election."""
    feed = FakeKraftSource()
    app = LabConsole(feed, [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0,  # type: ignore[arg-type]
                     metadata=MetadataPanes(3))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.snapshot is not None and app.snapshot.controller in (1, 2, 3)  # what the metadata says
        assert not [p.node_name for p in app.query(BrokerPane) if p.controller]

        def status() -> str:
            return str(app.query_one("#partitions-status", Static).render())

        assert "active controller 101" in status()
        await pilot.press("0", "k")
        await settle(pilot)
        await settle(pilot)
        assert "active controller 102" in status()


def test_combined_voters_have_no_pane_of_their_own_and_0_picks_their_brokers() -> None:
    combined = MetadataPanes(0, voters=3)
    assert [type(p) for p in combined.compose()] == [QuorumPane], "one quorum pane, no controller pane"
    assert [combined.next_name() for _ in range(4)] == ["broker-1", "broker-2", "broker-3", "broker-1"]
    assert MetadataPanes().next_name() == "zookeeper"


class FakeCombinedSource(FakeSource):
    """The fake feed's brokers 1..3 host the voters (combined mode): killing the active voter's broker elects
    the next live one with the next epoch."""

    def __init__(self) -> None:
        super().__init__()
        del self.states["zookeeper"]
        self.leader, self.epoch = 1, 3

    def quorum(self) -> QuorumState:
        live = [b for b in (1, 2, 3) if self.states[f"broker-{b}"] == NodeState.RUNNING]
        if self.leader not in live:
            self.leader, self.epoch = live[0], self.epoch + 1
        replicas = tuple(QuorumReplica(b, True, 500 if b in live else None, 2 if b in live else None,
                                       300 if b in live else None, 300 if b in live else None) for b in (1, 2, 3))
        return QuorumState(time.time(), True, self.leader, self.epoch, 500, replicas)

    def nodes(self) -> NodesFrame:
        with self.lock:
            infos = tuple(node_info(n, s, int(n[-1])) for n, s in self.states.items())
            return NodesFrame(infos, {}, quorum=self.quorum())


def voter_line(app: LabConsole, broker: int) -> str:
    """A voter's line, its two rows (a narrow pane breaks between parts) joined as one."""
    return str(app.query_one(f"#voter-{broker}", Static).render()).replace("\n", "  ")


@sync
async def test_combined_voters_show_their_quorum_role_in_a_quorum_pane() -> None:
    feed = FakeCombinedSource()
    app = LabConsole(feed, [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0,  # type: ignore[arg-type]
                     metadata=MetadataPanes(0, voters=3))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.query(ZooKeeperPane) and not app.query(ControllerPane)
        pane = app.query_one(QuorumPane)
        assert pane.title_shown == "[0] quorum: brokers 1..3"  # 30 columns: the full title is 35
        assert "broker-1   ACTIVE   epoch 3  hw 500" in voter_line(app, 1)
        assert "broker-2  follower  lag 2  fetched 0.3s ago" in voter_line(app, 2)

        await pilot.press("0")  # 0 picks the voters' brokers
        assert app.selected == "broker-1"
        await pilot.press("k")
        await settle(pilot)
        assert ("broker-1", "kill") in feed.actions
        assert pane.active == 2 and "ACTIVE   epoch 4" in voter_line(app, 2)
        assert "broker-1  follower  not fetching" in voter_line(app, 1)
        shown = [n.message for n in app._notifications]
        assert any("election: active controller 1 -> 2 (epoch 4)" in m for m in shown), shown


def test_a_quorum_without_an_answer_says_why_in_words_not_java_package_names() -> None:
    """While the active controller was killed, the panes read `(org.apache.kafka.common.` and no more."""
    from kafkalab.cluster.quorum import parse_answer
    from kafkalab.ui.controllers import quorum_role

    timeout = parse_answer({"ok": False, "error": "org.apache.kafka.common.errors.TimeoutException: Call(callName="
                                                  "describeMetadataQuorum, deadlineMs=1) timed out"}, 0.0)
    assert " ".join(t.plain for t in quorum_role(timeout, 101)) == (
        "quorum: unknown (no answer in time: an election under way?)")
    other = parse_answer({"ok": False, "error": "org.apache.kafka.common.errors.NotLeaderOrFollowerException: "
                                                "for partition __cluster_metadata-0"}, 0.0)
    assert other.error == "NotLeaderOrFollowerException: for partition __cluster_metadata-0"


def kraft_console(feed: FakeSource | None = None) -> LabConsole:
    return LabConsole(feed or FakeKraftSource(), [1, 2, 3], boot=False, poll_s=0.15,  # type: ignore[arg-type]
                      clock=lambda: 0.0, metadata=MetadataPanes(3))


def top_border_titles(app: LabConsole, width: int, height: int) -> list[str]:
    """The node panes' titles as the terminal shows them: the words between `╭─ ` and ` ─` on the row of
    their top borders."""
    row = svg_rows(app.export_screenshot(), height, width)[1]
    return re.findall(r"╭─ (.+?) ─", row)


KEY_NAMES = {"!": "exclamation_mark", "@": "at", "#": "number_sign"}


@pytest.mark.parametrize(("size", "wanted"), [
    ((100, 30), ["! ctl 101★", "@ ctl 102", "# ctl 103", "1 broker", "2 broker", "3 broker"]),
    ((160, 48), ["[!] controller 101 ★", "[@] controller 102", "[#] controller 103",
                 "[1] broker-1", "[2] broker-2", "[3] broker-3"]),
])
def test_each_pane_names_its_key_its_role_and_id_whole_at_100x30_and_160x48(
        size: tuple[int, int], wanted: list[str]) -> None:
    """At 100x30 all three controller panes read `[0] contr…` (one key for three) and brokers `[1] broke…`:
    each pane now has its own key and its title says it, uncut, with the node's role and id; each key picks
    its pane and acts on it; the `?` screen lists the controllers' keys."""

    async def scenario() -> None:
        feed = FakeKraftSource()
        app = kraft_console(feed)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            assert top_border_titles(app, *size) == wanted
            assert "pick a node: 1..3, !@#" in str(app.query_one("#topbar", Static).render())
            assert len(set(wanted)) == 6
            for pane in app.query(NodePane):
                assert len(pane.title_shown) + TITLE_FRAME <= pane.outer_size.width, (pane.title_shown, pane.region)
            for pane in app.query(ControllerPane):
                assert str(pane.node_id) in pane.title_shown and pane.key in pane.title_shown
                await pilot.press(KEY_NAMES[pane.key])
                assert app.selected == pane.node_name and pane.has_class("-selected")
                assert sum(p.has_class("-selected") for p in app.query(NodePane)) == 1
            await pilot.press("at", "k")  # the key in controller 102's title acts on controller 102
            await settle(pilot)
            assert feed.actions == [("controller-2", "kill")]
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            rows = {row[2]: row[:2] for row in app.screen.rows}
            assert [rows[f"broker.select.{n}"] for n in VOTERS] == [
                ("!", "Pick controller 101"), ("@", "Pick controller 102"), ("#", "Pick controller 103")]

    asyncio.run(scenario())


@sync
async def test_the_star_moves_with_the_active_controller_and_the_row_keeps_one_form() -> None:
    """An election moves ★ from 101's title to 102's; at 100 columns the row stays at one form (the first
    pane, a column narrower, does not drop to `! c101★` while the others read `@ ctl 102`)."""
    feed = FakeKraftSource()
    app = kraft_console(feed)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("exclamation_mark", "k")
        await settle(pilot)
        await settle(pilot)
        assert [p.title_shown for p in app.query(ControllerPane)] == ["! ctl 101", "@ ctl 102★", "# ctl 103"]
        await pilot.resize_terminal(120, 36)
        await settle(pilot)
        assert [p.title_shown for p in app.query(NodePane)] == [
            "[!] ctl 101", "[@] ctl 102 ★", "[#] ctl 103", "[1] broker-1", "[2] broker-2", "[3] broker-3"]


@sync
async def test_zookeeper_mode_keeps_its_titles_and_offers_no_controller_key() -> None:
    feed = FakeSource()
    app = LabConsole(feed, [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0)  # type: ignore[arg-type]
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert top_border_titles(app, 100, 30) == ["[0] zookeeper", "[1] broker-1 ★", "[2] broker-2",
                                                   "[3] broker-3"]
        await pilot.press("exclamation_mark")
        assert app.selected is None
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2] for row in app.screen.rows}
        assert "broker.select.0" in ids and not {f"broker.select.{n}" for n in VOTERS} & ids


def test_the_longest_level_every_pane_of_the_row_holds() -> None:
    forms = ("[1] broker-1", "[1] broker-1", "1 broker", "1 b")
    ctl = ("[!] controller 101 ★", "[!] ctl 101 ★", "! ctl 101★", "! c101★")
    assert fitting_level([(forms, 26), (ctl, 26)]) == TitleLevel.FULL
    assert fitting_level([(forms, 20), (ctl, 19)]) == TitleLevel.SHORT
    assert fitting_level([(forms, 17), (ctl, 16)]) == TitleLevel.TIGHT
    assert fitting_level([(forms, 17), (ctl, 12)]) == TitleLevel.TINY
    assert fitting_level([(forms, 17), (ctl, 3)]) == TitleLevel.TINY  # none fits: the tiniest, Textual cuts it


class NotStartedKraftSource(FakeKraftSource):
    """A lab's KRaft cluster before its first run: no node yet, no quorum to ask."""

    def nodes(self) -> NodesFrame:
        return NodesFrame((), {}, quorum=None)


@sync
async def test_controller_panes_before_the_cluster_exists_say_not_started_as_the_brokers_do() -> None:
    """They read `quorum: unknown (not asked yet)` beside brokers' `not started yet`, as if something failed."""
    app = kraft_console(NotStartedKraftSource())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert {facts(p) for p in app.query(ControllerPane)} == {"not started yet"}
