"""The new-rebalance-protocol lab's parts, no cluster needed: labs on a Kafka version, consumers with a group
protocol, and the rebalance pause read from the consumers' assign/revoke callbacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import KAFKA_VERSION
from kafkalab.cli import main
from kafkalab.clients.options import ConsumerConfig
from kafkalab.clients.stats import ClientEvent
from kafkalab.errors import KafkalabError
from kafkalab.labs import find_lab, load_lab
from kafkalab.labs.events import Event, EventKind
from kafkalab.labs.metrics import rebalance_metrics, rebalance_summary
from kafkalab.labs.timeline import Timeline
from tests.test_labs_unit import MINIMAL, error_of, write

KIP848 = {"consumer.group-id": "g", "consumer.group-protocol": "consumer"}


def test_a_lab_runs_on_the_kafka_version_it_names(tmp_path: Path) -> None:
    assert load_lab(write(tmp_path, MINIMAL)).cluster.kafka_version == KAFKA_VERSION
    lab = load_lab(write(tmp_path, MINIMAL + '\n[cluster]\nkafka_version = "4.4.0"\nmode = "kraft"\n'))
    assert lab.cluster.kafka_version == "4.4.0"
    lab = load_lab(find_lab("new-rebalance-protocol"))
    assert (lab.cluster.kafka_version, lab.cluster.modes) == ("4.4.0", ("kraft",))
    assert {c.group: c.config.group_protocol for c in lab.consumers} == {"classic": "classic", "kip848": "consumer"}


@pytest.mark.parametrize(("cluster", "message"), [
    ('kafka_version = "4.4"', "cluster.kafka_version: '4.4' is not a Kafka release"),
    ('kafka_version = "4.4.0"',
     "cluster.kafka_version: Kafka 4.4.0 has no ZooKeeper mode (removed in 4.0): add \"kraft\" to modes"),
])
def test_a_bad_kafka_version_names_the_field(tmp_path: Path, cluster: str, message: str) -> None:
    assert message in error_of(tmp_path, MINIMAL + f"\n[cluster]\n{cluster}\n")


def test_the_consumer_protocol_needs_a_kafka_4_lab(tmp_path: Path) -> None:
    kip848 = MINIMAL.replace("local_id = 1\n", 'local_id = 1\n"consumer.group-protocol" = "consumer"\n')
    msg = error_of(tmp_path, kip848)
    assert 'consumer[1]."consumer.group-protocol": the consumer protocol (KIP-848) needs Kafka 4.0' in msg


@pytest.mark.parametrize("command", [["run", "--headless"], ["console", "--no-spark-warmup"]])
def test_a_lab_whose_kafka_is_not_fetched_is_refused_before_it_starts(tmp_path: Path, command: list[str],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    lab = write(tmp_path, MINIMAL + '\n[cluster]\nkafka_version = "4.0.9"\nmode = "kraft"\n')
    assert main([command[0], str(lab), *command[1:], "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kafkalab: error: Kafka 4.0.9 jars not found") and err.count("\n") == 0
    assert err.endswith("run `kafkalab fetch --kafka-version 4.0.9` first")
    assert not (tmp_path / "runs").exists(), "nothing starts"


def test_the_consumer_protocol_leaves_assignor_heartbeat_and_session_to_the_broker() -> None:
    conf = ConsumerConfig.from_settings(KIP848).librdkafka()
    assert conf["group.protocol"] == "consumer"
    assert not {"partition.assignment.strategy", "heartbeat.interval.ms", "session.timeout.ms"} & set(conf)
    classic = ConsumerConfig.from_settings({"consumer.group-id": "g"}).librdkafka()
    assert "group.protocol" not in classic and classic["session.timeout.ms"] == 45000
    with pytest.raises(KafkalabError, match=r"consumer.session-timeout is a classic-protocol setting: .* "
                                            r"\(group.consumer.session.timeout.ms\), so drop it"):
        ConsumerConfig.from_settings({**KIP848, "consumer.session-timeout": "6000"})
    with pytest.raises(KafkalabError, match=r"consumer\.group-protocol=modern is not one of classic, consumer"):
        ConsumerConfig.from_settings({"consumer.group-protocol": "modern"})


def test_the_consumer_protocol_config_is_one_librdkafka_accepts() -> None:
    from confluent_kafka import Consumer

    conf = ConsumerConfig.from_settings({**KIP848, "bootstrap.server": "127.0.0.1:1"}).librdkafka()
    Consumer(conf).close()  # librdkafka refuses classic-only properties with group.protocol=consumer


def _moves(timeline: Timeline, *moves: tuple[float, str, str, tuple[int, ...]]) -> None:
    for t, client, kind, partitions in moves:
        timeline.add_client_event(ClientEvent(timeline.started_at + t, client, kind, "", partitions))


def test_rebalance_metrics_tell_a_stop_the_world_rebalance_from_an_incremental_one() -> None:
    timeline = Timeline("demo")
    groups = {"consumer-1": "eager", "consumer-2": "eager", "consumer-3": "inc", "consumer-4": "inc"}
    _moves(timeline, (0.5, "consumer-1", "assigned", (0, 1, 2, 3)), (0.5, "consumer-3", "assigned", (0, 1, 2, 3)))
    timeline.add(Event(kind=EventKind.PHASE, source="lab", detail="running"), ts=timeline.started_at + 1)
    _moves(timeline,
           # eager: consumer-2 joins, consumer-1 gives up everything, then both get their share
           (2.0, "consumer-1", "revoked", (0, 1, 2, 3)), (3.5, "consumer-1", "assigned", (0, 1)),
           (3.7, "consumer-2", "assigned", (2, 3)),
           # incremental: consumer-4 joins, consumer-3 gives up only what moves
           (2.0, "consumer-3", "revoked", (2, 3)), (4.0, "consumer-4", "assigned", (2, 3)))
    timeline.add(Event(kind=EventKind.PHASE, source="lab", detail="draining"), ts=timeline.started_at + 5)
    _moves(timeline, (6.0, "consumer-1", "revoked", (0, 1)), (6.0, "consumer-2", "revoked", (2, 3)))
    m = rebalance_metrics(timeline, groups)
    assert m["group.eager.stopped_s"] == pytest.approx(1.5) and m["group.inc.stopped_s"] == 0
    assert (m["group.eager.revoked"], m["group.inc.revoked"]) == (4, 2), "the startup and the drain do not count"
    assert m["group.eager.pause_s"] == pytest.approx(1.7) and m["group.inc.pause_s"] == pytest.approx(2.0)
    assert rebalance_summary(m) == (
        "rebalance pause per group: eager: no partition held for 1.5 s, 4 partitions revoked, a partition waited "
        "up to 1.7 s; inc: never stopped, 2 partitions revoked, a partition waited up to 2.0 s")
