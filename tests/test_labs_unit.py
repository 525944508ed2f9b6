"""Lab files, the fault language and expectations: parsing and validation, no cluster needed."""

from __future__ import annotations

import random
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.admin.reassign import plan_replicas
from kafkalab.cli import main
from kafkalab.clients.stats import ClientState, ProducerStats
from kafkalab.cluster import NodeState
from kafkalab.errors import KafkalabError
from kafkalab.labs import catalog, load_lab
from kafkalab.labs.events import ClientRecord, EventKind, LeaderChange, NodeEvent
from kafkalab.labs.expectations import make_expectation, parse_check
from kafkalab.labs.faults import TargetCategory, TargetKind, TriggerKind, parse_target, parse_trigger
from kafkalab.labs.measured import Unmeasured
from kafkalab.labs.metrics import timeline_metrics
from kafkalab.labs.timeline import FIRST_ACK_STALL_S, STALL_AFTER_S, ClusterWatch, Timeline

MINIMAL = """\
[lab]
id = "demo"
title = "Demo"
teaches = "nothing"
why = "because"
instructions = "do it"

[[topic]]
name = "test-topic"

[producer]
"producer.acks" = "1"

[[consumer]]
local_id = 1

[[fault]]
at = "progress 20%"
do = "kill"
on = "leader test-topic/1"

[expect]
lost = "> 0"
"""


def write(tmp_path: Path, text: str, name: str = "demo.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(KafkalabError) as info:
        load_lab(write(tmp_path, text))
    return str(info.value)


def test_minimal_lab_loads(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, MINIMAL))
    assert lab.id == "demo"
    assert lab.topics[0].partitions == 6 and lab.topics[0].replication_factor == 3
    assert lab.consumers[0].settings["consumer.local-id"] == "1"
    fault = lab.faults[0]
    assert (fault.at.kind, fault.at.value, fault.action) == (TriggerKind.PROGRESS, 20.0, "kill")
    assert (fault.target.kind, fault.target.topic, fault.target.partition) == (TargetKind.LEADER, "test-topic", 1)
    assert fault.target.category == TargetCategory.NODES
    assert lab.expectations[0].text == "lost > 0"


def test_unknown_key_names_line_and_field(tmp_path: Path) -> None:
    msg = error_of(tmp_path, MINIMAL.replace('do = "kill"', 'do = "kill"\nwhen = "now"'))
    assert "demo.toml:20: fault[1].when: unknown key" in msg


def test_bad_trigger_names_line_and_field(tmp_path: Path) -> None:
    msg = error_of(tmp_path, MINIMAL.replace('"progress 20%"', '"progress 120%"'))
    assert "demo.toml:18: fault[1].at:" in msg and "0..100" in msg


def test_action_must_fit_target(tmp_path: Path) -> None:
    msg = error_of(tmp_path, MINIMAL.replace('do = "kill"', 'do = "crash"'))
    assert "fault[1].do" in msg and "cannot be done on leader test-topic/1" in msg


def test_unknown_course_option_is_refused_with_line(tmp_path: Path) -> None:
    msg = error_of(tmp_path, MINIMAL.replace('"producer.acks" = "1"', '"producer.akcs" = "1"'))
    assert "demo.toml:12: producer" in msg and "producer.akcs" in msg


def test_bad_expectation_metric_is_refused(tmp_path: Path) -> None:
    msg = error_of(tmp_path, MINIMAL.replace('lost = "> 0"', 'lsot = "> 0"'))
    assert "demo.toml:23: expect.lsot" in msg


def test_fault_on_unknown_topic_or_consumer(tmp_path: Path) -> None:
    text = MINIMAL.replace("leader test-topic/1", "leader other/1")
    assert "topic other is not a [[topic]]" in error_of(tmp_path, text)
    text = MINIMAL.replace('do = "kill"\non = "leader test-topic/1"', 'do = "crash"\non = "consumer 7"')
    assert "consumer 7 is not a [[consumer]]" in error_of(tmp_path, text)


def test_fault_on_a_partition_the_topic_lacks_is_refused_before_anything_starts(tmp_path: Path) -> None:
    msg = error_of(tmp_path, MINIMAL.replace("leader test-topic/1", "leader test-topic/9"))
    assert "fault[1].on" in msg and "test-topic/9 does not exist: test-topic has 6 partitions (0..5)" in msg


def test_broker_out_of_range_and_same_without_node(tmp_path: Path) -> None:
    assert "broker 5 does not exist" in error_of(tmp_path, MINIMAL.replace("leader test-topic/1", "broker 5"))
    assert "'same' needs an earlier fault" in error_of(tmp_path, MINIMAL.replace("leader test-topic/1", "same"))


def test_toml_syntax_error_and_id_mismatch(tmp_path: Path) -> None:
    assert "not valid TOML" in error_of(tmp_path, MINIMAL.replace('title = "Demo"', "title = Demo"))
    with pytest.raises(KafkalabError, match="differs from the file name"):
        load_lab(write(tmp_path, MINIMAL, name="07-other.toml"))


def test_triggers_parse() -> None:
    assert parse_trigger("after 3s").value == 3.0
    t = parse_trigger("isr test-topic/0 < 3")
    assert (t.kind, t.topic, t.partition, t.op, t.value) == (TriggerKind.ISR, "test-topic", 0, "<", 3)
    assert parse_trigger("isr test-topic == 3").partition is None
    assert parse_trigger("consumed 200 by consumer 2").local_id == 2
    assert parse_trigger("leader-change test-topic/4").partition == 4
    assert parse_trigger("producer stalled").text == "stalled"
    assert parse_trigger("brokers >= 3").op == ">="
    assert parse_trigger("assigned consumer 2").op == ""
    t = parse_trigger("assigned consumer 1 == 6")
    assert (t.kind, t.local_id, t.op, t.value) == (TriggerKind.ASSIGNED, 1, "==", 6)
    assert parse_trigger("offline test-topic/2").kind == TriggerKind.OFFLINE
    assert parse_trigger("at 10s").kind == TriggerKind.AT and parse_trigger("after 10s").kind == TriggerKind.AFTER
    for bad in ("soon", "after three seconds", "isr test-topic/0 ~ 3"):
        with pytest.raises(ValueError):
            parse_trigger(bad)


def snapshot() -> ClusterSnapshot:
    parts = (PartitionState("t", 0, 2, (2, 3, 1), (1, 2, 3)), PartitionState("t", 1, None, (1,), ()))
    return ClusterSnapshot(0.0, True, controller=3, brokers=(1, 2, 3), partitions=parts)


def test_targets_resolve_against_a_snapshot() -> None:
    snap, rng = snapshot(), random.Random(1)
    states = {"broker-1": NodeState.RUNNING, "broker-2": NodeState.PAUSED, "broker-3": NodeState.KILLED,
              "zookeeper": NodeState.RUNNING}
    assert parse_target("leader t/0", 3).nodes(snap, [], rng, states) == ["broker-2"]
    assert parse_target("controller", 3).nodes(snap, [], rng, states) == ["broker-3"]
    assert parse_target("followers t/0", 3).nodes(snap, [], rng, states) == ["broker-1", "broker-3"]
    assert parse_target("random follower t/0", 3).nodes(snap, [], rng, states)[0] in ("broker-1", "broker-3")
    assert parse_target("leader t/1", 3).nodes(snap, [], rng, states) == []  # offline: nobody
    assert parse_target("same", 3).nodes(None, ["broker-2"], rng, states) == ["broker-2"]
    assert parse_target("paused", 3).nodes(None, [], rng, states) == ["broker-2"]
    assert parse_target("down", 3).nodes(None, [], rng, states) == ["broker-3"]
    assert parse_target("brokers 1, 3", 3).brokers == (1, 3)
    assert parse_target("consumer 2", 3).category == TargetCategory.CONSUMERS
    assert parse_target("random follower t/0", 3).kind == TargetKind.RANDOM_FOLLOWER


def test_expectations_compare_numbers_and_metrics() -> None:
    exp = make_expectation("group.g1.distinct", "== acknowledged")
    assert exp.evaluate({"group.g1.distinct": 10, "acknowledged": 10})[0]
    assert not exp.evaluate({"group.g1.distinct": 9, "acknowledged": 10})[0]
    assert make_expectation("lost", 0).evaluate({"lost": 0})[0]
    assert not make_expectation("lost", "> 0").evaluate({})[0]
    with pytest.raises(ValueError, match="known only after the run"):
        parse_check("lost == 0")
    assert parse_check("consumers.processed == 0").metric == "consumers.processed"


def test_plan_replicas_keeps_current_and_adds_round_robin() -> None:
    parts = [PartitionState("t", p, 1, (1,), (1,)) for p in range(3)]
    plan = plan_replicas(parts, [1, 2, 3], 3)
    assert all(sorted(r) == [1, 2, 3] and r[0] == 1 for r in plan.values())
    with pytest.raises(KafkalabError):
        plan_replicas(parts, [1, 2], 3)


def test_timeline_metrics_count_changes_and_assign_wait() -> None:
    tl = Timeline("x")
    tl.add(LeaderChange(source="t/0", topic="t", partition=0, leader=2, isr=(2,), previous=1))
    tl.add(LeaderChange(source="o/0", topic="__consumer_offsets", partition=0, leader=2, isr=(2,), previous=1))
    tl.say(EventKind.CONSUMER_LAUNCH, "consumer-1", "")
    tl.add(ClientRecord(kind=EventKind.CONSUMER_ASSIGNED, source="consumer-1", partitions=(0, 1)))
    tl.say(EventKind.CONSUMER_LAUNCH, "consumer-3", "")
    values = timeline_metrics(tl, {"t"}, [1, 2, 3])
    assert values["timeline.leader_changes"] == 1
    assert 0 <= values["consumer.1.assign_wait_s"] < 1  # type: ignore[operator]
    assert values["consumer.2.assign_wait_s"] == Unmeasured.NOT_OBSERVED  # never launched: nothing seen
    assert values["consumer.3.assign_wait_s"] == Unmeasured.NEVER  # launched, never assigned: a value of its own


def test_fatal_error_is_the_latest_instances_and_only_librdkafkas_fatal_one() -> None:
    tl = Timeline("x")

    def at(t: float, kind: EventKind, source: str, detail: str = "") -> None:
        tl.add(ClientRecord(kind=kind, source=source, detail=detail), ts=tl.started_at + t)

    refused = ("_FATAL: Fatal error: Broker: The instance ID is still used by another member in the consumer "
               "group: ConsumerGroupHeartbeat fatal error")
    at(1, EventKind.CONSUMER_LAUNCH, "consumer-8")
    at(2, EventKind.CONSUMER_ERROR, "consumer-8", refused)
    at(1, EventKind.CONSUMER_LAUNCH, "consumer-7")
    at(2, EventKind.CONSUMER_ERROR, "consumer-7", "_TRANSPORT: broker down")  # an error it outlives
    at(1, EventKind.CONSUMER_LAUNCH, "consumer-9")
    at(2, EventKind.CONSUMER_ERROR, "consumer-9", refused)
    at(3, EventKind.CONSUMER_LAUNCH, "consumer-9")  # started again: its new instance has had no error
    values = timeline_metrics(tl, {"t"}, [7, 8, 9, 10])
    assert [values[f"consumer.{i}.fatal_error"] for i in (7, 8, 9, 10)] == [0, 1, 0, 0]
    assert make_expectation("consumer.8.fatal_error", 1).evaluate(values)[0]


def test_every_catalog_lab_validates() -> None:
    labs = [load_lab(p) for p in catalog()]
    assert len(labs) >= 13
    assert len({lab.id for lab in labs}) == len(labs)
    for lab in labs:
        assert lab.why_deterministic and lab.instructions.strip()


def test_cli_refuses_invalid_lab_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, MINIMAL.replace('"progress 20%"', '"whenever"'))
    assert main(["run", str(path), "--headless", "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kafkalab: error: ") and "fault[1].at" in err
    assert not (tmp_path / "runs").exists()  # refused before anything started


def test_cli_lists_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["labs"]) == 0
    out = capsys.readouterr().out
    assert "acks-0" in out and "leader-failover" in out


@pytest.mark.parametrize(("trigger", "assignment", "due"), [
    ("assigned consumer 1", (), False), ("assigned consumer 1", (4,), True),
    ("assigned consumer 1 == 6", (0, 1, 2), False), ("assigned consumer 1 == 6", tuple(range(6)), True),
])
def test_assigned_trigger_counts_partitions(trigger: str, assignment: tuple[int, ...], due: bool) -> None:
    class View:
        def assignment(self, local_id: int) -> tuple[int, ...]:
            return assignment if local_id == 1 else ()

    assert parse_trigger(trigger).due(View(), 0.0) is due  # type: ignore[arg-type]


def test_a_producer_stall_is_seen_while_an_admin_snapshot_hangs() -> None:
    """Brokers paused: the admin call blocks for seconds; the stall must still show on the timeline."""
    release = threading.Event()

    class HangingAdmin:  # stands in for the admin API, which the test does not claim anything about
        def snapshot(self, **_: object) -> ClusterSnapshot:
            release.wait(10)
            return ClusterSnapshot(taken_at=time.time(), reachable=False)

    stuck = ProducerStats(name="producer", state=ClientState.RUNNING, attempted=500, acked=100, failed={}, unknown=0,
                          in_flight=400, rate=0.0, total=1000)
    timeline = Timeline("demo")
    watch = ClusterWatch(timeline, HangingAdmin().snapshot, lambda: stuck)
    watch.start()
    try:
        deadline = time.monotonic() + STALL_AFTER_S + 2
        while not timeline.events(EventKind.PRODUCER_STALLED) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert timeline.events(EventKind.PRODUCER_STALLED), "no stall on the timeline while the snapshot hung"
    finally:
        release.set()
        watch.stop()


def test_a_stall_is_counted_from_records_in_flight_and_the_first_ack_gets_longer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiting for the consumers is no stall, nor a first acknowledgment that takes 3 s (metadata and a
    producer id); 2 s without acknowledgments once they flowed is, and so is a first one that never comes."""
    from kafkalab.labs import timeline as timeline_module

    clock = [1000.0]
    monkeypatch.setattr(timeline_module.time, "monotonic", lambda: clock[0])
    stats = [ProducerStats(name="producer", state=ClientState.STARTING, attempted=0, acked=0, failed={}, unknown=0,
                           in_flight=0, rate=0.0, total=1000)]
    timeline = Timeline("demo")
    watch = ClusterWatch(timeline, lambda: ClusterSnapshot(0.0, False), lambda: stats[0])

    def at(seconds: float, **change: object) -> int:
        clock[0] += seconds
        stats[0] = replace(stats[0], **change)  # type: ignore[arg-type]
        watch._watch_producer()
        return len(timeline.events(EventKind.PRODUCER_STALLED))

    assert at(0.0) == 0 and at(5.0) == 0  # consumers being assigned: the producer has not started
    assert at(0.1, state=ClientState.RUNNING, in_flight=300) == 0
    assert at(3.0, in_flight=3000) == 0  # the first acknowledgment is late, not stalled
    assert at(0.1, acked=100) == 0
    assert at(STALL_AFTER_S + 0.1) == 1  # acknowledgments stopped once they flowed
    fresh = Timeline("demo")
    watch = ClusterWatch(fresh, lambda: ClusterSnapshot(0.0, False), lambda: stats[0])
    timeline = fresh
    stats[0] = replace(stats[0], acked=0)
    assert at(0.0) == 0 and at(FIRST_ACK_STALL_S + 0.1) == 1  # never a first one: stalled


def test_lab_edits_are_validated_and_reach_the_configs(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, MINIMAL))
    edited = lab.with_setting("producer.acks", "all").with_setting("consumer.group-id", "other")
    assert edited.producer.config.acks == "all" and edited.producer.settings["producer.acks"] == "all"
    assert [c.group for c in edited.consumers] == ["other"] and lab.consumers[0].group == "test-app"
    with pytest.raises(KafkalabError, match="heartbeat-interval"):
        lab.with_setting("consumer.heartbeat-interval", "999999")
    with pytest.raises(KafkalabError, match="not a producer"):
        lab.with_setting("acks", "all")


def test_lab_topic_edits_change_the_plan_or_add_a_topic(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, MINIMAL))
    edited = lab.with_topic("test-topic", 2, 2).with_topic("extra", None, 1)
    topic, extra = edited.topics
    assert (topic.replication_factor, topic.configs["min.insync.replicas"]) == (2, "2")
    assert (extra.name, extra.replication_factor, extra.configs) == ("extra", 1, {"min.insync.replicas": "1"})
    with pytest.raises(KafkalabError, match="rf=4"):
        lab.with_topic("test-topic", 4, None)


def test_a_copied_labs_first_error_is_its_real_one_and_then_its_name(tmp_path: Path) -> None:
    broken = MINIMAL.replace("leader test-topic/1", "leader test-topic/9")
    with pytest.raises(KafkalabError, match="test-topic/9 does not exist"):
        load_lab(write(tmp_path, broken, name="my-copy.toml"))
    with pytest.raises(KafkalabError, match=r"differs from the file name my-copy\.toml"):
        load_lab(write(tmp_path, MINIMAL, name="my-copy.toml"))


class GroupsLeftBehind:
    """An admin whose group keeps a member of the last run for ``polls`` deletions, as Kafka does until
    the member's session times out (its refusal worded as the admin client words Kafka's)."""

    def __init__(self, polls: int, error: str = "Broker: The group is not empty") -> None:
        self.polls, self.error, self.tries = polls, error, 0

    def delete_groups(self, groups: list[str]) -> None:
        self.tries += 1
        if self.tries <= self.polls:
            raise KafkalabError(f"cannot delete consumer group {groups[0]}: {self.error}")


def test_a_reused_clusters_group_is_deleted_once_the_last_runs_member_timed_out() -> None:
    from kafkalab.labs.reuse import delete_groups_when_empty

    admin, slept, said = GroupsLeftBehind(polls=3), [], []
    delete_groups_when_empty(["test-app"], admin, slept.append, said.append)  # type: ignore[arg-type]
    assert admin.tries == 4 and slept == [1.0] * 3
    assert said == ["group test-app: waiting for the last run's members to time out (up to 60s) to delete it"]
    no_coordinator = GroupsLeftBehind(polls=2, error="Local: Timed out")
    delete_groups_when_empty(["test-app"], no_coordinator, slept.append, said.append)  # type: ignore[arg-type]
    assert no_coordinator.tries == 3 and said[-1].startswith("group test-app: waiting for the group coordinator")
    other = GroupsLeftBehind(polls=1, error="Broker: not authorized")
    with pytest.raises(KafkalabError, match="not authorized"):
        delete_groups_when_empty(["test-app"], other, slept.append, said.append)  # type: ignore[arg-type]
    assert other.tries == 1


def test_a_group_deletion_nobody_answers_is_a_timed_out_error_the_reuse_waits_on() -> None:
    """No coordinator answers (here: nothing listens at all): the error says "Timed out", which the reuse's
    group deletion retries, never a bare "TimeoutError: "."""
    from kafkalab.admin import Admin
    from kafkalab.labs.reuse import GROUP_WAITS

    admin = Admin("127.0.0.1:1", timeout_s=1.0)
    with pytest.raises(KafkalabError, match=r"cannot delete consumer group test-app: .*Timed out") as refused:
        admin.delete_groups(["test-app"], timeout_s=1.0)
    assert any(key in str(refused.value) for key in GROUP_WAITS)


@pytest.mark.parametrize("argv", [["acks-0"], ["--presenter", "leader-failover"], ["labs/x.toml"]])
def test_a_lab_named_where_a_command_goes_gets_the_command_that_opens_it(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`kafkalab --presenter acks-0` listed every command of the CLI; the fix is one word away."""
    from kafkalab.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"open it with `kafkalab console {' '.join(argv)}`" in err[0], err


def test_a_word_that_is_neither_command_nor_lab_keeps_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalab.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["bogus"])
    assert exit_.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err


def test_the_workload_clock_puts_the_cluster_start_before_zero_so_the_timeline_stays_in_order() -> None:
    timeline = Timeline("clock")
    timeline.started_at -= 30  # the run began 30 s ago; the cluster came up 20 s ago
    now = time.time()
    timeline.add(NodeEvent(source="broker-1", detail="broker-1 running", state=NodeState.RUNNING), ts=now - 20)
    timeline.restart_clock()  # the workload starts: t = 0 from here
    timeline.add(NodeEvent(source="broker-1", detail="broker-1 killed", state=NodeState.KILLED))
    started, killed = timeline.events()
    assert -21 < started.t < -19 and 0 <= killed.t < 1
    assert sorted(timeline.events(), key=lambda e: e.t) == [started, killed]
