"""Scrubbing a replay (issue 33, item 8): wherever the arrows land, the console shows what the recording holds
for that instant (nodes, leadership counts, partition table, consumers, producer, chart), a jump raises no
toast, Results names the replayed run, and ctrl+q quits a replay without asking to stop a live run.

The recordings are real runs (tests/recorded, see tests/test_replay.py); no cluster is started."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual import on
from textual.notifications import Notify
from textual.pilot import Pilot
from textual.widgets import Static, TabbedContent

from kafkalab.cluster import NodeState
from kafkalab.feeds.frames import CLUSTER_STARTING, Marker, MarkerKind
from kafkalab.feeds.replay_source import ReplayClock, ReplaySource, event_stops
from kafkalab.labs.recording import RECORDING, RecordedRun
from kafkalab.ui import replay_app
from kafkalab.ui.bindings import SCRUB_S
from kafkalab.ui.broker import BrokerPane
from kafkalab.ui.chart import ThroughputChart
from kafkalab.ui.consumers import ConsumersTable
from kafkalab.ui.line import Line
from kafkalab.ui.modals import ConfirmScreen, HelpScreen
from kafkalab.ui.partitions import PartitionTable, clock_time, row_key, row_of
from kafkalab.ui.replay_app import ReplayConsole, minutes, stamped, unless_left
from tests.test_ui_app import sync

RUN_DIR = Path(__file__).parent / "recorded" / "leader-failover"
SIZE = (160, 48)
POLL_S = 0.2  # faster, the Pilot waits long for an idle screen on a busy machine
SETTLE_S = 1.0  # five polls to catch up with a jump, however it is made


def recorded_screen(run: RecordedRun, t: float) -> dict[str, object]:
    """What the console must show at second ``t`` of the recorded run."""
    nodes = {i.name: i.state for i in run.nodes(t)}
    snapshot = run.snapshot(t)
    down = frozenset(i.broker_id for i in run.nodes(t) if i.broker_id is not None
                     and i.state in (NodeState.KILLED, NodeState.STOPPED, NodeState.FAILED))
    counts = snapshot.leader_counts() if snapshot is not None else {}
    producer, consumers = run.clients(t)
    return {
        "nodes": nodes,
        "roles": {b: (f"leads {counts.get(b, (0, 0))[0]} · follows {counts.get(b, (0, 0))[1]}"
                      if snapshot is not None and b in snapshot.brokers else "no leadership")
                  for b in (1, 2, 3)},
        "table": {row_key(p): {col: value for col, value in row_of(p, down).items() if col != "end"}
                  for p in snapshot.partitions} if snapshot is not None else {},
        "consumers": sorted(c.name for c in consumers),
        "acked": producer.acked if producer is not None else None,
        "chart": run.throughput(t),
    }


def screen_of(app: ReplayConsole) -> dict[str, object]:
    """The same, read off the console's widgets."""
    table = app.query_one(PartitionTable)
    roles = {}
    for pane in app.query(BrokerPane):
        facts = str(pane.query_one(".facts-line", Line).render())
        roles[pane.broker_id] = facts.split(" ★")[0].strip() if "leads" in facts else "no leadership"
    return {
        "nodes": {name: pane.info.state for name, pane in app.node_panes.items() if pane.info is not None},
        "roles": roles,
        "table": {str(key.value): {col: table.get_cell(key, col).plain.strip() for col, _ in table.shown}
                  for key in table.rows},
        "consumers": sorted(app.query_one(ConsumersTable).shown),
        "acked": app.run_frame.producer.acked if app.run_frame.producer is not None else None,
        "chart": app.query_one(ThroughputChart).series,
    }


def status_line(app: ReplayConsole) -> str:
    return str(app.query_one("#partitions-status", Line).render())


async def scrub(app: ReplayConsole, pilot: Pilot[None], key: str, times: int) -> None:
    """``times`` presses of an arrow: the last three as keys, in quick succession as a person scrubs, the
    rest as one jump (a press takes a second on a busy machine)."""
    pressed = min(times, 3)
    if times > pressed:
        app.action_seek((times - pressed) * (SCRUB_S if key == "right" else -SCRUB_S))
    for _ in range(pressed):
        await pilot.press(key)
    await pilot.pause(SETTLE_S)


@sync
async def test_wherever_the_arrows_land_the_screen_is_the_recorded_instant() -> None:
    """To the end (every broker killed by the run's teardown, the report in), back to the cluster's start
    (the stranger's screen: brokers "not started" yet "leads 3 · follows 1", an UNREACHABLE table of a topic not
    created yet), forward into the failover: each time, the screen is what the recording holds then."""
    source = ReplaySource(RUN_DIR)
    run = source.recorded
    app = ReplayConsole(source, poll_s=POLL_S)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await scrub(app, pilot, "right", 75)  # 350 s: to the end, past it
        assert source.clock.at_end and app.run_frame.report is not None
        assert screen_of(app) == recorded_screen(run, source.clock.now())
        landed = []
        for key, times in (("left", 66), ("right", 17), ("right", 1), ("right", 2), ("left", 4)):
            await scrub(app, pilot, key, times)
            t = source.clock.now()
            landed.append(round(t, 1))
            assert screen_of(app) == recorded_screen(run, t), f"at {t:.1f} s"
            if run.snapshot(t) is None:  # before the cluster answered: it is starting, not unreachable
                assert "UNREACHABLE" not in status_line(app) and "STARTING" in status_line(app)
        # the stops: the brokers starting (no snapshot yet); just before the kill of broker 2 at 46.5 s; after
        # it (its leaderships lost, none elected yet); after the election; back before the kill
        assert landed[0] < -30 and 40 < landed[1] < 46.4 < landed[2] < 56 < landed[3] < 61.9, landed
        assert 30 < landed[4] < 46.4, landed


class ToldConsole(ReplayConsole):
    """Keeps every toast posted (a toast goes after 4 s; on a busy machine a few key presses take longer)."""

    CSS_PATH = Path(replay_app.__file__).parent / "app.tcss"  # a relative one is read beside this test
    told: list[str]

    @on(Notify)
    def keep_toast(self, event: Notify) -> None:
        self.told.append(f"{event.notification.title} {event.notification.message}".strip())


@sync
async def test_a_jump_raises_no_toast_and_playing_on_toasts_only_what_happened_then() -> None:
    """Back from the end to 100 s, then playing: the stranger saw "leader of test-topic/0 moved 3 -> 2" and
    "broker-1 running", changes between the end and 100 s, not in the seconds played. Played through the
    kill at 46.5 s, the toasts for it do come."""
    source = ReplaySource(RUN_DIR)
    app = ToldConsole(source, poll_s=POLL_S)
    app.told = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await scrub(app, pilot, "right", 75)
        app.told.clear()
        await scrub(app, pilot, "left", 38)  # 290.8 - 190: 100.8 s, nothing changes until 115 s
        assert 95 < source.clock.now() < 105
        assert not app.told, "a jump is no change"
        await pilot.press("space")  # play a second or two
        await pilot.pause(1.0)
        await pilot.press("space")
        await pilot.pause(SETTLE_S)
        assert source.clock.now() < 115 and not app.told, "nothing changed in those seconds of the run"
        await scrub(app, pilot, "left", round((source.clock.now() - 40) / SCRUB_S))  # about 40 s, before the kill
        assert 35 < source.clock.now() < 45
        assert not app.told
        await pilot.press("4", "space")  # play through the kill at 4x
        for _ in range(200):
            await pilot.pause(0.05)
            if source.clock.now() > 60:
                break
        assert any("broker-2 killed" in n for n in app.told) and any("leaders moved" in n for n in app.told), app.told


@sync
async def test_results_before_the_replayed_runs_end_names_that_run() -> None:
    """Scrubbed back from the report, Results said "the last run's verdict" of the very run being replayed."""
    source = ReplaySource(RUN_DIR)
    app = ReplayConsole(source, poll_s=POLL_S)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await scrub(app, pilot, "right", 75)
        await scrub(app, pilot, "left", 20)  # 190 s: analysing, before the verdict was in
        text = " ".join(str(app.query_one("#verdict", Static).render()).split())
        assert "last run" not in text, text
        assert "the replayed run's verdict" in text and RUN_DIR.name in text, text
        assert "a run is under way" not in text, text  # nothing runs: the replay has not reached the end


@sync
async def test_ctrl_q_quits_a_replay_without_asking_to_stop_a_live_run() -> None:
    source = ReplaySource(RUN_DIR)
    app = ReplayConsole(source, poll_s=POLL_S)
    async with app.run_test(size=SIZE) as pilot:
        await scrub(app, pilot, "right", 20)  # mid-run: the recorded phase is live
        assert app.run_frame.live
        await pilot.press("ctrl+q")
        await pilot.pause(0.2)
        assert not any(isinstance(s, ConfirmScreen) for s in app.screen_stack)
        assert app.quitting


@sync
async def test_a_modal_pauses_the_replay_until_it_is_closed() -> None:
    """The quit question (and the help, the palette) came up while the replay played on behind it, its toasts
    over the buttons."""
    source = ReplaySource(RUN_DIR)
    app = ReplayConsole(source, poll_s=POLL_S)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        held = source.clock.now()
        await pilot.pause(0.5)
        assert source.clock.now() == held, "the replay played on behind the help"
        await pilot.press("escape")
        await pilot.pause(0.5)
        assert not isinstance(app.screen, HelpScreen)
        assert source.clock.now() > held + 0.3, "closed, the replay plays on"
        await pilot.press("space", "question_mark", "escape")  # paused by hand: still paused after the modal
        await pilot.pause(0.3)
        assert source.clock.paused
        at = source.clock.now()
        await pilot.pause(0.3)
        assert source.clock.now() == at


def test_a_frame_read_before_a_jump_is_not_shown_after_it() -> None:
    """A poll under way when the arrow is pressed brings the second left: shown after the jump it stood for the
    new second, and the next frame toasted the difference."""
    clock = ReplayClock(0.0, 100.0, wall=lambda: 0.0)
    shown: list[str] = []
    fetch = stamped(lambda: f"frame at {clock.now():g}", clock)
    apply = unless_left(shown.append, clock)
    before = fetch()
    clock.seek(50)
    apply(before)
    apply(fetch())
    assert shown == ["frame at 50"]


def test_the_replay_says_its_cluster_was_starting_before_its_first_snapshot() -> None:
    """Not "UNREACHABLE" (a failure), and every node is in the frame, those not named yet as not started."""
    source = ReplaySource(RUN_DIR)
    snapshot = source.snapshot(source.clock.start)
    assert not snapshot.reachable and snapshot.error == CLUSTER_STARTING
    nodes = source.nodes(source.clock.start)
    assert [i.name for i in nodes.infos] == list(source.node_names)
    assert all(i.state == NodeState.STOPPED and i.reason == "not started" for i in nodes.infos)


def unanswered_run_dir(root: Path) -> Path:
    """Two brokers; the cluster answers at 1 s (broker 1 leads t/0), not at 5 s, again at 9 s (broker 2 leads)."""
    run_dir = root / "unanswered"
    run_dir.mkdir()
    started = 1_700_000_000.0
    (run_dir / "timeline.json").write_text(json.dumps({"lab": "unanswered", "started_at": started, "events": []}))
    nodes = {"kind": "nodes", "nodes": [[f"broker-{n}", "broker", n, 9000 + n, "running", "", 100 + n, 0]
                                        for n in (1, 2)]}

    def snapshot(leader: int | None) -> dict[str, object]:
        return {"kind": "snapshot", "reachable": leader is not None, "controller": leader,
                "brokers": [1, 2] if leader else [],
                "partitions": [["t", 0, leader, [1, 2], [1, 2], 1]] if leader else []}

    lines = [{"ts": started, "kind": "phase", "phase": "running"}, {"ts": started, **nodes},
             {"ts": started + 1, **snapshot(1)}, {"ts": started + 5, **snapshot(None)},
             {"ts": started + 9, **snapshot(2)}, {"ts": started + 12, "kind": "phase", "phase": "done"}]
    (run_dir / RECORDING).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run_dir


def test_scrubbed_into_a_silence_the_table_keeps_what_the_cluster_last_answered(tmp_path: Path) -> None:
    """While the cluster did not answer, the console showed its last answer greyed, 'UNREACHABLE since' when it
    stopped answering; scrubbed back into that from a later answer, it showed the later one."""
    asyncio.run(_scrub_into_a_silence(ReplaySource(unanswered_run_dir(tmp_path))))


async def _scrub_into_a_silence(source: ReplaySource) -> None:
    app = ReplayConsole(source, poll_s=POLL_S)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        app.action_seek(20)  # to the end: broker 2 leads
        await pilot.pause(SETTLE_S)
        assert screen_of(app)["table"]["t/0"]["leader"] == "2"  # type: ignore[index]
        app.action_seek(-5)  # 7 s: no answer since 5 s
        await pilot.pause(SETTLE_S)
        table = app.query_one(PartitionTable)
        assert screen_of(app)["table"]["t/0"]["leader"] == "1" and table.stale  # type: ignore[index]
        assert f"UNREACHABLE  brokers unreachable since {clock_time(1_700_000_005.0)}" in status_line(app)
        assert screen_of(app)["roles"] == {1: "leads 1 · follows 0", 2: "leads 0 · follows 1"}


@sync
async def test_the_replays_place_stays_in_the_top_bar_and_a_jump_back_leaves_the_report() -> None:
    """While the recorded producer waited for a leader, its wait took the top bar's news and the replay's place
    went; scrubbed back from the report, Results (which the report brought up, at 100 columns over the whole
    row) stayed over the table. The Groups and Records tabs ask a cluster a replay has not."""
    source = ReplaySource(RUN_DIR)
    app = ReplayConsole(source, poll_s=POLL_S)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("space")
        await scrub(app, pilot, "right", 75)
        side = app.query_one("#side", TabbedContent)
        assert side.active == "tab-results"
        await scrub(app, pilot, "left", 46)  # 60.8 s: broker 2 killed, no leader for three partitions
        topbar = str(app.query_one("#topbar", Line).render())
        assert app.waiting and "waiting for a leader" in topbar and "replay paused · 1:00 of 4:50" in topbar, topbar
        assert "g runs again" not in topbar
        assert side.active == "tab-run" and app.query_one(PartitionTable).display
        assert not app.check_action("show_tab", ("records",)) and not app.check_action("show_tab", ("groups",))


def test_a_runs_stops_are_its_events_grouped_and_its_verdict() -> None:
    """A kill and the elections it causes are one stop; a stop lands just after its first event, when the
    recording has what it changed; the verdict is the last (never past the recording's end)."""
    marks = [Marker(10.0, "kill broker-2", MarkerKind.FAULT), Marker(10.4, "t/0 leader 2 -> 3", MarkerKind.LEADER),
             Marker(30.0, "isolate broker-1", MarkerKind.NET), Marker(31.5, "t/0 leader 3 -> 1", MarkerKind.LEADER)]
    stops = event_stops(marks, verdict_at=50.0, end=50.2)
    assert [(s.at, [m.label for m in s.markers]) for s in stops] == [
        (10.5, ["kill broker-2", "t/0 leader 2 -> 3"]), (30.5, ["isolate broker-1"]), (32.0, ["t/0 leader 3 -> 1"]),
        (50.2, [])]


@sync
async def test_the_keys_jump_to_the_start_the_end_and_from_event_to_event() -> None:
    """Scrubbing moved 5 s a press: the failover at 56 s was eleven presses away. Home and End go to the
    recording's ends, PgDn and PgUp from event to event (the leader changes, the verdict), the top bar saying
    which, and each time the screen is the recorded instant."""
    source = ReplaySource(RUN_DIR)
    run = source.recorded
    app = ToldConsole(source, poll_s=POLL_S)
    app.told = []
    clock = source.clock

    def topbar() -> str:
        return str(app.query_one("#topbar", Line).render())

    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space", "end")
        await pilot.pause(SETTLE_S)
        assert clock.now() == clock.end and app.run_frame.report is not None
        await pilot.press("home")
        await pilot.pause(SETTLE_S)
        assert clock.now() == clock.start and "STARTING" in status_line(app)
        assert f"{minutes(-clock.start)} before the run" in topbar(), topbar()
        for n, stop in enumerate(source.stops, start=1):
            await pilot.press("pagedown")
            await pilot.pause(SETTLE_S)
            assert clock.now() == stop.at
            assert screen_of(app) == recorded_screen(run, stop.at), f"at {stop.at:.1f} s"
            assert f"event {n} of {len(source.stops)}" in topbar(), topbar()
            if stop.markers:  # the place is on the run's clock, the clock of the event's own @Ns beside it
                assert f"· {minutes(stop.at)} of {minutes(clock.end)}" in topbar(), topbar()
        assert len(source.stops) >= 3 and app.run_frame.report is not None  # the last stop: the verdict
        await pilot.press("pagedown")
        await pilot.pause(0.2)
        assert clock.now() == source.stops[-1].at and any("no later event" in t for t in app.told), app.told
        for stop in reversed(source.stops[:-1]):
            await pilot.press("pageup")
            assert clock.now() == stop.at
        await pilot.press("pageup")
        await pilot.pause(0.2)
        assert clock.now() == source.stops[0].at and any("no earlier event" in t for t in app.told), app.told
        await pilot.press("question_mark")
        await pilot.pause()
        ids = {row[2] for row in app.screen.rows}  # type: ignore[attr-defined]
        assert {"replay.start", "replay.end", "replay.previous_event", "replay.next_event"} <= ids
