"""One truth on every screen (issue 44, items 3-5): the run's leader changes, who did each fault and how long each
failover took are computed once from the timeline (kafkalab/labs/failover.py) and every view says the same: the
chart's legend, Results (the table and the lines under the verdict), the report, the metrics, the verdict, the
top bar and presenter mode."""

from __future__ import annotations

import random
import re
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.analysis.report import PartitionRow, Report
from kafkalab.cluster import EndCause, NodeAction, NodeState
from kafkalab.cluster.control_socket import ControlServer
from kafkalab.feeds.by_hand import by_hand
from kafkalab.feeds.frames import MarkerKind, RunFrame
from kafkalab.feeds.lab_source import LabSource, markers, report_view
from kafkalab.labs import LabSession
from kafkalab.labs.events import Actor, Event, EventKind, LeaderChange, NodeEvent
from kafkalab.labs.expectations import is_metric, parse_check
from kafkalab.labs.failover import leadership
from kafkalab.labs.failover_news import narrated
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.judge import judge
from kafkalab.labs.loader import load_lab
from kafkalab.labs.measured import Unmeasured
from kafkalab.labs.metrics import timeline_metrics
from kafkalab.labs.results import Outcome, Phase, RunResult, TimelineEvent
from kafkalab.labs.timeline import Timeline
from kafkalab.ui.chart import render_chart
from kafkalab.ui.producer import presenter_line
from kafkalab.ui.results import moved_text, partition_table
from tests.lab_fakes import FakeNode, World
from tests.test_labs_run import lab_of
from tests.test_ui_app import console, settle, sync
from tests.test_ui_feed import FakeSource

LABS = Path(__file__).resolve().parent.parent / "labs"
TOPICS = {"test-topic"}
KILL_LINE = "leaders of test-topic/0, 3, 6: broker 2 -> 3, 1, 3 in 2.4 s (killed at 23.0 s)"


def at(timeline: Timeline, t: float, event: Event) -> None:
    timeline.add(event, ts=timeline.started_at + t)


def node(name: str, state: NodeState, was: NodeState, actor: Actor | None, cause: EndCause | None = None) -> NodeEvent:
    return NodeEvent(source=name, state=state, was=was, actor=actor, cause=cause, detail=f"{name} {state}")


def lead(topic: str, partition: int, previous: int | None, leader: int | None, blind_s: float = 0.5) -> LeaderChange:
    return LeaderChange(source=f"{topic}/{partition}", topic=topic, partition=partition, leader=leader, isr=(1, 3),
                        previous=previous, blind_s=blind_s, detail=f"{topic}/{partition} leader {previous} -> {leader}")


def failover_timeline() -> Timeline:
    """leader-failover as a run records it: broker 2, leader of partitions 0, 3 and 6 and of __consumer_offsets/1,
    killed by the lab at 23 s; new leaders seen 2.4 s later; broker 2 back, the preferred leaders back at 45 s; one
    more change seen while Spark ran (not the run's: the report was counted before it)."""
    tl = Timeline("leader-failover")
    at(tl, 23.0, node("broker-2", NodeState.KILLED, NodeState.RUNNING, Actor.LAB, EndCause.KILLED))
    for partition, leader in ((0, 3), (3, 1), (6, 3)):
        at(tl, 25.4, lead("test-topic", partition, 2, leader))
    at(tl, 25.4, lead("__consumer_offsets", 1, 2, 3))
    at(tl, 31.0, node("broker-2", NodeState.STARTING, NodeState.KILLED, Actor.LAB))
    at(tl, 34.0, node("broker-2", NodeState.RUNNING, NodeState.STARTING, Actor.LAB))
    for partition, was in ((0, 3), (3, 1), (6, 3)):
        at(tl, 45.2, lead("test-topic", partition, was, 2))
    at(tl, 60.0, Event(kind=EventKind.PHASE, source="lab", detail=str(Phase.ANALYZING)))
    at(tl, 62.0, lead("test-topic", 0, 2, 3))
    return tl


def analysed(tl: Timeline) -> Report:
    """The report of the run, its per-partition leader changes as the run hands them to the analysis."""
    counts = tl.leader_changes()
    rows = [PartitionRow("test-topic", p, {"acknowledged": 100, "consumed_rows": 100},
                         counts.get(("test-topic", p), 0)) for p in range(8)]
    return Report(run=None, totals={"acknowledged": 800, "consumed_rows": 800}, classes={"lost": 0}, per_partition=rows,
                  samples={}, verdict="no anomaly", inputs=[], elapsed_s=0.0)


def in_order(seen: list[tuple[object, ...]], wanted: list[tuple[object, ...]]) -> bool:
    """Whether ``wanted`` appear in ``seen`` in this order (others between them)."""
    rest = iter(seen)
    return all(any(item == w for item in rest) for w in wanted)


def text_of(renderable: object) -> str:
    out = Console(width=140, record=True, file=open("/dev/null", "w"))  # noqa: SIM115  (closed with the console)
    out.print(renderable)
    return out.export_text()


# ---- item 3: one count of leader changes --------------------------------------------------------------------
def test_the_legend_results_report_and_metric_say_one_count_of_the_labs_leader_changes(tmp_path: Path) -> None:
    tl = failover_timeline()
    events = tl.events()
    legend = render_chart([(float(t), 100.0) for t in range(60)], markers(events, TOPICS), 100, 14).plain
    in_legend = sum(int(n) for n in re.findall(r"(\d+) leader changes", legend))
    report = analysed(tl)
    in_report = sum(row["leader_changes"] for row in report.to_json()["per_partition"])
    view = report_view(RunResult("leader-failover", tmp_path, Outcome.PASSED, report=report, verdict="no anomaly"))
    assert view is not None
    footer = next(line for line in text_of(partition_table(view.per_partition)).splitlines() if line.startswith("all"))
    moved = moved_text(view.per_partition, leadership(events, TOPICS))
    assert moved is not None
    metric = timeline_metrics(tl, TOPICS, [])["timeline.leader_changes"]
    assert in_legend == in_report == int(footer.split()[-1]) == metric == 6
    assert "6 leader changes (+1 in __consumer_offsets)" in moved.plain
    assert legend.count("(+1 in __consumer_offsets)") == 1  # the internal topic's, only labelled as its own
    assert leadership(events, TOPICS).changes.other_by_topic() == {"__consumer_offsets": 1}


# ---- item 4: every fault on the chart and the timeline, with who did it -------------------------------------
def test_a_hand_kill_a_kill_from_another_terminal_and_kafkalabs_restart_say_who_did_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = lab_of(tmp_path, """
        [[fault]]
        at = "progress 20%"
        do = "kill"
        on = "broker 1"

        [[fault]]
        at = "progress 40%"
        do = "note"
        note = "now by hand"
        """)
    world = World(rate=2000.0)
    session = LabSession(lab, tmp_path / "runs", deps=world.deps())
    source = LabSource(session)
    monkeypatch.setattr(FakeNode, "info", lambda self: SimpleNamespace(as_dict=dict), raising=False)

    class Owner:  # the cluster as `kafkalab broker kill 2` in another terminal reaches it: its owner's socket
        state_dir = Path(tempfile.mkdtemp(prefix="kl44-"))

        def node(self, ref: str) -> FakeNode:
            assert world.cluster is not None
            return world.cluster.node(ref)

    def by_hand_now(event: object) -> None:
        if isinstance(event, TimelineEvent) and event.event.detail == "now by hand":
            source.node_action("broker-3", NodeAction.KILL)  # `3` `k` in the console
            server = ControlServer(Owner(), threading.Event(), by_hand(session))  # type: ignore[arg-type]
            try:
                server.dispatch({"op": "kill", "node": "broker-2"})
            finally:
                server.close()

    def audit_restart(_nth: int) -> None:  # what the audit must do to bring a broker back, then down again
        run, broker = session.current, world.cluster.node("broker-3") if world.cluster else None
        assert run is not None and broker is not None
        broker.stop(cause=EndCause.AUDIT)  # the fake's audit brought every broker back: this one down first
        with run.timeline.actors.acting(broker.name, Actor.KAFKALAB, NodeAction.START):
            broker.start()
        broker.stop(cause=EndCause.AUDIT)  # its end cause alone says whose stop it is

    session.add_listener(by_hand_now)
    world.during_audit = audit_restart
    session.run()
    run = session.current
    assert run is not None
    acted = [(e.source, e.state, e.actor) for e in run.timeline.events(EventKind.NODE)
             if isinstance(e, NodeEvent) and e.actor is not None]
    hand, own = Actor.ATTENDEE, Actor.KAFKALAB
    assert in_order(acted, [("broker-1", NodeState.KILLED, Actor.LAB), ("broker-3", NodeState.KILLED, hand),
                            ("broker-2", NodeState.KILLED, hand), ("broker-3", NodeState.RUNNING, own),
                            ("broker-3", NodeState.STOPPED, own)])
    marks = [(m.label, m.actor) for m in source.run().markers if m.kind == MarkerKind.FAULT]
    assert in_order(marks, [("kill broker-1", Actor.LAB), ("kill broker-3 by hand", hand),
                            ("kill broker-2 by hand", hand), ("start broker-3 by kafkalab", own),
                            ("stop broker-3 by kafkalab", own)])
    legend = render_chart([(float(t), 10.0) for t in range(5)], source.run().markers, 160, 12).plain
    assert "kill broker-3 by hand" in legend and "start broker-3 by kafkalab" in legend
    saved = (run.run_dir / "timeline.json").read_text()
    assert '"actor": "attendee"' in saved and '"actor": "kafkalab"' in saved
    session.close()


def test_a_restart_by_hand_is_theirs_to_its_end_and_a_crash_nobodys() -> None:
    tl = Timeline("x")
    actors = tl.actors
    with actors.acting("broker-2", Actor.ATTENDEE, NodeAction.RESTART):
        assert actors.actor_of("broker-2", NodeState.STOPPING) == Actor.ATTENDEE
    result: list[Actor | None] = []
    monitor = threading.Thread(target=lambda: result.extend([  # the node's monitor, later: the restart's own steps
        actors.actor_of("broker-2", NodeState.STOPPED, EndCause.STOPPED),
        actors.actor_of("broker-2", NodeState.STARTING), actors.actor_of("broker-2", NodeState.RUNNING),
        actors.actor_of("broker-2", NodeState.FAILED, EndCause.CRASHED),
        actors.actor_of("broker-2", NodeState.STARTING)]))  # a start nobody claimed: nobody's, not the last actor's
    monitor.start()
    monitor.join()
    assert result == [Actor.ATTENDEE, Actor.ATTENDEE, Actor.ATTENDEE, None, None]


# ---- item 5: how long the failover took ---------------------------------------------------------------------
def test_the_failover_line_and_metric_are_the_same_in_every_view(tmp_path: Path) -> None:
    tl = failover_timeline()
    facts = leadership(tl.events(), TOPICS)
    assert facts.failovers[0].line == "leader of test-topic/0: broker 2 -> 3 in 2.4 s (killed at 23.0 s)"
    assert facts.lines() == [KILL_LINE]
    values = timeline_metrics(tl, TOPICS, [])
    assert values["timeline.failover_s"] == pytest.approx(2.4)
    assert is_metric("timeline.failover_s") and parse_check("timeline.failover_s < 10").evaluate(values)[0]
    lab = load_lab(LABS / "15-leader-failover.toml")
    result = judge(RunResult(lab.id, tmp_path, Outcome.ERROR), lab, {}, values, analysed(tl), no_faults(tl), tl)
    assert KILL_LINE in result.verdict.splitlines()
    assert result.metrics["timeline.failover_s"] == pytest.approx(2.4)
    view = report_view(result)
    assert view is not None
    moved = moved_text(view.per_partition, facts)
    assert moved is not None and f"failover  {KILL_LINE}" in moved.plain
    stats = SimpleNamespace(state="running", acked=1, total=2, rate=0.0, failed_total=0, unknown=0)
    assert KILL_LINE in presenter_line(stats, (), facts).plain  # type: ignore[arg-type]


def test_a_failover_is_said_once_as_the_watch_sees_it() -> None:
    said: list[str] = []
    tl = narrated(Timeline("leader-failover"), TOPICS, said.append)
    at(tl, 23.0, node("broker-2", NodeState.KILLED, NodeState.RUNNING, Actor.ATTENDEE, EndCause.KILLED))
    at(tl, 25.4, lead("__consumer_offsets", 1, 2, 3))
    at(tl, 25.4, lead("test-topic", 0, 2, None))
    at(tl, 27.0, lead("test-topic", 0, None, 3, blind_s=1.6))  # the watch was blind 1.6 s: at most this long
    at(tl, 40.0, lead("test-topic", 0, 3, 2))  # the preferred leader back: no failover
    assert said == ["leader of test-topic/0: broker 2 -> 3 within 4.0 s (killed by hand at 23.0 s)"]


def test_no_failover_is_not_observed_and_a_leader_never_replaced_is_never() -> None:
    quiet = Timeline("x")
    at(quiet, 5.0, node("broker-2", NodeState.KILLED, NodeState.RUNNING, Actor.LAB, EndCause.KILLED))
    values = timeline_metrics(quiet, TOPICS, [])
    assert "timeline.failover_s" not in values
    held, actual, _ = parse_check("timeline.failover_s < 10").evaluate(values)
    assert not held and actual == Unmeasured.NOT_OBSERVED
    offline = Timeline("x")
    at(offline, 5.0, node("broker-2", NodeState.KILLED, NodeState.RUNNING, Actor.LAB, EndCause.KILLED))
    at(offline, 11.0, lead("test-topic", 0, 2, None))
    assert timeline_metrics(offline, TOPICS, [])["timeline.failover_s"] == Unmeasured.NEVER


def electing_frame() -> RunFrame:
    """A live run 1.2 s after the lab killed broker 2, whose metadata still names it leader of test-topic/0."""
    tl = Timeline("leader-failover")
    at(tl, 23.0, node("broker-2", NodeState.KILLED, NodeState.RUNNING, Actor.LAB, EndCause.KILLED))
    stale = ClusterSnapshot(time.time(), True, 2, (1, 2, 3), (PartitionState("test-topic", 0, 2, (2, 3, 1), (1, 2, 3)),
                                                              PartitionState("test-topic", 1, 3, (3, 1, 2), (1, 2, 3))))
    return RunFrame(live=True, phase=Phase.RUNNING, leadership=leadership(tl.events(), TOPICS, stale, now=24.2))


def test_the_election_under_way_is_said_in_presenter_mode() -> None:
    frame = electing_frame()
    assert frame.electing == "electing a leader for test-topic/0 (broker 2 killed 1.2 s ago)"
    stats = SimpleNamespace(state="running", acked=1, total=2, rate=0.0, failed_total=0, unknown=0)
    assert frame.electing in presenter_line(stats, (), frame.leadership).plain  # type: ignore[arg-type]


@sync
async def test_the_top_bar_says_the_election_then_the_failover() -> None:
    feed = FakeSource()
    feed.run_frame = electing_frame()
    app = console(feed)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        top = str(app.query_one("#topbar").render())
        assert "electing a leader for test-topic/0 (broker 2 killed 1.2 s ago)" in top
        feed.run_frame = RunFrame(live=True, phase=Phase.RUNNING, message=KILL_LINE)  # the run says it once seen
        await settle(pilot)
        assert KILL_LINE in str(app.query_one("#topbar").render())


def no_faults(tl: Timeline) -> FaultFiring:
    return FaultFiring([], tl, random.Random(1), [1])


def test_a_pipelines_results_table_shows_both_topics_rows_and_totals_what_the_verdict_says(tmp_path: Path) -> None:
    """A pipeline's report spans its input and output topics, each with partitions 0-2: the Results table keyed
    its rows by partition alone, so the output topic's rows replaced the input's, and the verdict's "100
    redelivered" (the input's, read again by the replacement processor) was in no row and not in the total."""
    def row(topic: str, partition: int, **counts: int) -> PartitionRow:
        return PartitionRow(topic, partition, {"acknowledged": 200, "consumed_rows": 200, **counts}, 0)

    rows = [row("test-topic-out", 1, duplicated=100), row("test-topic", 0, redelivered=100),
            *(row(t, p) for t in ("test-topic", "test-topic-out") for p in (0, 1, 2)
              if (t, p) not in (("test-topic-out", 1), ("test-topic", 0)))]
    report = Report(run="r", totals={}, classes={"duplicated": 100, "redelivered": 100}, per_partition=rows,
                    samples={}, verdict="", inputs=[], elapsed_s=0.0)
    view = report_view(RunResult("zombie-fencing", tmp_path, Outcome.PASSED, report=report, verdict="100 messages"))
    assert view is not None
    assert list(view.per_partition) == [f"{t}/{p}" for t in ("test-topic", "test-topic-out") for p in (0, 1, 2)]
    table = text_of(partition_table(view.per_partition)).splitlines()
    footer = next(line for line in table if line.startswith("all")).split()
    assert footer[4:6] == ["100", "100"]  # all: acked, proc., lost, dupl., redel.
    assert any(line.startswith("test-topic/0") for line in table)
