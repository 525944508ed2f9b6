"""Labs in both modes: lab files' mode keys, `--mode`, KRaft targets and triggers, the quorum on the timeline."""

from __future__ import annotations

import random
import time

import pytest

from kafkalab.admin import ClusterSnapshot
from kafkalab.cli import main
from kafkalab.cluster.quorum import QuorumState
from kafkalab.errors import KafkalabError
from kafkalab.labs import load_lab
from kafkalab.labs.events import EventKind
from kafkalab.labs.expectations import is_metric
from kafkalab.labs.faults import TriggerKind, parse_target, parse_trigger
from kafkalab.labs.loader import find_lab
from kafkalab.labs.timeline import ClusterWatch, Timeline
from tests.test_labs_unit import MINIMAL, error_of, write


def test_cluster_mode_keys_load_and_default_to_zookeeper(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert load_lab(write(tmp_path, MINIMAL)).cluster.modes == ("zookeeper",)
    lab = load_lab(write(tmp_path, MINIMAL + '\n[cluster]\nmodes = ["zookeeper", "kraft"]\ncontrollers = 3\n'))
    assert (lab.cluster.mode, lab.cluster.modes, lab.cluster.controllers) == ("zookeeper", ("zookeeper", "kraft"), 3)
    assert lab.on("kraft").cluster.mode == "kraft"
    kraft_only = load_lab(write(tmp_path, MINIMAL + '\n[cluster]\nmode = "kraft"\n'))
    assert kraft_only.cluster.modes == ("kraft",)
    with pytest.raises(KafkalabError, match="written for kraft mode, not zookeeper"):
        kraft_only.on("zookeeper")


@pytest.mark.parametrize(("cluster", "message"), [
    ('mode = "raft"', "'raft' is not a mode"),
    ('modes = ["kraft", "kraft"]', "list each mode once"),
    ('modes = ["zookeeper"]\nmode = "kraft"', "is not among modes"),
    ("controllers = 2", "give 1 or 3"),
    ("brokers = 2\ncontrollers = 3\ncombined = true", "3 combined controllers need 3 brokers"),
])
def test_bad_mode_keys_name_the_field(tmp_path, cluster: str, message: str) -> None:  # type: ignore[no-untyped-def]
    msg = error_of(tmp_path, MINIMAL + f"\n[cluster]\n{cluster}\n")
    field = cluster.split("\n")[-1].split(" =")[0]
    assert f"cluster.{field}: " in msg and message in msg


def test_both_mode_labs_and_kraft_labs_declare_their_modes() -> None:
    for lab_id in ("leader-failover", "min-isr-rf3"):
        assert load_lab(find_lab(lab_id)).cluster.modes == ("zookeeper", "kraft")
    for lab_id in ("controller-failover", "quorum-loss"):
        lab = load_lab(find_lab(lab_id))
        assert lab.cluster.modes == ("kraft",) and lab.cluster.mode == "kraft" and lab.cluster.controllers == 3


def test_run_refuses_a_mode_the_lab_is_not_written_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "controller-failover", "--mode", "zookeeper", "--headless"]) == 2
    err = capsys.readouterr().err
    assert "kafkalab: error: lab controller-failover is written for kraft mode, not zookeeper" in err


def test_kraft_targets_and_the_controller_change_trigger() -> None:
    target = parse_target("controllers 2,3", 3)
    assert target.nodes(None, [], random.Random(1), {}) == ["controller-2", "controller-3"]
    with pytest.raises(ValueError, match=r"numbered 1\.\.3"):
        parse_target("controller 4", 3)
    snap = ClusterSnapshot(time.time(), True, controller=2)
    controller = parse_target("controller", 3)
    assert controller.nodes(snap, [], random.Random(1), {}) == ["broker-2"]  # ZooKeeper mode: a broker
    assert controller.nodes(snap, [], random.Random(1), {}, active_controller="controller-3") == ["controller-3"]
    assert parse_trigger("controller-change").kind == TriggerKind.CONTROLLER_CHANGE
    assert is_metric("timeline.controller_changes") and is_metric("faults.failed")


class StillAdmin:
    """Answers every snapshot with the same cluster whose brokers name a different "controller" each time,
    as KRaft brokers do (a random broker): the watch must not report that as controller changes."""

    def __init__(self) -> None:
        self.calls = 0

    def snapshot(self, **_kw: object) -> ClusterSnapshot:
        self.calls += 1
        return ClusterSnapshot(time.time(), True, controller=1 + self.calls % 3)


def test_in_kraft_mode_the_timeline_takes_the_active_controller_from_the_quorum() -> None:
    leaders = iter([101, 101, None, 103, 103])

    def quorum() -> QuorumState:
        leader = next(leaders, 103)
        return QuorumState(time.time(), leader is not None, leader, 7 if leader == 103 else 6)

    timeline = Timeline("demo")
    watch = ClusterWatch(timeline, StillAdmin().snapshot, lambda: None, quorum=quorum)
    for _ in range(5):
        watch.poll()
        watch._watch_quorum()
    changes = timeline.events(EventKind.CONTROLLER_CHANGE)
    assert [e.detail for e in changes] == ["active controller 101 -> 103 (epoch 7)"]
    assert [e.as_dict()["epoch"] for e in changes] == [7]  # timeline.json keeps the epoch


def test_a_fault_may_be_expected_to_fail(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`fails = true`: the step failing is the lesson (quorum-loss's topic creation), not a broken run."""
    lab = load_lab(find_lab("quorum-loss"))
    create = next(f for f in lab.faults if f.action == "create")
    assert create.fails and create.timeout_s == 10
    assert not any(f.fails for f in lab.faults if f is not create)
    text = MINIMAL.replace('on = "leader test-topic/1"', 'on = "leader test-topic/1"\nfails = true')
    assert load_lab(write(tmp_path, text)).faults[0].fails
