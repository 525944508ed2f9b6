"""`kafkalab replay`: a run recorded by a real `kafkalab run leader-failover --headless --free-ports --seed 7`
(tests/recorded/leader-failover: its small files only, lab.toml, timeline.json, recording.jsonl, result.json,
report.json; its clients lines re-encoded as changes when the recorder began to write them so), replayed in
the console with Pilot: the table's leaders move as the live run's timeline says, the keys drive the clock."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Static

from kafkalab.clients.stats import ClientState
from kafkalab.cluster.quorum import QuorumReplica, QuorumState
from kafkalab.errors import KafkalabError
from kafkalab.feeds.replay_source import ReplayClock, ReplaySource
from kafkalab.labs.recording import RECORDING, RecordedRun, _quorum_shape, quorum_line, quorum_of, read_recording
from kafkalab.ui.bindings import load_keymap
from kafkalab.ui.controllers import ControllerPane, MetadataPanes, QuorumPane
from kafkalab.ui.line import Line
from kafkalab.ui.modals import HelpScreen
from kafkalab.ui.partitions import PartitionTable
from kafkalab.ui.replay_app import ReplayConsole
from kafkalab.ui.zookeeper import ZooKeeperPane
from tests.test_ui_app import sync

RUN_DIR = Path(__file__).parent / "recorded" / "leader-failover"
SIZE = (160, 48)
LOOK_S = 0.02  # how often the test reads the table (the replay polls every 0.05 s here)


def timeline_changes(run_dir: Path) -> list[tuple[float, str, int]]:
    """(t, partition, new leader) of the live run's leader changes on the lab's topics, in time order."""
    events = json.loads((run_dir / "timeline.json").read_text())["events"]
    return [(e["t"], f"{e['topic']}/{e['partition']}", e["leader"]) for e in events
            if e["kind"] == "leader-change" and not e["topic"].startswith("__") and e["leader"] is not None]


def leaders_on_screen(app: ReplayConsole) -> dict[str, str]:
    table = app.query_one(PartitionTable)
    return {str(key.value): table.get_cell(key, "leader").plain.strip() for key in table.rows}


@sync
async def test_replay_at_4x_shows_the_live_runs_leader_changes_in_order() -> None:
    expected = timeline_changes(RUN_DIR)
    assert len(expected) >= 2, "the recorded run must hold leader changes to compare"
    app = ReplayConsole(ReplaySource(RUN_DIR, speed=4.0), exit_at_end=False, poll_s=0.05)
    seen: list[tuple[str, int]] = []  # (partition, new leader) in the order the screen showed them
    async with app.run_test(size=SIZE) as pilot:
        # 4x over the failover only, then a jump to the report (the whole 5:50 run at 4x took 90 s of the suite);
        # from 30 s before the first election, so the screen shows each leader before the kill (a leader shown
        # killed is no election yet); the clock counts the run's seconds, as the timeline's t does
        clock = app.replay.clock
        app.action_seek(expected[0][0] - 30 - clock.now())
        shown: dict[str, str] = {}
        for _ in range(int(120 / LOOK_S)):
            if clock.now() > expected[-1][0] + 5:
                break
            now = leaders_on_screen(app)
            for key, leader in now.items():
                if leader == "none" or leader.endswith("✗"):  # no leader, or one known down: no election yet
                    continue
                if key in shown and shown[key] != leader:
                    seen.append((key, int(leader)))
                shown[key] = leader
            await asyncio.sleep(LOOK_S)
        app.action_seek(clock.end - clock.now())
        for _ in range(int(60 / LOOK_S)):
            if app.run_frame.report is not None:
                break
            await asyncio.sleep(LOOK_S)
        await pilot.pause()
        verdict = str(app.query_one("#verdict", Static).render())
        assert json.loads((RUN_DIR / "report.json").read_text())["verdict"][:40] in " ".join(verdict.split())
    wanted = screen_changes(expected, _first_leaders(RUN_DIR))
    for key in {k for _t, k, _lead in wanted}:
        assert [lead for k, lead in seen if k == key] == [lead for _t, k, lead in wanted if k == key], key
    # across partitions: a change the live run made clearly later (> 1 s) is shown later
    shown_at = nth_positions(seen)
    order = [(t, shown_at[(key, n)]) for (t, key, _lead), n in zip(wanted, occurrence(k for _t, k, _l in wanted),
                                                                    strict=True)]
    assert all(i1 < i2 for t1, i1 in order for t2, i2 in order if t2 - t1 > 1.0), order


def screen_changes(changes: list[tuple[float, str, int]], first: dict[str, int]) -> list[tuple[float, str, int]]:
    """The changes a table of leaders shows: a partition back to the leader it had before going leaderless
    ("none") has not changed on screen."""
    current = dict(first)
    out = []
    for t, key, leader in changes:
        if current.get(key) != leader:
            out.append((t, key, leader))
            current[key] = leader
    return out


def occurrence(keys: Iterable[str]) -> list[int]:
    """1 for a key's first appearance, 2 for its second ..."""
    counts: dict[str, int] = {}
    out = []
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
        out.append(counts[key])
    return out


def nth_positions(seen: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    return {(key, n): i for i, ((key, _lead), n) in enumerate(zip(seen, occurrence(k for k, _ in seen), strict=True))}


def _first_leaders(run_dir: Path) -> dict[str, int]:
    first = next(line for line in read_recording(run_dir) if line["kind"] == "snapshot")
    return {f"{topic}/{partition}": leader for topic, partition, leader, *_ in first["partitions"]}


@sync
async def test_keys_set_speed_pause_and_scrub() -> None:
    source = ReplaySource(RUN_DIR, speed=1.0)
    app = ReplayConsole(source, poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        assert source.clock.paused
        at = source.clock.now()
        await pilot.press("right", "right")
        assert abs(source.clock.now() - (at + 10.0)) < 0.01
        await pilot.press("left")
        assert abs(source.clock.now() - (at + 5.0)) < 0.01
        await pilot.press("4")
        assert source.clock.speed == 4.0 and source.clock.paused
        await pilot.pause()
        assert "replay paused" in str(app.query_one("#topbar", Static).render())
        await pilot.press("k")  # a live console's kill: not offered in a replay
        await pilot.pause()
        assert app.selected is None
        topbar = str(app.query_one("#topbar", Static).render())
        assert "pick a node" not in topbar  # the digits set the speed here
        # nothing to press that cannot act, no column of '?': the run recorded no end offsets
        assert not any(b.display for b in app.query(".buttons"))
        assert [str(c.label).strip() for c in app.query_one(PartitionTable).columns.values()] == [
            "partition", "leader", "replicas", "ISR", "status"]
        # nor a usage it never recorded: no "cpu 0% · mem 0M" under a running node
        usage = [str(line.render()) for line in app.query(".usage-line")]
        assert any("pid " in u for u in usage) and all("cpu, mem not recorded" in u for u in usage if "pid " in u)


def test_a_keymap_moves_the_replays_keys_and_the_help_and_palette_say_the_new_ones(tmp_path: Path) -> None:
    """keymap.toml refused the replay's ids as unknown, so its keys could not be changed."""
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('[keymap]\n"replay.pause" = "z"\n"replay.back" = "b"\n')
    app = ReplayConsole(ReplaySource(RUN_DIR), poll_s=0.05, keymap=load_keymap(keymap))
    clock = app.replay.clock

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("space")  # the old key: nothing
            assert not clock.paused
            await pilot.press("z")
            assert clock.paused
            await pilot.press("right", "right")  # not remapped: as it was
            at = clock.now()
            await pilot.press("left")
            assert clock.now() == at
            await pilot.press("b")
            assert abs(clock.now() - (at - 5.0)) < 0.01
            palette = {c.help.rsplit(" · ", 1)[-1]: c.help for c in app.get_system_commands(app.screen)}
            assert "key z" in palette["replay.pause"] and "key b" in palette["replay.back"], palette
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            assert {("z", "Pause/Play", "replay.pause"), ("b", "-5s", "replay.back")} <= set(app.screen.rows)

    asyncio.run(scenario())
    keymap.write_text('[keymap]\n"replay.rewind" = "b"\n')
    with pytest.raises(KafkalabError, match=r"unknown binding id .replay\.rewind.; known: .*replay\.previous_event"):
        load_keymap(keymap)


def test_clock_stays_within_the_run_and_moves_at_its_speed() -> None:
    wall = [100.0]
    clock = ReplayClock(-10.0, 50.0, speed=2.0, wall=lambda: wall[0])
    wall[0] += 5
    assert clock.now() == 0.0
    clock.seek(-100)
    assert clock.now() == -10.0
    clock.set_speed(4.0)
    wall[0] += 100
    assert clock.now() == 50.0 and clock.at_end


def test_recording_writes_a_snapshot_only_when_something_changed() -> None:
    lines = [line for line in read_recording(RUN_DIR) if line["kind"] == "snapshot"]
    assert len(lines) >= 3
    for before, after in itertools.pairwise(lines):
        assert {k: v for k, v in before.items() if k != "ts"} != {k: v for k, v in after.items() if k != "ts"}
    run = RecordedRun(RUN_DIR)
    producer, consumers = run.clients(run.end)
    assert producer is not None and producer.acked > 0 and consumers
    assert all(c.name.startswith("consumer-") for c in consumers)
    # states come back as states, not strings: the panes ask them (an ended producer shows no rate)
    assert producer.state.ended and all(isinstance(c.state, ClientState) for c in consumers)


def test_a_recorded_runs_throughput_is_the_live_charts() -> None:
    """The chart's points from the recorded producer samples: at least 0.4 s apart, never negative, moving."""
    run = RecordedRun(RUN_DIR)
    points = run.throughput(run.end)
    assert len(points) > 10 and any(rate > 0 for _t, rate in points) and all(rate >= 0 for _t, rate in points)
    assert all(b[0] - a[0] >= 0.39 for a, b in itertools.pairwise(points))
    assert run.throughput(points[5][0]) == points[:6]  # up to a moment: what the chart showed then


def test_a_session_run_records_what_the_replay_shows(tmp_path: Path) -> None:
    """A LabSession run on the fake world (tests/lab_fakes.py): its run dir's recording gives a replay whose
    last frame has the live source's markers, lab steps and verdict."""
    from kafkalab.feeds.lab_source import LabSource
    from kafkalab.labs import LabSession
    from tests.lab_fakes import World
    from tests.test_labs_run import lab_of

    lab = lab_of(tmp_path, """
        [[fault]]
        at = "progress 30%"
        do = "kill"
        on = "leader test-topic/0"
        """)
    session = LabSession(lab, tmp_path / "runs", deps=World().deps())
    result = session.run()
    live = LabSource(session).run()
    replay = ReplaySource(result.run_dir)
    replay.clock.seek(replay.clock.end - replay.clock.start + 1.0)  # to the end, however far
    frame = replay.run()
    assert frame.report is not None and live.report is not None and frame.report.verdict == live.report.verdict
    assert [m.label for m in frame.markers] == [m.label for m in live.markers] and frame.markers
    assert frame.lab is not None and live.lab is not None and frame.lab.steps == live.lab.steps
    assert replay.snapshot().reachable  # node states: the fake cluster reports none (the recorded run has them)


def test_the_replayed_chart_is_the_one_the_live_console_showed(tmp_path: Path) -> None:
    """The replay drew its chart from the producer samples again (935/s over 73 s against the live 984/s over
    80 s): the points the live console showed are recorded, and the replay shows those."""
    import threading

    from kafkalab.feeds.lab_source import LabSource
    from kafkalab.labs import LabSession
    from tests.lab_fakes import World
    from tests.test_labs_run import lab_of

    # 5 s of producing: a chart of several 0.5 s points even when a loaded machine delays the sampler (2.5 s, at
    # 400/s, gave 3 points at a load average of 28)
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", deps=World(rate=200.0).deps())
    live = LabSource(session)
    done = threading.Event()

    def console_polls() -> None:  # as the console's run poller does
        while not done.wait(0.5):
            live.run()

    poller = threading.Thread(target=console_polls)
    poller.start()
    try:
        result = session.run()
    finally:
        done.set()
        poller.join()
    shown = live.run().throughput
    replay = ReplaySource(result.run_dir)
    replay.clock.seek(replay.clock.end - replay.clock.start + 1.0)
    assert len(shown) >= 4 and replay.run().throughput == shown


KRAFT_RUN_DIR = Path(__file__).parent / "recorded" / "controller-failover"  # `kafkalab run controller-failover`


@sync
async def test_a_kraft_runs_replay_shows_its_controllers_in_their_own_panes() -> None:
    """A KRaft run has controller-N nodes and no ZooKeeper: the replay gives them the controllers' panes."""
    source = ReplaySource(KRAFT_RUN_DIR, speed=4.0)
    app = ReplayConsole(source, exit_at_end=False, poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        assert [p.node_name for p in app.query(ControllerPane)] == ["controller-1", "controller-2", "controller-3"]
        assert not app.query(ZooKeeperPane)
        source.clock.seek(source.clock.end)  # the kill and the restart of the active controller both shown
        recorded = {i.name: i.state for i in source.recorded.nodes(source.clock.end)}
        names = ("controller-1", "controller-2", "controller-3")

        def shown() -> dict[str, object]:
            return {name: (info.state if (info := app.pane(name).info) else None) for name in names}

        # the run and the nodes are polled apart: wait for both to have caught up with the seek
        for _ in range(200):
            await pilot.pause(0.05)
            if app.run_frame.report is not None and shown() == {n: recorded[n] for n in names}:
                break
        assert app.run_frame.report is not None
        assert shown() == {n: recorded[n] for n in names}


def test_a_replay_picks_the_metadata_panes_from_the_recorded_nodes() -> None:
    assert MetadataPanes.for_nodes(["zookeeper", "broker-1"]).controllers is None
    assert MetadataPanes.for_nodes(["controller-1", "controller-2", "broker-1"]).controllers == 2
    combined = MetadataPanes.for_nodes(["broker-1", "broker-2"], voters=3)  # KRaft, voters in the brokers
    assert combined.controllers == 0 and combined.voters == 3


def _quorum(leader: int, epoch: int, known: tuple[int, ...] = (1, 2, 3)) -> QuorumState:
    return QuorumState(0.0, True, leader, epoch, 40, tuple(
        QuorumReplica(n, True, 40 if n in known else None, 0 if n in known else None, 10, 10) for n in (1, 2, 3)))


def test_quorum_lines_round_trip_and_are_written_on_what_changes_only() -> None:
    line = quorum_line(_quorum(1, 3))
    assert quorum_of(line, 5.0) == replace(_quorum(1, 3), taken_at=5.0)
    moved = quorum_line(replace(_quorum(1, 3), high_watermark=90))  # lags and offsets move on every answer
    assert _quorum_shape(moved) == _quorum_shape(line)
    assert _quorum_shape(quorum_line(_quorum(2, 4))) != _quorum_shape(line)  # an election
    assert _quorum_shape(quorum_line(_quorum(1, 3, known=(1, 2)))) != _quorum_shape(line)  # a voter gone quiet


def combined_run_dir(root: Path) -> Path:
    """A KRaft run with its voters in brokers 1..3 (combined): broker 1 active, killed at 5 s, broker 2 elected."""
    run_dir = root / "combined"
    run_dir.mkdir()
    started = 1_700_000_000.0
    (run_dir / "timeline.json").write_text(json.dumps({"lab": "combined", "started_at": started, "events": []}))

    def nodes(first: str) -> dict[str, object]:
        return {"kind": "nodes", "nodes": [[f"broker-{n}", "broker", n, 9000 + n, first if n == 1 else "running", "",
                                             100 + n, 0] for n in (1, 2, 3)]}

    lines = [{"ts": started, **nodes("running")}, {"ts": started, **quorum_line(_quorum(1, 1))},
             {"ts": started + 5, **nodes("killed")}, {"ts": started + 6, **quorum_line(_quorum(2, 2, known=(2, 3)))},
             {"ts": started + 8, "kind": "phase", "phase": "done"}]
    (run_dir / RECORDING).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run_dir


def test_a_combined_runs_replay_shows_the_quorum_and_its_election(tmp_path: Path) -> None:
    """Voters inside the brokers: the replay puts the quorum pane where ZooKeeper's was, and the recorded
    quorum moves in it (broker 1 active, then broker 2 with the next epoch)."""
    asyncio.run(_combined_replay(ReplaySource(combined_run_dir(tmp_path), speed=1.0)))


async def _combined_replay(source: ReplaySource) -> None:
    assert source.recorded.voters == 3
    app = ReplayConsole(source, exit_at_end=False, poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(QuorumPane)
        assert pane.voters == [1, 2, 3] and not app.query(ZooKeeperPane)
        await pilot.pause(0.3)
        assert pane.active == 1 and "ACTIVE" in str(app.query_one("#voter-1", Line).render())
        source.clock.seek(source.clock.end)
        for _ in range(100):
            await pilot.pause(0.05)
            if pane.active == 2:
                break
        assert pane.active == 2
        assert "epoch 2" in str(app.query_one("#voter-2", Line).render())
        assert "not fetching" in str(app.query_one("#voter-1", Line).render())


def test_the_replay_position_counts_from_the_recordings_start() -> None:
    """The cluster starts before the run's second 0: the top bar read '-52.0s of 290.8s' at the start."""
    from kafkalab.ui.replay_app import minutes

    assert [minutes(s) for s in (-3.0, 0.0, 59.9, 65.4, 342.8)] == ["0:00", "0:00", "0:59", "1:05", "5:42"]


@sync
async def test_a_replays_key_screen_lists_its_own_keys_and_no_action_on_a_cluster() -> None:
    """The `?` screen of a replay named none of its speed, pause and scrub keys, and offered to reset a
    group's offsets, which a replay has no cluster for."""
    app = ReplayConsole(ReplaySource(RUN_DIR), exit_at_end=False, poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2] for row in app.screen.rows}
        assert {"replay.speed.4", "replay.pause", "replay.back", "replay.forward"} <= ids
        assert not ids & {"group.reset", "run.start", "run.stop", "lab.reset", "topic.alter"}, ids


def test_a_replay_shows_the_processors_instances_as_the_live_pane_did(tmp_path: Path) -> None:
    """Recordings kept the producer and the consumers but not the processor: a replay of a pipeline lab showed no
    processor pane. Its instances (two side by side here, a zombie paused beside its replacement) round-trip."""
    from types import SimpleNamespace

    from kafkalab.clients.processor import ProcessorStats
    from kafkalab.labs.recording import RunRecorder
    from kafkalab.labs.results import Phase, PhaseChanged
    from kafkalab.labs.session_state import SessionState

    def instance(name: str, state: ClientState, received: int) -> ProcessorStats:
        return ProcessorStats(name=name, group="g", state=state, received=received, produced=received, failed=0,
                              rate=0.0, assignment=(0, 2), lag={0: 3, 2: 0}, transactional=True, fenced=False)

    states = [(instance("processor", ClientState.RUNNING, 10),),
              (instance("processor", ClientState.PAUSED, 20), instance("processor.2", ClientState.RUNNING, 5))]
    shown: list[SessionState] = []
    session = SimpleNamespace(current=SimpleNamespace(run_dir=tmp_path, snapshot=lambda: None, watch=None),
                              cluster=None, state=lambda: shown[-1])
    recorder = RunRecorder(session)  # type: ignore[arg-type]
    recorder.on_event(PhaseChanged(Phase.STARTING))
    recorder._stop.set()
    for instances in states:
        shown.append(SessionState("lab", Phase.RUNNING, tmp_path, 1.0, "", [], None, None, {}, [], [], 0, None,
                                  processor=instances))
        recorder._sample(clients=True)
    recorder._end()
    (tmp_path / "timeline.json").write_text(json.dumps({"lab": "lab", "started_at": 0.0, "events": []}))
    run = RecordedRun(tmp_path)
    assert run.processor(run.end) == states[-1]
    assert run.processor(-1.0) == ()
