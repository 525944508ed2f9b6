"""Lab 28 unclean-election's verdict: the unclean election named from the timeline (a leader from outside the
last ISR seen) before the old leader's truncation, which says it took those records alone in its ISR; built
from a ZooKeeper-mode run's timeline and broker-2's log lines (Kafka 3.9.2). In KRaft mode the controller's log
decides: an unclean election is named, an eligible leader replica's (Kafka 4.4, KIP-966) is not."""

from __future__ import annotations

from pathlib import Path

from kafkalab.cluster import NodeState
from kafkalab.cluster.truncations import Election, Truncation, read_truncations
from kafkalab.labs.events import IsrShrink, LeaderChange, NetEvent, NodeEvent
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.timeline import Timeline
from kafkalab.labs.truncation import find_truncations, read_elections, summary, unclean_election
from tests.test_truncation import T0, at, stamp

# broker-2, the killed leader, started again: a follower of broker-3 from its log end 3,847, cut back to 917
BROKER_2_LOG = [
    f"{stamp(33.9)} INFO [Broker id=2] Follower test-topic-0 starts at leader epoch 1 from offset 3847 with partition "
    "epoch 4 and high watermark 3779. Current leader is 3. Previous leader Some(3) and previous leader epoch was 1. "
    "(state.change.logger)",
    f"{stamp(34.3)} INFO [ReplicaFetcher replicaId=2, leaderId=3, fetcherId=0] Truncating partition test-topic-0 with "
    "TruncationState(offset=917, completed=true) due to leader epoch and offset EpochEndOffset(errorCode=0, "
    "partition=0, leaderEpoch=0, endOffset=917) (kafka.server.ReplicaFetcherThread)",
    f"{stamp(34.3)} INFO [UnifiedLog partition=test-topic-0, dir=/x/broker-2/data] Truncating to offset 917 "
    "(kafka.log.UnifiedLog)",
]


def shrink(t: float, leader: int, isr: tuple[int, ...], removed: tuple[int, ...]) -> tuple[float, IsrShrink]:
    return t, IsrShrink(source="test-topic/0", topic="test-topic", partition=0, leader=leader, isr=isr,
                        removed=removed, detail=f"test-topic/0 ISR -> {list(isr)}")


def unclean_timeline(offline_first: bool = False) -> Timeline:
    """unclean-election as recorded (ZooKeeper, 3.9.2): broker-2 led partition 0, its followers cut from it at
    6.9 s, the ISR [2] from 14.7 s, broker-2 killed at 19.0 s, broker-3 leader at 23.2 s, the links healed at
    25.2 s, broker-2 started at 26.2 s. ``offline_first``: the partition had no leader in between (KRaft's
    fencing without an unclean election at once)."""
    timeline = Timeline("unclean-election")
    timeline.started_at = T0
    for t, rule in ((6.909, "cut broker-1 -> broker-2"), (6.917, "cut broker-3 -> broker-2")):
        at(timeline, t, NetEvent(source="network", action="cut", nodes=(rule.split()[1], "broker-2"), rules=(rule,),
                                 detail=f"network {rule}"))
    at(timeline, *shrink(12.674, 2, (2, 3), (1,)))
    at(timeline, *shrink(14.708, 2, (2,), (3,)))
    at(timeline, 18.994, NodeEvent(source="broker-2", state=NodeState.KILLED, detail="broker-2 killed"))
    if offline_first:
        at(timeline, 21.0, LeaderChange(source="test-topic/0", topic="test-topic", partition=0, leader=None,
                                        isr=(2,), previous=2, detail="test-topic/0 leader 2 -> none"))
    at(timeline, 23.188, LeaderChange(source="test-topic/0", topic="test-topic", partition=0, leader=3, isr=(1, 3),
                                      previous=None if offline_first else 2, detail="test-topic/0 leader 2 -> 3"))
    at(timeline, *shrink(23.19, 3, (1, 3), (2,)))
    at(timeline, 25.223, NetEvent(source="network", action="heal", nodes=(), rules=("cut broker-1 -> broker-2",),
                                  detail="network heal every link"))
    at(timeline, 26.23, NodeEvent(source="broker-2", state=NodeState.STARTING, detail="broker-2 starting"))
    at(timeline, 33.5, NodeEvent(source="broker-2", state=NodeState.RUNNING, detail="broker-2 running"))
    return timeline


def truncation() -> list[Truncation]:
    return read_truncations(BROKER_2_LOG, 2, T0, {"test-topic"})


def test_the_unclean_election_and_the_lone_leaders_truncation_are_named() -> None:
    cut = truncation()
    assert [(t.to_offset, t.records) for t in cut] == [(917, 2930)]
    assert summary(cut, unclean_timeline(), "all").split("\n") == [
        "partition 0: broker-3 elected uncleanly at 23.2 s (the ISR was broker-2 alone): it lacked offsets 917-3,846",
        # its followers were cut from it, not it from them: the kill is what took it away
        "partition 0: broker-2 truncated 2,930 records (offsets 917-3,846) at 34.3 s, when it came back after it "
        "was killed at 19.0 s; it had taken them as leader alone in its ISR from 14.7 s (acks=all: acknowledged, "
        "unless min.insync.replicas refused them)"]


def test_a_partition_left_without_a_leader_first_is_still_named_and_an_incident_is_not_told() -> None:
    assert unclean_election(truncation()[0], unclean_timeline(offline_first=True)) == (
        "partition 0: broker-3 elected uncleanly at 23.2 s (the ISR was broker-2 alone): it lacked offsets 917-3,846")
    said = summary(truncation(), unclean_timeline(), "all", causes=False)
    assert "uncleanly" not in said and said.endswith("when it came back after it was killed at 19.0 s")


def test_a_leader_from_the_isr_is_no_unclean_election() -> None:
    timeline = unclean_timeline()
    at(timeline, 16.0, IsrShrink(source="test-topic/0", topic="test-topic", partition=0, leader=2, isr=(2, 3),
                                 removed=(), detail="test-topic/0 ISR [2] -> [2,3]"))
    assert unclean_election(truncation()[0], timeline) is None
    # and broker-2 was no longer alone in its ISR when it was killed: its records were not acknowledged by it alone
    assert "unacknowledged" in summary(truncation(), timeline, "all")


def test_the_lab_runs_in_both_modes_with_a_fix() -> None:
    lab = load_lab(find_lab("unclean-election"))
    assert lab.cluster.modes == ("zookeeper", "kraft") and lab.fix is not None
    assert [f.net_action is not None for f in lab.faults].count(True) == 2  # the cut, the heal
    assert not lab.producer.config.idempotent  # librdkafka's idempotent producer stops at the loss


def controller_log(how: str) -> list[str]:
    """The KRaft active controller's lines (as 3.9.2 and 4.4.0 write them): test-topic's partition 0 created,
    then its new leader after broker-2's fencing."""
    return [
        f"{stamp(-5)} INFO [QuorumController id=101] Replayed PartitionRecord for new partition test-topic-0 with "
        "topic ID 1s14kQejSX2uKihO0PYlWw and PartitionRegistration(replicas=[2, 3, 1]) "
        "(org.apache.kafka.controller.ReplicationControlManager)",
        f"{stamp(23.1)} INFO Setting new leader for topicId 1s14kQejSX2uKihO0PYlWw, partition 0 to 3 using {how}. "
        "Previous partition: PartitionRegistration(replicas=[2, 3, 1]) "
        "(org.apache.kafka.controller.PartitionChangeBuilder)",
    ]


def kraft_run(tmp_path: Path, how: str) -> list[Truncation]:
    for node, lines in (("broker-2", BROKER_2_LOG), ("controller-1", controller_log(how))):
        logs = tmp_path / "cluster" / node / "logs"
        logs.mkdir(parents=True)
        (logs / "server.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return find_truncations(tmp_path, T0, {"test-topic"})


def test_the_kraft_controllers_word_is_read_with_the_topic_named_from_its_id() -> None:
    assert read_elections(controller_log("an unclean election"), T0) == [
        (round(T0 + 23.1, 3), "test-topic", 0, 3, Election.UNCLEAN)]
    assert read_elections(controller_log("ELR"), T0, until=T0 + 20) == []


def test_kraft_names_the_unclean_election_the_controller_logged(tmp_path: Path) -> None:
    cut = kraft_run(tmp_path, "an unclean election")
    assert [t.election for t in cut] == [Election.UNCLEAN] and cut[0].as_dict()["election"] == "unclean"
    assert summary(cut, unclean_timeline(), "all").split("\n")[0].startswith(
        "partition 0: broker-3 elected uncleanly at 23.2 s")


def test_an_eligible_leader_replica_is_no_unclean_election_and_acknowledged_nothing_alone(tmp_path: Path) -> None:
    """Kafka 4.4 with min.insync.replicas=2: the ISR shrank below it, the followers cut off became eligible leader
    replicas, the high watermark stopped, and one of them was elected cleanly after the kill."""
    cut = kraft_run(tmp_path, "ELR")
    said = summary(cut, unclean_timeline(), "all")
    assert "uncleanly" not in said and "alone in its ISR" not in said
    assert "unacknowledged (acks=all waits for the followers)" in said
