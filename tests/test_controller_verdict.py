"""A KRaft run's verdict says what moved: the active controller's changes (from -> to, when, in which epoch)
and how long the quorum was left without a leader, from timelines built by hand and through judge()."""

from __future__ import annotations

import random
from pathlib import Path

from kafkalab.analysis.report import Report
from kafkalab.cluster import NodeState
from kafkalab.labs.events import ControllerChange, FaultEvent, NetEvent, NodeEvent, QuorumLeaderChange
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.judge import judge
from kafkalab.labs.loader import load_lab
from kafkalab.labs.metrics import controller_summary, voter_node
from kafkalab.labs.results import Outcome, RunResult
from kafkalab.labs.timeline import Timeline

LABS = Path(__file__).resolve().parent.parent / "labs"
T0 = 1_800_000_000.0


def at(timeline: Timeline, t: float, event: NodeEvent | FaultEvent | ControllerChange) -> None:
    timeline.add(event, ts=T0 + t)


def node(name: str, state: NodeState) -> NodeEvent:
    return NodeEvent(source=name, state=state, detail=f"{name} {state.value}")


def change(previous: int | None, leader: int, epoch: int | None) -> QuorumLeaderChange:
    return QuorumLeaderChange(source=f"node-{leader}", controller=leader, epoch=epoch, previous=previous,
                              detail=f"active controller {previous} -> {leader} (epoch {epoch})")


def failover_timeline() -> Timeline:
    """controller-failover as recorded: 102 killed at 7.6 s, 103 seen active at 12.7 s, 102 back later."""
    timeline = Timeline("controller-failover")
    timeline.started_at = T0
    at(timeline, 0.5, node("controller-2", NodeState.RUNNING))
    at(timeline, 7.605, node("controller-2", NodeState.KILLED))
    at(timeline, 7.605, FaultEvent(source="lab", action="kill", targets=("controller-2",), trigger="progress 25%"))
    at(timeline, 12.74, change(102, 103, 8))
    at(timeline, 15.8, node("controller-2", NodeState.STARTING))
    at(timeline, 26.1, node("controller-2", NodeState.RUNNING))
    return timeline


def test_a_failover_names_the_new_active_controller_when_and_the_leaderless_gap() -> None:
    assert controller_summary(failover_timeline()) == (
        "active controller 102 -> 103 at 12.7 s (epoch 8): no active controller for at most 5.1 s "
        "(102 killed at 7.6 s)")


def test_a_stop_counts_from_its_stopping_and_each_change_is_named() -> None:
    """A stop is `stopping` then `stopped`: the gap runs from the first; a node down and up again before the
    change is not its cause; a change whose old leader never went down has no gap to give."""
    timeline = Timeline("two")
    timeline.started_at = T0
    at(timeline, 1.0, node("controller-1", NodeState.PAUSED))
    at(timeline, 2.0, node("controller-1", NodeState.RUNNING))
    at(timeline, 10.0, node("controller-1", NodeState.STOPPING))
    at(timeline, 11.0, node("controller-1", NodeState.STOPPED))
    at(timeline, 12.5, change(101, 102, 4))
    at(timeline, 30.0, change(102, 101, 5))
    assert controller_summary(timeline) == (
        "active controller changes: 101 -> 102 at 12.5 s (epoch 4): no active controller for at most 2.5 s "
        "(101 stopping at 10.0 s); 102 -> 101 at 30.0 s (epoch 5)")


def test_combined_voters_are_brokers_and_zookeeper_controller_changes_say_nothing_here() -> None:
    assert (voter_node(102), voter_node(2)) == ("controller-2", "broker-2")
    timeline = Timeline("combined")
    timeline.started_at = T0
    at(timeline, 3.0, node("broker-1", NodeState.KILLED))
    at(timeline, 6.3, change(1, 2, None))
    assert controller_summary(timeline) == (
        "active controller 1 -> 2 at 6.3 s: no active controller for at most 3.3 s (1 killed at 3.0 s)")
    zookeeper = Timeline("zk")
    zookeeper.started_at = T0
    at(zookeeper, 4.0, ControllerChange(source="broker-2", controller=2, detail="controller 1 -> 2"))
    assert controller_summary(zookeeper) == ""
    assert controller_summary(Timeline("nothing moved")) == ""


def report(verdict: str) -> Report:
    return Report(run=None, totals={}, classes={}, per_partition=[], samples={}, verdict=verdict, inputs=[],
                  elapsed_s=0.0)


def test_judge_adds_the_line_under_the_analysis_verdict(tmp_path: Path) -> None:
    lab = load_lab(LABS / "18-controller-failover.toml")
    timeline = failover_timeline()
    faults = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    said = "no anomaly: every acknowledged record was processed, once and in order"
    result = judge(RunResult(lab.id, tmp_path, Outcome.ERROR), lab, {}, {}, report(said), faults, timeline)
    first, second = result.verdict.split("\n")
    assert first == said
    assert second.startswith("active controller 102 -> 103 at 12.7 s (epoch 8): no active controller for at "
                             "most 5.1 s")
    without = judge(RunResult(lab.id, tmp_path, Outcome.ERROR), lab, {}, {}, report(said), faults)
    assert without.verdict == said  # no timeline given: the analysis' verdict alone, as before


def test_an_isolated_controller_counts_from_its_isolation_until_healed() -> None:
    """lab controller-cut: the active controller isolated, a new one seen later; a heal before the change ends it."""
    timeline = Timeline("controller-cut")
    timeline.started_at = T0
    isolate = NetEvent(source="lab", action="isolate", nodes=("controller-1",), rules=("cut controller-1 -> x",),
                       detail="network isolate controller-1")
    timeline.add(isolate, ts=T0 + 9.2)
    at(timeline, 17.5, change(101, 103, 11))
    assert controller_summary(timeline) == (
        "active controller 101 -> 103 at 17.5 s (epoch 11): no active controller for at most 8.3 s "
        "(101 isolated at 9.2 s)")
    healed = Timeline("healed first")
    healed.started_at = T0
    healed.add(isolate, ts=T0 + 2.0)
    healed.add(NetEvent(source="lab", action="heal", nodes=(), rules=(), detail="network heal"), ts=T0 + 4.0)
    at(healed, 30.0, change(101, 103, 12))
    assert controller_summary(healed) == "active controller 101 -> 103 at 30.0 s (epoch 12)"
