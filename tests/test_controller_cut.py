"""Lab 29 controller-cut, without a cluster: KRaft only with three voters, the active controller isolated on the
network (not killed), healed on the new active controller having been seen; and its verdict names the change."""

from __future__ import annotations

import random
from pathlib import Path

from kafkalab.analysis.report import Report
from kafkalab.cluster.netwiring import NetAction
from kafkalab.labs.events import NetEvent, QuorumLeaderChange
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.faults import TargetKind, TriggerKind
from kafkalab.labs.judge import judge
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.results import Outcome, RunResult
from kafkalab.labs.timeline import Timeline

T0 = 1_800_000_000.0


def test_the_active_controller_is_isolated_then_healed_once_a_new_one_is_seen() -> None:
    lab = load_lab(find_lab("controller-cut"))
    assert lab.cluster.modes == ("kraft",) and lab.cluster.controllers == 3 and lab.cluster.net_proxies
    assert lab.fix is None
    isolate, seen, heal = lab.faults
    assert (isolate.net_action, isolate.target.kind) == (NetAction.ISOLATE, TargetKind.CONTROLLER)
    assert seen.at.kind == TriggerKind.CONTROLLER_CHANGE
    assert heal.net_action == NetAction.HEAL and heal.at.kind == TriggerKind.AFTER


def test_the_verdict_names_the_new_active_controller(tmp_path: Path) -> None:
    """As on 4.4.0: 102 isolated at 14.6 s, 101 seen active at 22.8 s (epoch 2)."""
    lab = load_lab(find_lab("controller-cut"))
    timeline = Timeline(lab.id)
    timeline.started_at = T0
    timeline.add(NetEvent(source="network", action="isolate", nodes=("controller-2",),
                          rules=("cut controller-2 -> controller-1",), detail="network isolate controller-2"),
                 ts=T0 + 14.6)
    timeline.add(QuorumLeaderChange(source="node-101", controller=101, epoch=2, previous=102,
                                    detail="active controller 102 -> 101 (epoch 2)"), ts=T0 + 22.8)
    faults = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    said = "no anomaly: every acknowledged record was processed, once and in order"
    report = Report(run=None, totals={}, classes={}, per_partition=[], samples={}, verdict=said, inputs=[],
                    elapsed_s=0.0)
    result = judge(RunResult(lab.id, tmp_path, Outcome.ERROR), lab, {}, {}, report, faults, timeline)
    assert result.verdict.split("\n") == [said, "active controller 102 -> 101 at 22.8 s (epoch 2): no active "
                                                 "controller for at most 8.2 s (102 isolated at 14.6 s)"]
