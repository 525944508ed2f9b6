"""The target `coordinator [GROUP]`: the broker coordinating a consumer group, read from the metadata (Kafka's
own hash of the group id onto __consumer_offsets) when a lab fault fires or `kafkalab net` asks; refused in one
line where the lab has no such group; `same` after it is the broker it named then."""

from __future__ import annotations

import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.admin.coordinator import (
    OFFSETS_TOPIC,
    GroupCoordinator,
    group_coordinator,
    java_string_hash,
    offsets_partition,
)
from kafkalab.cli.net_cmds import with_coordinators
from kafkalab.cluster import NodeAction
from kafkalab.cluster.netwiring import NetAction, NetRequest
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.errors import KafkalabError
from kafkalab.labs import load_lab
from kafkalab.labs.events import EventKind
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.faults import TargetKind, parse_target
from kafkalab.labs.loader import find_lab
from kafkalab.labs.results import FaultState
from kafkalab.labs.run_view import RunControls
from kafkalab.labs.timeline import Timeline
from tests.test_lab_net_faults import LAB, NetHost, fault_block
from tests.test_labs_unit import error_of, write


# ---- Kafka's rule ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "java"), [
    ("", 0), ("a", 97), ("hello", 99162322), ("test-app", -1147954586),
    ("polygenelubricants", -(2**31)),  # the famous one: Integer.MIN_VALUE
    ("é€", 233 * 31 + 8364), ("😀", 0xD83D * 31 + 0xDE00),  # UTF-16 code units, as Java's String counts them
])
def test_the_group_id_hashes_as_javas_string_hashcode(text: str, java: int) -> None:
    assert java_string_hash(text) == java


def test_the_offsets_partition_is_kafkas_utils_abs_of_the_hash_modulo_the_partitions() -> None:
    assert offsets_partition("test-app", 50) == 1147954586 % 50 == 36
    assert offsets_partition("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0, not MIN_VALUE
    assert offsets_partition("hello", 7) == 99162322 % 7


def offsets_snapshot(leaders: dict[int, int | None], count: int = 50, reachable: bool = True) -> ClusterSnapshot:
    """A cluster of brokers 1..3 whose __consumer_offsets partition p is led by leaders.get(p, 1)."""
    parts = [PartitionState(OFFSETS_TOPIC, p, leaders.get(p, 1), (1, 2, 3), (1, 2, 3)) for p in range(count)]
    parts += [PartitionState("orders", 0, 1, (1, 2, 3), (1, 2, 3)),
              PartitionState("orders", 1, 2, (2, 3, 1), (2, 3, 1))]
    return ClusterSnapshot(taken_at=0.0, reachable=reachable, controller=1, brokers=(1, 2, 3),
                           partitions=tuple(parts))


def test_the_coordinator_is_the_leader_of_the_groups_offsets_partition() -> None:
    found = group_coordinator(offsets_snapshot({36: 2}), "test-app")
    assert found == GroupCoordinator("test-app", 36, 2)
    assert found.describe() == "broker 2 (leader of __consumer_offsets/36)"
    leaderless = group_coordinator(offsets_snapshot({36: None}), "test-app")
    assert leaderless.broker is None and "has no leader" in leaderless.describe()
    # offsets.topic.num.partitions=3: the same group lands elsewhere
    assert group_coordinator(offsets_snapshot({2: 3}, count=3), "test-app") == GroupCoordinator("test-app", 2, 3)


def test_no_offsets_topic_or_no_answer_is_a_one_line_error() -> None:
    bare = ClusterSnapshot(taken_at=0.0, reachable=True, brokers=(1, 2, 3))
    with pytest.raises(KafkalabError, match="__consumer_offsets does not exist"):
        group_coordinator(bare, "g1")
    with pytest.raises(KafkalabError, match="the cluster did not answer"):
        group_coordinator(ClusterSnapshot(taken_at=0.0, reachable=False, error="timed out"), "g1")


# ---- lab files ------------------------------------------------------------------------------------------
def test_coordinator_parses_with_and_without_a_group() -> None:
    bare, named = parse_target("coordinator", 3), parse_target("coordinator  g1", 3)
    assert (bare.kind, bare.group, named.kind, named.group) == (TargetKind.COORDINATOR, "", TargetKind.COORDINATOR,
                                                                 "g1")
    assert bare.category == named.category  # a node: every node action and network fault takes it


TWO_GROUPS = '"consumer.group-id" = "g1"\n\n[[consumer]]\nlocal_id = 2\n"consumer.group-id" = "g2"\n\n[[fault]]'


@pytest.mark.parametrize(("fields", "field", "says"), [
    ('do = "cut"\non = "consumer 1"\nto = "coordinator other"', "fault[1].to",
     "group other is no consumer's consumer.group-id here (this lab's: test-app)"),
    ('do = "kill"\non = "coordinator other"', "fault[1].on", "group other is no consumer's consumer.group-id"),
    ('do = "cut"\non = "coordinator"\nto = "coordinator"', "fault[1].to", "itself is no link"),
    ('do = "cut"\non = "producer"\nto = "coordinatr"', "fault[1].to", "is not a target"),
])
def test_a_coordinator_the_lab_does_not_have_is_refused_naming_the_field(
        tmp_path: Path, fields: str, field: str, says: str) -> None:
    msg = error_of(tmp_path, fault_block(fields))
    assert f": {field}: " in msg and says in msg, msg
    assert "\n" not in msg


def test_a_bare_coordinator_needs_one_group_and_a_lab_with_no_consumer_has_none(tmp_path: Path) -> None:
    two = fault_block('do = "cut"\non = "consumer 1"\nto = "coordinator"').replace("local_id = 1\n\n[[fault]]",
                                                                                  f"local_id = 1\n{TWO_GROUPS}", 1)
    msg = error_of(tmp_path, two)
    assert "fault[1].to: this lab's consumers are in groups g1, g2: name one, e.g. 'coordinator g1'" in msg, msg
    lab = load_lab(write(tmp_path, two.replace('to = "coordinator"', 'to = "coordinator g2"')))
    assert lab.faults[0].to is not None and lab.faults[0].to.group == "g2"
    none = fault_block('do = "kill"\non = "coordinator"').replace("[[consumer]]\nlocal_id = 1\n", "")
    assert "fault[1].on: coordinator is the broker coordinating the lab's consumer group: this lab has no " \
           "[[consumer]]" in error_of(tmp_path, none)


class CoordinatedHost(NetHost):
    """NetHost whose group coordinators are given (group -> broker), and which records node actions."""

    def __init__(self, coordinators: dict[str, int], spec: ClusterSpec) -> None:
        super().__init__(offsets_snapshot({}), spec)
        self.coordinators = coordinators
        self.asked: list[str] = []
        self.actions: list[tuple[str, NodeAction]] = []

    def group_coordinator(self, group: str) -> str:
        self.asked.append(group)
        return f"broker-{self.coordinators[group or 'test-app']}"

    def node_action(self, name: str, action: NodeAction) -> None:
        self.actions.append((name, action))


def test_a_cut_to_the_coordinator_is_resolved_when_it_fires_and_same_is_the_broker_named_then(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, fault_block(
        'do = "cut"\non = "consumer 1"\nto = "coordinator"\n\n'
        '[[fault]]\nat = "after 1s"\ndo = "heal"\non = "consumer 1"\nto = "coordinator test-app"\n\n'
        '[[fault]]\nat = "after 1s"\ndo = "pause"\non = "coordinator"\n\n'
        '[[fault]]\nat = "after 1s"\ndo = "resume"\non = "same"')))
    host = CoordinatedHost({"test-app": 2}, ClusterSpec(state_dir=tmp_path / "state", net_proxies=True))
    host.owner.client_started("consumer-1", os.getpid())
    timeline = Timeline(lab.id)
    firing = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    previous: list[str] = []
    cut, heal, pause, resume = lab.faults
    firing.fire(host, cut, previous)  # type: ignore[arg-type]
    host.coordinators["test-app"] = 3  # the coordinator moved: the next faults see it where it is now
    firing.fire(host, heal, previous)  # type: ignore[arg-type]
    previous = firing.fire(host, pause, previous)  # type: ignore[arg-type]
    host.coordinators["test-app"] = 1  # moved again: `same` still means the broker the pause acted on
    firing.fire(host, resume, previous)  # type: ignore[arg-type]
    assert [(r.action, r.words) for r in host.requests] == [
        (NetAction.CUT, ("consumer-1", "broker-2")), (NetAction.HEAL, ("consumer-1", "broker-3"))]
    assert host.actions == [("broker-3", NodeAction.PAUSE), ("broker-3", NodeAction.RESUME)]
    assert host.asked == ["", "test-app", ""]  # asked at each firing, never for `same`
    lines = [e.detail for e in timeline.events(EventKind.FAULT)]
    assert lines[0] == "cut consumer-1 -> broker-2: 1 rule"
    assert lines[1].startswith("heal consumer-1 -> broker-3: ")  # the link it healed: the coordinator then


def test_a_group_with_no_coordinator_now_fails_the_fault_not_the_run(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, fault_block('do = "cut"\non = "consumer 1"\nto = "coordinator"')))

    class Leaderless(CoordinatedHost):
        def group_coordinator(self, group: str) -> str:
            raise KafkalabError("group test-app has no coordinator right now: none (__consumer_offsets/36 has no "
                                "leader)")

    host = Leaderless({}, ClusterSpec(state_dir=tmp_path / "state", net_proxies=True))
    firing = FaultFiring(lab.faults, Timeline(lab.id), random.Random(1), [1])
    firing.run(host, None, lambda _s: None, 0.01, lambda: False)  # type: ignore[arg-type]
    assert firing.statuses[0].state == FaultState.FAILED
    assert "has no coordinator right now" in firing.statuses[0].detail and not host.requests


def run_controls(tmp_path: Path, text: str, snap: ClusterSnapshot) -> tuple[RunControls, list[tuple[bool, bool]]]:
    """RunControls over a run whose admin answers ``snap`` (each snapshot's (offsets, internal) recorded)."""
    lab = load_lab(write(tmp_path, text))
    asked: list[tuple[bool, bool]] = []

    def snapshot(offsets: bool = True, internal: bool = False) -> ClusterSnapshot:
        asked.append((offsets, internal))
        return snap

    run = SimpleNamespace(lab=lab, clients=None, admin=SimpleNamespace(snapshot=snapshot),
                          cluster=SimpleNamespace(node=lambda ref: SimpleNamespace(name=f"broker-{ref}")))
    return RunControls(run), asked  # type: ignore[arg-type]


def test_the_run_resolves_coordinator_from_its_consumers_group_through_the_metadata(tmp_path: Path) -> None:
    controls, asked = run_controls(tmp_path, LAB, offsets_snapshot({36: 3}))
    assert controls.group_coordinator("") == "broker-3"  # test-app: the lab's consumers' group
    assert asked == [(False, True)]  # the metadata with the internal topics, no offsets, no group API
    assert controls.group_coordinator("polygenelubricants") == "broker-1"  # partition 0
    leaderless, _ = run_controls(tmp_path, LAB, offsets_snapshot({36: None}))
    with pytest.raises(KafkalabError, match="group test-app has no coordinator right now"):
        leaderless.group_coordinator("")


# ---- kafkalab net -----------------------------------------------------------------------------------------
def test_kafkalab_net_replaces_coordinator_group_by_the_broker_it_names_now() -> None:
    lookup = {"g1": GroupCoordinator("g1", 7, 2), "g2": GroupCoordinator("g2", 9, None)}
    request = NetRequest(NetAction.DELAY, ("consumer", "1", "coordinator", "g1"), ms=200)
    resolved, said = with_coordinators(request, lookup.__getitem__)
    assert (resolved.words, resolved.ms) == (("consumer", "1", "broker-2"), 200)
    assert said == ["coordinator of group g1: broker 2 (leader of __consumer_offsets/7)"]
    with pytest.raises(KafkalabError, match="`coordinator` needs the group's id"):
        with_coordinators(NetRequest(NetAction.CUT, ("clients", "coordinator")), lookup.__getitem__)
    with pytest.raises(KafkalabError, match="group g2 has no coordinator right now"):
        with_coordinators(NetRequest(NetAction.CUT, ("clients", "coordinator", "g2")), lookup.__getitem__)


def test_the_consumer_cut_lab_cuts_consumer_1_from_its_coordinator_alone_in_both_modes() -> None:
    lab = load_lab(find_lab("consumer-cut"))
    assert lab.cluster.net_proxies and lab.cluster.modes == ("zookeeper", "kraft")
    cut = lab.faults[0]
    assert (cut.net_action, cut.target.kind, cut.target.local_id) == (NetAction.CUT, TargetKind.CONSUMER, 1)
    assert cut.to is not None and (cut.to.kind, cut.to.group) == (TargetKind.COORDINATOR, "")
    assert {c.group for c in lab.consumers} == {"test-app"} and len(lab.consumers) == 2
