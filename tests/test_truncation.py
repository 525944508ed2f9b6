"""Truncations read from brokers' logs (ZooKeeper-mode 3.9 and KRaft 4.4 lines as Kafka writes them) and named
against a timeline built by hand: the isolation that made a zombie leader, a kill, a lost leadership; through
judge(): the verdict's finding and the ``truncated`` metric."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from kafkalab.analysis.report import Report
from kafkalab.cluster import NodeState
from kafkalab.cluster.truncations import Truncation, read_truncations
from kafkalab.labs import progress
from kafkalab.labs.events import Event, LeaderChange, NetEvent, NodeEvent
from kafkalab.labs.expectations import is_metric
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.judge import judge
from kafkalab.labs.loader import load_lab
from kafkalab.labs.results import Outcome, RunResult
from kafkalab.labs.timeline import Timeline
from kafkalab.labs.truncation import broker_logs, describe, find_truncations, run_began, summary, truncated_total

LABS = Path(__file__).resolve().parent.parent / "labs"
# the run's clock zero, at a local time the log lines below can name
T0 = time.mktime((2026, 11, 26, 12, 53, 45, 0, 0, -1))


def stamp(t: float) -> str:
    """A log4j stamp (local time) ``t`` seconds after T0."""
    whole = time.localtime(T0 + t)
    return f"[{time.strftime('%Y-%m-%d %H:%M:%S', whole)},{round((t % 1) * 1000):03d}]"


def zookeeper_log(t_follower: float = 27.1, t_truncate: float = 27.3) -> list[str]:
    """Broker 1 of zombie-leader in ZooKeeper mode (3.9.2): an empty log's truncation before the run's,
    an internal topic's, then test-topic-0 cut from 5,805 back to 1,391."""
    return [
        f"{stamp(-30)} INFO [Broker id=1] Follower test-topic-0 starts at leader epoch 0 from offset 900 with "
        "partition epoch 0 and high watermark 0. Current leader is 2. (state.change.logger)",
        f"{stamp(-29)} INFO [UnifiedLog partition=test-topic-0, dir=/x/broker-1/data] Truncating to offset 800 "
        "(kafka.log.UnifiedLog)",  # a previous run's, on a kept cluster
        f"{stamp(1.0)} INFO [ReplicaFetcher replicaId=1, leaderId=3, fetcherId=0] Truncating partition test-topic-1 "
        "with TruncationState(offset=0, completed=true) due to local high watermark 0 "
        "(kafka.server.ReplicaFetcherThread)",
        f"{stamp(1.0)} INFO [UnifiedLog partition=test-topic-1, dir=/x/broker-1/data] Truncating to 0 has no effect "
        "as the largest offset in the log is -1 (kafka.log.UnifiedLog)",
        f"{stamp(t_follower)} INFO [Broker id=1] Follower test-topic-0 starts at leader epoch 2 from offset 5805 with "
        "partition epoch 2 and high watermark 1389. Current leader is 3. Previous leader Some(3) and previous leader "
        "epoch was 2. (state.change.logger)",
        f"{stamp(t_follower)} INFO [Broker id=1] Follower __consumer_offsets-2 starts at leader epoch 3 from offset 36 "
        "with partition epoch 4 and high watermark 30. Current leader is 3. (state.change.logger)",
        f"{stamp(t_truncate - 0.001)} INFO [ReplicaFetcher replicaId=1, leaderId=3, fetcherId=0] Truncating partition "
        "test-topic-0 with TruncationState(offset=1391, completed=true) due to leader epoch and offset "
        "EpochEndOffset(errorCode=0, partition=0, leaderEpoch=0, endOffset=1391) (kafka.server.ReplicaFetcherThread)",
        f"{stamp(t_truncate)} INFO [UnifiedLog partition=test-topic-0, dir=/x/broker-1/data] Truncating to offset 1391 "
        "(kafka.log.UnifiedLog)",
        "\tat some.stack.Trace(Line.java:1)",
        f"{stamp(t_truncate + 0.04)} INFO [UnifiedLog partition=__consumer_offsets-2, dir=/x/broker-1/data] "
        "Truncating to offset 30 (kafka.log.UnifiedLog)",
    ]


# Kafka 4.4 in KRaft mode: the same words, UnifiedLog now Java (its logger's name changed)
KRAFT_LOG = [
    f"{stamp(12.448)} INFO [Broker id=2] Follower test-topic-0 starts at leader epoch 1 from offset 493 with partition "
    "epoch 1 and high watermark 492. Current leader is 3. Previous leader Some(2) and previous leader epoch was 0. "
    "(state.change.logger)",
    f"{stamp(12.553)} INFO [ReplicaFetcher replicaId=2, leaderId=3, fetcherId=0] Truncating partition test-topic-0 "
    "with TruncationState(offset=492, completed=true) due to leader epoch and offset EpochEndOffset(errorCode=0, "
    "partition=0, leaderEpoch=0, endOffset=492) (kafka.server.ReplicaFetcherThread)",
    f"{stamp(12.553)} INFO [UnifiedLog partition=test-topic-0, dir=/x/broker-2/kraft-data] Truncating to offset 492 "
    "(org.apache.kafka.storage.internals.log.UnifiedLog)",
]


def at(timeline: Timeline, t: float, event: Event) -> None:
    timeline.add(event, ts=T0 + t)


def zombie_timeline() -> Timeline:
    """zombie-leader as recorded: broker-1 (leader of partition 0) isolated at 7.7 s, partition 0 moved to 3 at
    18.0 s, the links healed at 26.1 s."""
    timeline = Timeline("zombie-leader")
    timeline.started_at = T0
    at(timeline, -1.1, Event(kind=NodeEvent.kind, source="lab", detail="starting"))
    at(timeline, 7.657, NetEvent(source="network", action="isolate", nodes=("broker-1",),
                                 rules=("cut broker-1 -> zookeeper",), detail="network isolate broker-1"))
    at(timeline, 17.98, LeaderChange(source="test-topic/0", topic="test-topic", partition=0, leader=3, isr=(2, 3),
                                     previous=1, detail="test-topic/0 leader 1 -> 3"))
    at(timeline, 26.15, NetEvent(source="network", action="heal", nodes=("broker-1",),
                                 rules=("cut broker-1 -> zookeeper",), detail="network heal broker-1"))
    return timeline


def test_zookeeper_lines_give_what_was_cut_from_which_offset_since_the_run_began() -> None:
    found = read_truncations(zookeeper_log(), 1, T0 - 2, {"test-topic"})
    assert found == [Truncation(1, "test-topic", 0, round(T0 + 27.3, 3), 1391, 5805, 3, high_watermark=1389)]
    assert found[0].records == 4414
    # a previous run's truncation is the previous run's; __consumer_offsets is not the lab's topic
    assert len(read_truncations(zookeeper_log(), 1, T0 - 60, {"test-topic"})) == 2
    assert read_truncations(zookeeper_log(), 1, T0 - 2, {"test-topic"}, until=T0 + 20) == []


def test_kraft_4_4_lines_read_the_same() -> None:
    found = read_truncations(KRAFT_LOG, 2, T0, {"test-topic"})
    assert [(t.broker, t.partition, t.to_offset, t.records, t.leader) for t in found] == [(2, 0, 492, 1, 3)]


def test_a_truncation_without_its_follower_line_has_no_count() -> None:
    found = read_truncations(zookeeper_log()[6:], 1, T0, {"test-topic"})
    assert found[0].records is None and truncated_total(found) == 0


def test_the_zombie_leaders_truncation_is_named_with_its_isolation() -> None:
    timeline = zombie_timeline()
    cut = read_truncations(zookeeper_log(), 1, run_began(timeline), {"test-topic"})
    assert summary(cut, timeline, "1") == (
        "partition 0: broker-1 truncated 4,414 records (offsets 1,391-5,804) at 27.3 s, when it rejoined; it had "
        "acknowledged them as leader while it was isolated (7.7-26.1 s)")
    # an incident's verdict: what happened when, not what the producer was told
    assert summary(cut, timeline, "1", causes=False) == (
        "partition 0: broker-1 truncated 4,414 records (offsets 1,391-5,804) at 27.3 s, when it rejoined "
        "(isolated 7.7-26.1 s)")
    # acks=all: the isolated leader wrote them, it could not acknowledge them
    assert "unacknowledged (acks=all waits for the followers) while it was isolated" in summary(cut, timeline, "all")


def test_a_killed_leader_and_a_follower_are_named_for_what_the_timeline_shows() -> None:
    timeline = Timeline("leader-failover")
    timeline.started_at = T0
    at(timeline, 5.0, NodeEvent(source="broker-2", state=NodeState.KILLED, detail="broker-2 killed"))
    at(timeline, 6.0, LeaderChange(source="test-topic/0", topic="test-topic", partition=0, leader=3, isr=(1, 3),
                                   previous=2, detail="test-topic/0 leader 2 -> 3"))
    at(timeline, 10.0, NodeEvent(source="broker-2", state=NodeState.STARTING, detail="broker-2 starting"))
    at(timeline, 12.0, NodeEvent(source="broker-2", state=NodeState.RUNNING, detail="broker-2 running"))
    killed = read_truncations(KRAFT_LOG, 2, T0, {"test-topic"})[0]
    assert describe(killed, timeline, "1") == (
        "partition 0: broker-2 truncated 1 record (offset 492) at 12.6 s, when it came back after it was killed at "
        "5.0 s; it had acknowledged it as leader before")
    follower = Truncation(1, "test-topic", 0, T0 + 13.0, 490, 492, 3)
    assert describe(follower, timeline, "1") == (
        "partition 0: broker-1 truncated 2 records (offsets 490-491) at 13.0 s, to match broker-3's log")
    moved = Truncation(3, "test-topic", 0, T0 + 14.0, 480, 492, 2)
    at(timeline, 13.5, LeaderChange(source="test-topic/0", topic="test-topic", partition=0, leader=2, isr=(1, 2),
                                    previous=3, detail="test-topic/0 leader 3 -> 2"))
    assert describe(moved, timeline, "1") == (
        "partition 0: broker-3 truncated 12 records (offsets 480-491) at 14.0 s, after it lost its leadership at "
        "13.5 s; it had acknowledged them as leader")


def write_logs(cluster_dir: Path) -> None:
    for broker, lines in ((1, zookeeper_log()), (2, [])):
        logs = cluster_dir / f"broker-{broker}" / "logs"
        logs.mkdir(parents=True)
        (logs / "server.log").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_reused_cluster_is_read_where_cluster_txt_says(tmp_path: Path) -> None:
    kept = tmp_path / "earlier-run" / "cluster"
    write_logs(kept)
    run_dir = tmp_path / "this-run"
    run_dir.mkdir()
    (run_dir / "cluster.txt").write_text(f"this run reused the cluster in {kept}\n")
    assert broker_logs(run_dir) == {1: kept / "broker-1/logs/server.log", 2: kept / "broker-2/logs/server.log"}
    assert [t.records for t in find_truncations(run_dir, T0 - 2, {"test-topic"})] == [4414]


def report(verdict: str) -> Report:
    return Report(run=None, totals={}, classes={}, per_partition=[], samples={}, verdict=verdict, inputs=[],
                  elapsed_s=0.0)


@pytest.fixture
def cause_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attendee named the fix labs' cause: their verdicts may say why (until then, what the run saw only)."""
    monkeypatch.setenv("KAFKALAB_STATE", str(tmp_path / "state"))
    for lab_id in ("zombie-leader", "unclean-election"):
        progress.save(lab_id, progress.LabProgress(diagnosed=True))


@pytest.mark.usefixtures("cause_found")
def test_judge_names_the_truncation_and_counts_it(tmp_path: Path) -> None:
    lab = load_lab(LABS / "26-zombie-leader.toml")
    write_logs(tmp_path / "cluster")
    timeline = zombie_timeline()
    faults = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    said = "4,414 acknowledged records never reached the log"
    result = judge(RunResult(lab.id, tmp_path, Outcome.ERROR), lab, {}, {}, report(said), faults, timeline)
    assert result.verdict.split("\n") == [said, "leader of test-topic/0: broker 1 -> 3 in 10.3 s (isolated at 7.7 s)", (
        "partition 0: broker-1 truncated 4,414 records (offsets 1,391-5,804) at 27.3 s, when it rejoined; it had "
        "acknowledged them as leader while it was isolated (7.7-26.1 s)")]
    assert result.findings == result.verdict.split("\n")[2:]
    assert result.metrics["truncated"] == 4414
    assert result.as_dict()["findings"] == result.findings
    assert [e.held for e in result.expectations if e.text.startswith("truncated")] == [True]


@pytest.mark.usefixtures("cause_found")
def test_a_loss_under_acks_all_is_named_as_such_in_a_labs_verdict(tmp_path: Path) -> None:
    lab = load_lab(LABS / "28-unclean-election.toml")
    assert lab.producer.config.acks == "all"
    timeline = zombie_timeline()
    faults = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    lost = Report(run=None, totals={"acknowledged": 25000}, classes={"lost": 2930, "lost_by_brokers": 2930},
                  per_partition=[], samples={}, verdict="generic", inputs=[], elapsed_s=0.0)
    result = judge(RunResult(lab.id, tmp_path, Outcome.ERROR), lab, {}, {}, lost, faults, timeline)
    assert result.verdict.startswith("2,930 acknowledged records never reached the log with acks=all")


@pytest.mark.usefixtures("cause_found")
def test_truncated_is_a_metric_and_no_logs_is_none(tmp_path: Path) -> None:
    assert is_metric("truncated")
    lab = load_lab(LABS / "26-zombie-leader.toml")
    timeline = zombie_timeline()
    faults = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    result = judge(RunResult(lab.id, tmp_path, Outcome.ERROR), lab, {}, {}, report("x"), faults, timeline)
    assert result.metrics["truncated"] == 0 and "truncated" not in result.verdict and result.findings == []
