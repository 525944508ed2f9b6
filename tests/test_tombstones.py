"""producer.tombstones: keys deleted after the first roll, logged with an empty value; group.G.deleted_kept counts
the deleted keys whose last record a group processed still has a value (lab deleted-value-kept)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message

from kafkalab.clients.options import OptionsConflict, ProducerConfig
from kafkalab.clients.payload_log import TOMBSTONE, PayloadLog
from kafkalab.clients.producer_loop import ProducerLoop, roll_keys
from kafkalab.labs import load_lab
from kafkalab.labs.expectations import is_metric
from kafkalab.labs.measured import Unmeasured
from kafkalab.labs.metrics import group_metrics
from kafkalab.labs.wording import metric_words
from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS

LAB = Path(__file__).parent.parent / "labs" / "38-deleted-value-kept.toml"
KEPT = "group.test-app.deleted_kept"


def test_the_second_roll_deletes_the_first_keys_and_no_roll_writes_them_again() -> None:
    keys = [bytes([k]) for k in range(5)]
    assert list(roll_keys(keys, 0, 2)) == [(k, True) for k in keys]
    assert list(roll_keys(keys, 1, 2)) == [(keys[0], False), (keys[1], False), *((k, True) for k in keys[2:])]
    assert list(roll_keys(keys, 2, 2)) == [(k, True) for k in keys[2:]]
    assert list(roll_keys(keys, 1, 0)) == [(k, True) for k in keys]


def test_the_option_is_parsed_and_counts_in_the_records_sent() -> None:
    config = ProducerConfig.from_settings({"producer.tombstones": "20", "producer.num-rolls": "3"})
    assert config.tombstones == 20
    assert config.total == 100 + (20 + 80) + 80
    assert ProducerConfig.from_settings({"producer.num-rolls": "3"}).total == 300


@pytest.mark.parametrize(("settings", "says"), [
    ({"producer.tombstones": "5"}, "give producer.num-rolls=2 or more"),
    ({"producer.tombstones": "101", "producer.num-rolls": "2"}, "more than the 100 keys of a roll"),
])
def test_tombstones_need_a_second_roll_and_keys_to_delete(settings: dict[str, str], says: str) -> None:
    with pytest.raises(OptionsConflict, match=says):
        ProducerConfig.from_settings(settings)


def test_an_acknowledged_tombstone_is_logged_with_an_empty_value(tmp_path: Path) -> None:
    loop = ProducerLoop(ProducerConfig.from_settings({}), tmp_path, "r", 1, lambda _item: None)
    loop._log = PayloadLog(tmp_path / "producer.csv", PRODUCER_COLUMNS)
    sent = Message(topic="test-topic", partition=2, offset=7, key=(3).to_bytes(4, "big"), value=None,
                   timestamp=(1, 1000))
    loop._on_delivery(0, None, sent)
    loop._on_delivery(1, KafkaError(KafkaError._MSG_TIMED_OUT), sent)
    loop._log.close()
    rows = list(csv.DictReader((tmp_path / "producer.csv").read_text(encoding="utf-8").splitlines()))
    assert [(r["msg_id"], r["key"], r["status"], r["value"]) for r in rows] == [
        ("r:producer:0", "3", "acked", TOMBSTONE), ("r:producer:1", "3", "failed", TOMBSTONE)]
    assert loop.acked == 1


def _write(path: Path, columns: tuple[str, ...], rows: list[dict[str, object]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, columns)
        w.writeheader()
        w.writerows(rows)


def _sent(seq: int, key: int, value: str, status: str = "acked", topic: str = "test-topic") -> dict[str, object]:
    return {"msg_id": f"r:producer:{seq}", "seq": seq, "topic": topic, "partition": 0, "offset": seq, "key": key,
            "status": status, "value": value}


def _processed(offset: int, key: int, value: str) -> dict[str, object]:
    return {"msg_id": f"r:producer:{offset}", "consumer": "consumer-1", "topic": "test-topic", "partition": 0,
            "offset": offset, "key": key, "value": value, "group": "test-app"}


def test_deleted_kept_counts_deleted_keys_whose_last_processed_record_has_a_value(tmp_path: Path) -> None:
    lab = load_lab(LAB)
    _write(tmp_path / "producer.csv", PRODUCER_COLUMNS, [
        *(_sent(k, k, f"v{k}") for k in range(5)),
        _sent(5, 0, TOMBSTONE), _sent(6, 1, TOMBSTONE),  # keys 0 and 1 deleted
        _sent(7, 2, TOMBSTONE, status="failed"),  # never written: key 2 keeps its value
        _sent(8, 3, TOMBSTONE), _sent(9, 3, "back"),  # deleted, then written again
        _sent(10, 4, TOMBSTONE),  # deleted, and the group never had it
        _sent(11, 0, TOMBSTONE, topic="other-topic"),
    ])
    _write(tmp_path / "consumer-1.csv", CONSUMER_COLUMNS, [
        *(_processed(k, k, f"v{k}") for k in range(4)),  # key 4 never processed
        _processed(6, 1, TOMBSTONE),  # key 1's delete seen; key 0's never
        _processed(6, 1, TOMBSTONE), _processed(1, 1, "v1"),  # a redelivery from an older offset: still deleted
    ])
    assert group_metrics(tmp_path, lab)[KEPT] == 1.0  # key 0
    assert group_metrics(tmp_path, lab.with_commands(producer="java -jar p.jar {bootstrap} {topic}"))[KEPT] \
        == Unmeasured.NOT_OBSERVED


def test_the_metric_is_known_and_reads_as_a_sentence() -> None:
    assert is_metric(KEPT)
    assert metric_words(KEPT).seen.format(n="20") == "group test-app still held a value for 20 keys the producer " \
                                                     "had deleted"
