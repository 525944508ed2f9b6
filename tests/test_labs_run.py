"""A run's logic with a fake cluster and fake clients (tests/lab_fakes.py): fault order, triggers, the
drain's end, judging and a stop mid-run, in milliseconds. Kafka's own behaviour is tested on real clusters
(tests/test_labs_cluster.py); here only LabRun's decisions are claimed."""

from __future__ import annotations

import json
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

from kafkalab.cluster import NodeState
from kafkalab.labs import LabSession, Phase, load_lab
from kafkalab.labs.events import Event, EventKind, FaultEvent
from kafkalab.labs.model import Lab
from kafkalab.labs.results import (
    FaultState,
    Outcome,
    PhaseChanged,
    RunFinished,
    RunMessage,
    RunResult,
    SessionEvent,
    TimelineEvent,
)
from kafkalab.labs.run import LabRun
from tests.lab_fakes import World

BASE = """\
[lab]
id = "fake"
title = "Fake"
teaches = "run logic"
why = "fakes"
instructions = "run it"
drain = {drain}

[[topic]]
name = "test-topic"
partitions = 3

[producer]
"producer.num-records-per-roll" = 1000

[[consumer]]
local_id = 1
"""


def lab_of(tmp_path: Path, extra: str, drain: float = 30) -> Lab:
    path = tmp_path / "fake.toml"
    extra = textwrap.dedent(extra)
    if "[expect]" not in extra:
        extra += '\n[expect]\n"producer.acked" = "== 1000"\n'
    path.write_text(BASE.format(drain=drain) + extra)
    return load_lab(path)


def execute(tmp_path: Path, lab: Lab, world: World, said: list[str] | None = None) -> tuple[LabRun, RunResult]:
    """Run ``lab`` in ``world``; the run's messages go to ``said``."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(parents=True)
    def emit(event: SessionEvent) -> None:
        if said is not None and isinstance(event, RunMessage):
            said.append(event.text)
    run = LabRun(lab, run_dir, world.deps(), seed=3, emit=emit)
    return run, run.execute()


def kinds(run: LabRun, kind: EventKind) -> list[Event]:
    return run.timeline.events(kind)


def test_faults_fire_in_order_on_progress_and_isr(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [[fault]]
        at = "progress 30%"
        do = "kill"
        on = "leader test-topic/0"

        [[fault]]
        at = "isr test-topic/0 < 3"
        do = "note"
        note = "the ISR shrank"

        [[fault]]
        at = "after 0s"
        do = "start"
        on = "same"

        [[fault]]
        at = "isr test-topic/0 == 3"
        do = "check"
        expect = "producer.acked > 0"

        [expect]
        lost = "== 0"
    """)
    world = World()
    run, result = execute(tmp_path, lab, world)
    assert result.outcome == Outcome.PASSED, result.failures
    assert [f.state for f in result.faults] == [FaultState.FIRED] * 4
    fired = [f.fired_at for f in result.faults]
    assert fired == sorted(fired)
    (kill, start) = world.actions
    assert (kill[0], kill[1]) == ("kill", "broker-1") and kill[2] >= 0.3  # leader of test-topic/0
    assert (start[0], start[1]) == ("start", "broker-1")
    assert [e.action for e in kinds(run, EventKind.FAULT) if isinstance(e, FaultEvent)] == ["kill", "start"]
    assert [e.detail for e in kinds(run, EventKind.NOTE)] == ["the ISR shrank"]
    assert result.checks[0].held and result.checks[0].text == "producer.acked > 0"
    saved = json.loads((result.run_dir / "timeline.json").read_text())
    assert set(saved) == {"lab", "started_at", "events"}
    by_kind: dict[str, dict[str, object]] = {}
    for e in saved["events"]:
        by_kind.setdefault(e["kind"], e)  # the first of each kind
    assert set(by_kind["fault"]) == {"t", "ts", "kind", "source", "detail", "action", "targets", "trigger", "actor"}
    assert by_kind["fault"]["targets"] == ["broker-1"]
    assert by_kind["leader-change"]["topic"] == "test-topic" and by_kind["leader-change"]["isr"] == [2, 3]
    assert set(by_kind["leader-change"]) >= {"partition", "leader", "previous"}
    assert by_kind["node"]["state"] == "running"  # the cluster's start
    assert [e["state"] for e in saved["events"] if e["kind"] == "node"][4:] == ["killed", "running"]
    assert [e["actor"] for e in saved["events"] if e["kind"] == "node"][4:] == ["lab", "lab"]  # its kill, its start
    assert by_kind["check"]["held"] is True
    assert [w.closed for w in world.watch_snapshots] == [True]  # the watch's snapshots (a helper) ended with it


def test_assigned_trigger_waits_for_the_late_consumer(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [[consumer]]
        local_id = 2
        start = false

        [[fault]]
        at = "start"
        do = "start"
        on = "consumer 2"

        [[fault]]
        at = "assigned consumer 2"
        do = "stop"
        on = "broker 3"
    """)
    world = World()
    world.assign_after_s = 0.1
    run, result = execute(tmp_path, lab, world)
    assert result.outcome == Outcome.PASSED, result.failures
    events = run.timeline.events()
    assigned = next(i for i, e in enumerate(events)
                    if e.kind == EventKind.CONSUMER_ASSIGNED and e.source == "consumer-2")
    stopped = next(i for i, e in enumerate(events) if isinstance(e, FaultEvent) and e.action == "stop")
    assert assigned < stopped
    assert [c.name for c in world.consumers] == ["consumer-1", "consumer-2"]


def test_drain_ends_once_consumers_caught_up(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, "", drain=60)
    world = World()
    run, result = execute(tmp_path, lab, world)
    assert result.passed
    phases = {e.detail: e.t for e in kinds(run, EventKind.PHASE)}
    assert phases["analyzing"] - phases["draining"] < lab.drain_s  # ended by catching up, not by the limit
    assert [c.stop_calls for c in world.consumers] == [1]


def test_the_audit_reads_beside_the_drain_when_every_node_runs(tmp_path: Path) -> None:
    """The topic holds all it will once the producer is done and no node is down: the audit reads it while the
    consumers drain, so after the drain only the analysis is left."""
    world, said = World(), []
    world.start_s = 0.5  # the nodes' start events, stamped on the clock before the clients', come "later"
    run, result = execute(tmp_path, lab_of(tmp_path, ""), world, said)
    assert result.passed
    assert world.audits == [0]  # one read, before any consumer was stopped
    phases = [e.detail for e in kinds(run, EventKind.PHASE)]
    assert "auditing" not in phases and phases.index("analyzing") == phases.index("draining") + 1
    assert any("while the consumers drain" in m for m in said)


def test_the_audit_waits_for_the_drain_when_a_broker_is_down_and_leaves_it_down(tmp_path: Path) -> None:
    """Every partition has a running leader (replication factor 3): the read needs no node back, so none is
    touched (a partition that does: tests/test_audit_heal.py)."""
    lab = lab_of(tmp_path, """
        [[fault]]
        at = "progress 20%"
        do = "stop"
        on = "broker 3"
    """)
    world = World()
    run, result = execute(tmp_path, lab, world)
    assert result.passed, result.failures
    assert world.audits == [1]  # after the consumer was stopped
    assert [a[:2] for a in world.actions] == [("stop", "broker-3")]
    phases = [e.detail for e in kinds(run, EventKind.PHASE)]
    assert phases.index("draining") < phases.index("auditing") < phases.index("analyzing")


def test_a_node_changing_state_during_the_early_audit_makes_it_read_again_after_the_drain(tmp_path: Path) -> None:
    world, said = World(), []
    world.during_audit = lambda nth: world.cluster.node("broker-2").kill() if nth == 1 and world.cluster else None
    _run, result = execute(tmp_path, lab_of(tmp_path, ""), world, said)
    assert result.passed, result.failures
    assert len(world.audits) == 2 and world.audits[1] == 1  # read again once the drain ended
    assert [a[:2] for a in world.actions] == [("kill", "broker-2")]  # its partitions have other leaders
    assert any("reading again" in m for m in said)


def test_topic_creation_is_told_how_many_brokers_run(tmp_path: Path) -> None:
    """So a replication factor the controller refuses while brokers still register is asked again."""
    world = World()
    _, result = execute(tmp_path, lab_of(tmp_path, ""), world)
    assert result.passed
    assert world.brokers_up == 3


def test_a_consumer_the_lab_leaves_paused_is_killed_at_the_drain_not_waited_for(tmp_path: Path) -> None:
    """A hung process can neither catch up nor close: the drain kills it and says so, instead of waiting out its
    limit and then a close that cannot come."""
    lab = lab_of(tmp_path, """
        [[fault]]
        at = "progress 10%"
        do = "pause"
        on = "consumer 1"
        """, drain=60)
    world = World()
    said: list[str] = []
    run, _result = execute(tmp_path, lab, world, said)
    phases = {e.detail: e.t for e in kinds(run, EventKind.PHASE)}
    assert phases["analyzing"] - phases["draining"] < lab.drain_s
    [consumer] = world.consumers
    assert consumer.paused and consumer.state == "crashed"
    assert "consumer-1 is still paused at the run's end: killed (a hung process cannot close)" in said


def test_drain_ends_at_its_limit_when_lag_stays(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, "", drain=0.3)
    world = World()
    world.lagging = True
    run, result = execute(tmp_path, lab, world)
    phases = {e.detail: e.t for e in kinds(run, EventKind.PHASE)}
    assert phases["analyzing"] - phases["draining"] >= 0.3
    assert [c.state for c in world.consumers] == ["finished"]
    assert result.passed  # a lagging consumer is not a failed run by itself


def test_a_failed_expectation_is_named(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [expect]
        lost = "> 0"
        "producer.acked" = "== 1000"
    """)
    world = World()
    _run, result = execute(tmp_path, lab, world)
    assert result.outcome == Outcome.FAILED
    said = ["0 acknowledged records were never processed (expected more than 0)"]  # what lost > 0 saw, in words
    assert result.failures == said
    saved = json.loads((result.run_dir / "result.json").read_text())
    assert saved["failures"] == said and saved["passed"] is False


def test_a_trigger_that_never_comes_misses_the_rest(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [[fault]]
        at = "acked 999999"
        do = "kill"
        on = "broker 2"
        timeout = 0.2

        [[fault]]
        at = "start"
        do = "note"
    """)
    world = World()
    _run, result = execute(tmp_path, lab, world)
    assert [f.state for f in result.faults] == [FaultState.MISSED, FaultState.MISSED]
    assert result.outcome == Outcome.FAILED and result.metrics["faults.missed"] == 2
    assert result.failures[0] == "fault 1 (kill broker 2) did not fire: it waited 0.2 s for 999,999 records to be " \
                                 "acknowledged"
    assert world.actions == []


def test_stop_mid_run_leaves_a_complete_result(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [[fault]]
        at = "progress 50%"
        do = "kill"
        on = "broker 2"
    """)
    world = World()
    world.stuck = True  # the producer never gets an acknowledgment: the run goes on until stopped
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run = LabRun(lab, run_dir, world.deps(), seed=3)
    thread = threading.Thread(target=run.execute)
    thread.start()
    deadline = time.monotonic() + 10
    while run.phase != Phase.RUNNING and time.monotonic() < deadline:
        time.sleep(0.01)
    run.stop()
    thread.join(10)
    assert not thread.is_alive()
    saved = json.loads((run_dir / "result.json").read_text())
    assert saved["outcome"] == "stopped" and saved["seed"] == 3
    assert set(saved) >= {"lab", "run_dir", "failures", "expectations", "checks", "faults", "metrics", "duration_s"}
    assert [f["state"] for f in saved["faults"]] == ["waiting"]
    assert json.loads((run_dir / "timeline.json").read_text())["events"]
    assert world.cluster is not None and world.cluster.shut_down
    assert not any(c.running for c in world.consumers)
    assert [w.closed for w in world.watch_snapshots] == [True]
    assert run.phase == Phase.STOPPED


def test_a_run_that_fails_after_its_clients_started_still_closes_the_watchs_snapshots(tmp_path: Path) -> None:
    def analysis_fails(_dir: Path, _audits: list[Path], _leaders: object) -> dict[str, object]:
        raise RuntimeError("the analysis broke")

    world = World()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run = LabRun(lab_of(tmp_path, ""), run_dir, replace(world.deps(), analyze=analysis_fails), seed=3)
    result = run.execute()
    assert result.outcome == "error" and result.error == "RuntimeError: the analysis broke"
    assert len(world.watch_snapshots) == 1 and world.watch_snapshots[0].closed


def test_session_runs_with_fakes_and_keeps_state_after(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [expect]
        "producer.acked" = "== 1000"
    """)
    world = World()
    session = LabSession(lab, tmp_path / "runs", seed=5, deps=world.deps())
    events: list[type] = []
    session.add_listener(lambda e: events.append(type(e)))
    result = session.run()
    assert result.passed and result.seed == 5
    state = session.state()
    assert state.phase == Phase.DONE and state.result is result and state.run_dir == result.run_dir
    assert {PhaseChanged, TimelineEvent, RunMessage, RunFinished} <= set(events)
    session.reset()
    assert session.state().phase == Phase.IDLE and session.cluster is None


def test_a_kept_cluster_outlives_its_run_and_the_next_run_reuses_it_clean(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [expect]
        "producer.acked" = "== 1000"
    """)
    world = World()
    session = LabSession(lab, tmp_path / "runs", seed=5, deps=world.deps(), keep_cluster=True)
    assert session.run().passed
    first = world.cluster
    assert first is not None and not first.shut_down, "the run's teardown ended a kept cluster"
    assert all(n.state == NodeState.RUNNING for n in first.nodes)
    assert session.cluster is first  # the console keeps showing it
    first_run = session.current
    second = session.run()
    assert world.cluster is first and not first.shut_down, "a cluster that fits the next run was not reused"
    assert session.current is not None and session.current.cluster_note == "reusing the running cluster"
    assert second.passed, second.error
    assert world.deleted_topics == ["test-topic"] and world.deleted_groups == [lab.consumers[0].group]
    assert "test-topic" in world.topics and not world.deleting  # recreated once its deletion was done
    # the first run's timeline no longer records the reused cluster's nodes
    assert first_run is not None and not first_run.owns_cluster
    session.reset()
    assert first.shut_down and first.shutdown_reason == "run reset"
    assert not any(n.state == NodeState.KILLED for n in first.nodes)


def test_a_kept_cluster_with_a_node_down_gives_way_to_a_fresh_one_and_says_why(tmp_path: Path) -> None:
    world = World()
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", seed=5, deps=world.deps(), keep_cluster=True)
    session.run()
    first = world.cluster
    assert first is not None
    first.node("broker-2").kill()
    session.run()
    assert first.shut_down and first.shutdown_reason == "broker-2 is down: the next run starts a fresh cluster"
    assert world.cluster is not first and not world.deleted_topics
    assert session.current is not None and session.current.cluster_note == "broker-2 is down: starting a fresh cluster"


def test_a_lab_that_starts_before_its_cluster_grew_never_reuses_one(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, """
        [cluster]
        brokers = 3
        stopped = [3]
    """)
    world = World()
    session = LabSession(lab, tmp_path / "runs", seed=5, deps=world.deps(), keep_cluster=True)
    session.run()
    first = world.cluster
    assert first is not None
    for node in first.nodes:  # every node running again: the lesson still needs a fresh cluster
        node.start()
    session.run()
    assert first.shut_down and world.cluster is not first
    assert "starts before brokers 3 join" in first.shutdown_reason


def test_without_keep_the_run_ends_its_cluster_as_stopped_not_killed(tmp_path: Path) -> None:
    world = World()
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", seed=5, deps=world.deps())
    session.run()
    assert world.cluster is not None and world.cluster.shutdown_reason == "run ended"


def test_a_fault_expected_to_fail_fires_when_it_fails_and_fails_when_it_succeeds(tmp_path: Path) -> None:
    """`fails = true` (quorum-loss's topic creation): failing is the lesson; succeeding is what went wrong."""
    lab = lab_of(tmp_path, """
        [[topic]]
        name = "later"
        create = false

        [[fault]]
        at = "start"
        do = "kill"
        on = "leader later/0"
        fails = true

        [[fault]]
        at = "start"
        do = "create"
        on = "topic later"
        fails = true
    """)
    world = World()
    _run, result = execute(tmp_path, lab, world)
    assert [f.state for f in result.faults] == [FaultState.FIRED, FaultState.FAILED]
    assert result.faults[0].detail.startswith("failed, as the lab expects: leader later/0 names no node")
    assert result.faults[1].detail == "succeeded, but the lab expects it to fail"
    assert result.metrics["faults.failed"] == 1 and result.metrics["faults.missed"] == 1
    assert result.outcome == Outcome.FAILED and world.actions == []


def test_in_zookeeper_mode_topics_wait_until_the_stopped_brokers_left_the_metadata(tmp_path: Path) -> None:
    """The brokers' metadata lists a stopped broker until the controller tells them; a topic created before
    then may place a partition on it, offline until it returns (rf1-before-growth's run that never started)."""
    world = World()
    world.metadata_lag = 5
    execute(tmp_path, lab_of(tmp_path, """
        [cluster]
        brokers = 3
        stopped = [2, 3]
    """), world)
    assert world.listed_at_create == (1,)


def test_in_kraft_the_brokers_the_cluster_grows_by_are_never_started(tmp_path: Path) -> None:
    """A started then stopped KRaft broker stays registered (fenced) and takes new topics' followers; one
    never started is not part of the cluster yet, as the lesson needs. ZooKeeper mode stops them after the start."""
    extra = """
        [cluster]
        modes = ["zookeeper", "kraft"]
        brokers = 3
        stopped = [2, 3]
    """
    actions: dict[str, list[str]] = {}
    for mode in ("zookeeper", "kraft"):
        world = World()
        said: list[str] = []
        execute(tmp_path / mode, lab_of(tmp_path, extra).on(mode), world, said)
        assert world.cluster is not None
        actions[mode] = [f"{action} {node}" for action, node, _ in world.actions]
        held_back = any("not started: it registers with the quorum" in line for line in said)
        assert held_back == (mode == "kraft"), said
    assert {"stop broker-2", "stop broker-3"} <= set(actions["zookeeper"])
    assert not any(a.startswith("stop") for a in actions["kraft"])  # never started, so nothing to stop
