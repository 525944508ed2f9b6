"""Adding partitions, as a person needs it to see partition growth move keys: `kafkalab topic alter NAME
--partitions N` (refused in one line for no more than now: Kafka cannot remove partitions), the lab fault
`add-partitions` (validated against the lab's topic, its timeline line saying what changed), the fix action, and
the console prompt's `topic T partitions=N` done on the live run's topic (between runs: a change to the topic's
plan), and a topic a change created with enough partitions, whose growth then adds none and says so."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkalab.cluster import Cluster
from kafkalab.cluster.control_socket import ControlServer, write_cluster_file
from kafkalab.errors import KafkalabError
from kafkalab.feeds.exercise import Exercise
from kafkalab.feeds.lab_source import LabSource
from kafkalab.labs import load_lab
from kafkalab.labs.events import EventKind
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.fix import ChangeKind, action_change, change_from_text, partitions_line
from kafkalab.labs.graded import apply_changes, graded_lab
from kafkalab.labs.loader import catalog
from kafkalab.labs.model import Lab
from kafkalab.labs.results import FaultState, FaultStatus
from kafkalab.labs.run_view import RunControls
from kafkalab.labs.timeline import Timeline
from tests.test_cli_cluster import assert_one_line_error, kafkalab
from tests.test_labs_unit import error_of, write

MOVED = "(keys now hash to other partitions: a key's new records may go elsewhere than its old ones)"

LAB = """\
[lab]
id = "demo"
title = "Demo"
teaches = "nothing"
why = "because"
instructions = "do it"

[[topic]]
name = "test-topic"
partitions = 6

[producer]
"producer.topic" = "test-topic"

[[consumer]]
local_id = 1

{faults}

[expect]
lost = 0
"""

GROW = """\
[[fault]]
at = "progress 30%"
do = "add-partitions"
on = "topic test-topic"
partitions = {n}
"""


def lab_text(*faults: str) -> str:
    return LAB.format(faults="\n".join(faults))


# ---- the lab fault ---------------------------------------------------------------------------------------
def test_the_fault_is_read_with_its_new_total_and_later_faults_may_name_the_new_partitions(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, lab_text(GROW.format(n=8), GROW.format(n=10), """\
[[fault]]
at = "isr test-topic/9 == 3"
do = "kill"
on = "leader test-topic/9"
""")))
    grow, again, kill = lab.faults
    assert (grow.action, grow.target.topic, grow.partitions) == ("add-partitions", "test-topic", 8)
    assert again.partitions == 10 and kill.target.partition == 9
    assert lab.topics[0].partitions == 6  # the lab's topic is created as planned: the fault grows it


@pytest.mark.parametrize(("faults", "says"), [
    ((GROW.format(n=6),), "fault[1].partitions: 6 adds none: test-topic has 6 partitions and Kafka cannot remove "
                          "partitions: give more than 6"),
    ((GROW.format(n=4),), "fault[1].partitions: 4 adds none: test-topic has 6 partitions"),
    ((GROW.format(n=8), GROW.format(n=8)), "fault[2].partitions: 8 adds none: test-topic has 8 partitions after "
                                            "the faults before this one"),
    ((GROW.replace("partitions = {n}\n", ""),), "fault[1].partitions: add-partitions needs partitions = N"),
    ((GROW.format(n='"many"'),), "fault[1].partitions: 'many' is not a partition count"),
    ((GROW.format(n=8).replace('"add-partitions"', '"grow"'),), "there do one of send, create, alter-config, "
                                                                 "replicate, add-partitions, elect-preferred"),
])
def test_a_fault_that_adds_no_partition_is_refused_at_its_field(tmp_path: Path, faults: tuple[str, ...],
                                                                says: str) -> None:
    assert says in error_of(tmp_path, lab_text(*faults))


class GrowingAdmin:
    """The run's admin as add-partitions reaches it: what it was asked, what Kafka's answer says."""

    def __init__(self, current: int = 6) -> None:
        self.current = current
        self.asked: list[tuple[str, int]] = []

    def add_partitions(self, name: str, total: int) -> str:
        self.asked.append((name, total))
        if total <= self.current:
            raise KafkalabError(f"cannot add partitions to topic {name}: it has {self.current} partitions and "
                                "Kafka cannot remove partitions")
        said, self.current = f"{self.current} -> {total} partitions {MOVED}", total
        return said


def test_the_fault_fires_through_the_run_s_admin_and_its_timeline_line_says_what_changed(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, lab_text(GROW.format(n=8))))
    admin = GrowingAdmin()
    host = RunControls(SimpleNamespace(clients=None, admin=admin))  # type: ignore[arg-type]
    timeline = Timeline(lab.id)
    firing = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    assert firing.fire(host, lab.faults[0], []) == ["topic test-topic"]
    assert admin.asked == [("test-topic", 8)]
    [event] = timeline.events(EventKind.FAULT)
    assert event.detail == f"add-partitions topic test-topic: 6 -> 8 partitions {MOVED}"


def test_a_fault_kafka_refuses_is_a_failed_fault_with_kafka_s_reason(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, lab_text(GROW.replace("progress 30%", "start").format(n=8))))
    # the topic grew to 12 by hand meanwhile: Kafka refuses 8
    host = RunControls(SimpleNamespace(clients=None, admin=GrowingAdmin(current=12)))  # type: ignore[arg-type]
    firing = FaultFiring(lab.faults, Timeline(lab.id), random.Random(1), [1])
    firing.run(host, host, lambda _s: None, 0.01, lambda: False)
    [status] = firing.statuses
    assert status.state == FaultState.FAILED and "it has 12 partitions" in status.detail


# ---- the fix action and the prompt ---------------------------------------------------------------------
def test_adding_partitions_is_a_live_action_of_a_fix() -> None:
    change = action_change("progress 50% -> add-partitions topic test-topic partitions=8", brokers=3)
    assert change.name == "action.add-partitions" and change.fault is not None
    assert (change.fault.action, change.fault.partitions) == ("add-partitions", 8)
    with pytest.raises(KafkalabError, match="partitions: add-partitions needs partitions = N"):
        action_change("progress 50% -> add-partitions topic test-topic", brokers=3)


def test_partitions_are_a_change_to_the_topic_s_plan() -> None:
    [change] = change_from_text(3, "topic test-topic partitions=8")
    assert (change.kind, change.name, change.value, change.text) == (
        ChangeKind.TOPIC, "topic.test-topic.partitions", "8", "topic test-topic partitions=8")
    with pytest.raises(KafkalabError, match="partitions must be a whole number, not 'many'"):
        change_from_text(3, "topic test-topic partitions=many")


def fire_grown(lab: Lab, admin: GrowingAdmin) -> tuple[FaultStatus, str]:
    """The lab's add-partitions fault fired on ``admin``'s topic: its status and its timeline line."""
    timeline = Timeline(lab.id)
    host = RunControls(SimpleNamespace(clients=None, admin=admin))  # type: ignore[arg-type]
    firing = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    firing.run(host, host, lambda _s: None, 0.01, lambda: False)
    [status], [event] = firing.statuses, timeline.events(EventKind.FAULT)
    return status, event.detail


def test_a_topic_a_change_created_with_enough_partitions_grows_by_none_and_the_fault_says_so(tmp_path: Path) -> None:
    """The fix "create the topic with the partitions it needs" under the same faults: the lab's growth to 8 adds
    none, asks Kafka nothing (it would refuse 8 -> 8), and still fires, its timeline line saying why."""
    lab = load_lab(write(tmp_path, lab_text(GROW.replace("progress 30%", "start").format(n=8))))
    for planned in ("8", "12"):
        changed = apply_changes(lab, change_from_text(3, f"topic test-topic partitions={planned}"))
        assert changed.topics[0].partitions == int(planned)  # the topic is created with them
        admin = GrowingAdmin(current=int(planned))
        status, line = fire_grown(changed, admin)
        assert status.state == FaultState.FIRED and admin.asked == []
        assert line == f"add-partitions topic test-topic: test-topic already has {planned} partitions: none added"


def test_a_topic_planned_with_fewer_partitions_than_the_growth_still_grows(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, lab_text(GROW.replace("progress 30%", "start").format(n=8))))
    changed = apply_changes(lab, change_from_text(3, "topic test-topic partitions=7"))
    admin = GrowingAdmin(current=7)
    status, line = fire_grown(changed, admin)
    assert status.state == FaultState.FIRED and admin.asked == [("test-topic", 8)]
    assert line == f"add-partitions topic test-topic: 7 -> 8 partitions {MOVED}"
    with pytest.raises(KafkalabError, match="partitions=0: give at least 1"):
        apply_changes(lab, change_from_text(3, "topic test-topic partitions=0"))


@pytest.mark.parametrize(("line", "read"), [
    ("topic test-topic partitions=8", ("test-topic", 8)),
    ("  topic  orders   partitions=12 ", ("orders", 12)),
    ("topic test-topic rf=3", None),
    ("producer.acks=all", None),
])
def test_the_prompt_reads_topic_partitions_lines(line: str, read: tuple[str, int] | None) -> None:
    assert partitions_line(line) == read


@pytest.mark.parametrize(("line", "says"), [
    ("topic test-topic partitions=8 rf=3", "partitions go on a line of their own"),
    ("topic test-topic partitions=lots", "partitions=N takes the new count, a whole number, not 'lots'"),
])
def test_a_prompt_line_with_partitions_it_cannot_do_is_refused_in_one_line(line: str, says: str) -> None:
    with pytest.raises(KafkalabError, match=says):
        partitions_line(line)


@pytest.fixture
def lab_source(tmp_path: Path) -> Iterator[tuple[LabSource, SimpleNamespace, GrowingAdmin]]:
    admin = GrowingAdmin()
    session = SimpleNamespace(lab=load_lab(write(tmp_path, lab_text())), cluster=None, running=False, current=None,
                              close=lambda: None)
    source = LabSource(session)  # type: ignore[arg-type]
    try:
        yield source, session, admin
    finally:
        source.close()


def test_the_console_adds_partitions_to_the_live_run_s_topic_now(
        lab_source: tuple[LabSource, SimpleNamespace, GrowingAdmin]) -> None:
    source, session, admin = lab_source
    session.running, session.current = True, SimpleNamespace(admin=admin)
    source._up = True  # the run's brokers have run: its table is asked for
    assert source.add_change("topic test-topic partitions=8") == f"test-topic: 6 -> 8 partitions {MOVED}"
    assert admin.asked == [("test-topic", 8)]


def test_between_runs_the_console_keeps_partitions_as_a_change_to_the_topic_s_plan(tmp_path: Path) -> None:
    lab = next(load_lab(p) for p in catalog() if p.stem.endswith("partition-growth"))
    session = SimpleNamespace(lab=lab, cluster=None, running=False, current=None, close=lambda: None)
    source = LabSource(session, exercise=Exercise(lab, tmp_path / "progress.json"))  # type: ignore[arg-type]
    try:
        source.add_change("topic test-topic partitions=8")
    finally:
        source.close()
    [topic] = session.lab.topics
    assert topic.partitions == 8  # the next runs create the topic with them: the growth then adds none
    assert [f.planned for f in session.lab.faults if f.action == "add-partitions"] == [8]
    graded = graded_lab(lab, change_from_text(3, "topic test-topic partitions=8"))  # and so do the graded runs
    assert [(f.planned, f.partitions) for f in graded.faults if f.action == "add-partitions"] == [(8, 8)]


# ---- the command, on the real cluster ------------------------------------------------------------------
@pytest.fixture
def served(cluster: Cluster) -> Iterator[Path]:
    """The shared cluster, reachable by the CLI through its control socket."""
    write_cluster_file(cluster)
    server = ControlServer(cluster, threading.Event())
    try:
        yield cluster.state_dir
    finally:
        server.close()


@pytest.mark.cluster
def test_topic_alter_partitions_grows_the_topic_and_says_that_keys_move(
        served: Path, topic_factory: Callable[..., str]) -> None:
    topic, state = topic_factory(partitions=6), ["--state-dir", str(served)]
    grown = kafkalab("topic", "alter", topic, "--partitions", "8", "--config", "retention.ms=60000", *state)
    assert grown.returncode == 0, grown.stderr
    said, configs = grown.stdout.split("\n", 1)
    assert said == f"{topic}: 6 -> 8 partitions {MOVED}"  # one line, however long
    assert " ".join(configs.split()) == f"Completed updating config for topic {topic}."
    [data] = json.loads(kafkalab("topic", "describe", topic, "--json", *state).stdout)
    assert len(data["partitions"]) == 8 and all(p["leader"] is not None for p in data["partitions"])
    assert data["configs"]["retention.ms"] == "60000"
    for fewer in ("8", "4"):
        assert_one_line_error(kafkalab("topic", "alter", topic, "--partitions", fewer, *state),
                              f"cannot add partitions to topic {topic}: it has 8 partitions",
                              "Kafka cannot remove partitions")
    [data] = json.loads(kafkalab("topic", "describe", topic, "--json", *state).stdout)
    assert len(data["partitions"]) == 8
