"""Clients without a cluster: option rules, payload logs, the seed-format export, the corpus."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from confluent_kafka import Message

from kafkalab.clients.corpus import ValuePicker, corpus_lines
from kafkalab.clients.options import ConsumerConfig, ProducerConfig, parse_defines
from kafkalab.clients.payload_log import ConsumedRows, PayloadLog, log_files, max_seq
from kafkalab.clients.seed_export import export_seed_format
from kafkalab.clients.throughput import THROUGHPUT_POINTS, ThroughputSampler
from kafkalab.errors import KafkalabError
from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS
from kafkalab.settings_text import name_value, name_values


def test_producer_defaults_follow_the_course_and_set_librdkafka_explicitly() -> None:
    cfg = ProducerConfig.from_settings({})
    assert (cfg.topic, cfg.acks, cfg.total, cfg.idempotent, cfg.max_inflight) == ("test-topic", "all", 100, True, 5)
    conf = cfg.librdkafka()
    assert conf["linger.ms"] == 0 and conf["batch.size"] == 16384 and conf["enable.idempotence"] is True
    assert conf["partitioner"] == "murmur2_random" and conf["message.timeout.ms"] == 120000
    assert conf["bootstrap.servers"] == "127.0.0.1:9092,127.0.0.1:9192,127.0.0.1:9292"
    assert conf["topic.metadata.refresh.interval.ms"] == 300000  # the Java client's metadata.max.age.ms


@pytest.mark.parametrize("name", ["producer.metadata-max-age", "metadata.max.age.ms"])
def test_how_soon_the_producer_sees_added_partitions_is_its_metadata_max_age(name: str) -> None:
    conf = ProducerConfig.from_settings({name: "2000"}).librdkafka()
    assert conf["topic.metadata.refresh.interval.ms"] == 2000


@pytest.mark.parametrize(("names", "kbytes", "max_block_ms"), [
    (("producer.buffer-memory", "producer.max-block"), 64, 3000),
    (("buffer.memory", "max.block.ms"), 64, 3000),
])
def test_the_send_buffer_is_buffer_memory_in_kbytes_and_its_wait_max_block(names: tuple[str, str], kbytes: int,
                                                                            max_block_ms: int) -> None:
    cfg = ProducerConfig.from_settings({names[0]: str(kbytes * 1024), names[1]: str(max_block_ms)})
    conf = cfg.librdkafka()
    assert conf["queue.buffering.max.kbytes"] == kbytes and cfg.max_block_ms == max_block_ms
    assert conf["queue.buffering.max.messages"] > kbytes * 1024  # bytes bind, as in the Java client's buffer


def test_the_send_buffer_defaults_are_kafkas() -> None:
    cfg = ProducerConfig.from_settings({})
    assert cfg.librdkafka()["queue.buffering.max.kbytes"] == 32768 and cfg.max_block_ms == 60000


@pytest.mark.parametrize(
    ("settings", "idempotent", "note"),
    [
        ({"producer.acks": "1"}, False, "acks != all"),
        ({"producer.acks": "-1"}, True, None),
        ({"producer.max-inflight": "6"}, False, "max-inflight > 5"),
        ({"producer.acks": "0", "producer.idempotent": "false"}, False, None),
    ],
)
def test_idempotence_rule(settings: dict[str, str], idempotent: bool, note: str | None) -> None:
    cfg = ProducerConfig.from_settings(settings)
    assert cfg.idempotent is idempotent
    assert any(note in n for n in cfg.notes) if note else not cfg.notes


def test_explicit_idempotence_with_acks_1_is_refused() -> None:
    with pytest.raises(KafkalabError, match=r"idempotent=true needs producer\.acks=all"):
        ProducerConfig.from_settings({"producer.acks": "1", "producer.idempotent": "true"})


def test_every_bad_name_and_value_is_named_in_one_line() -> None:
    with pytest.raises(KafkalabError) as info:
        ProducerConfig.from_settings({
            "producer.acks": "2", "producer.num-records-per-roll": "-5", "producer.ackz": "1",
            "consumer.topic": "x", "producer.payload-trunc": "maybe",
        })
    text = str(info.value)
    assert "\n" not in text
    for part in ("producer.acks=2", "producer.num-records-per-roll=-5 is out of range: give 1..2147483647",
                 "did you mean producer.acks", "consumer.topic is a consumer option", "payload-trunc=maybe"):
        assert part in text


def test_consumer_commit_modes() -> None:
    assert ConsumerConfig.from_settings({}).auto_commit is True
    every = ConsumerConfig.from_settings({"consumer.ack-every-x-msgs": "50"})
    assert (every.auto_commit, every.ack_every) == (False, 50)
    both = ConsumerConfig.from_settings({"consumer.ack-every-x-msgs": "50", "consumer.ack-after-batch": "true"})
    assert (both.auto_commit, both.ack_every, both.ack_after_batch) == (False, 0, True)
    static = {"consumer.instance-id": "a", "consumer.assignment-strategy": "rr"}
    conf = ConsumerConfig.from_settings(static).librdkafka()
    assert conf["group.instance.id"] == "a" and conf["partition.assignment.strategy"] == "roundrobin"
    assert conf["enable.auto.offset.store"] is False and conf["isolation.level"] == "read_uncommitted"


def test_parse_defines() -> None:
    assert parse_defines(["producer.acks=1", "producer.topic=a=b", "producer.acks=0"]) == {
        "producer.acks": "0", "producer.topic": "a=b"}
    with pytest.raises(KafkalabError, match="not name=value"):
        parse_defines(["producer.acks"])


@pytest.mark.parametrize(("text", "flag", "message"), [
    ("producer.acks", "-D", "-D 'producer.acks' is not name=value: write e.g. -D producer.acks=1"),
    ("=1", "", "'=1' is not name=value: write e.g. producer.acks=1"),
    ("spark.executor.memory= ", "--spark-conf", "--spark-conf 'spark.executor.memory= ' is not name=value"),
])
def test_name_value_refuses_other_forms_in_one_shape(text: str, flag: str, message: str) -> None:
    with pytest.raises(KafkalabError) as caught:
        name_value(text, flag, "producer.acks=1", need_value=True)
    assert str(caught.value).startswith(message)


def test_name_value_strips_and_keeps_an_empty_value_unless_one_is_needed() -> None:
    assert name_value(" producer.acks = all ", "", "producer.acks=all") == ("producer.acks", "all")
    assert name_values(["ssl.endpoint.identification.algorithm="], "--set", "x=1") == {
        "ssl.endpoint.identification.algorithm": ""}


def test_throughput_skips_samples_closer_than_the_gap_and_keeps_the_last_points() -> None:
    sampler = ThroughputSampler()
    sampler.add(1.0, 0)
    sampler.add(1.2, 50)  # 0.2 s after the last kept sample: no point, and it is not the new base
    sampler.add(1.5, 100)
    sampler.add(2.0, 90)  # a count going back (a new producer) reads as 0/s, not negative
    assert sampler.points == ((1.5, 200.0), (2.0, 0.0))
    for i in range(THROUGHPUT_POINTS + 10):
        sampler.add(3.0 + i / 2, 5 * i)
    assert len(sampler.points) == THROUGHPUT_POINTS and sampler.points[-1] == (307.5, 10.0)
    sampler.clear()
    sampler.add(700.0, 5)
    assert sampler.points == ()


def test_payload_log_is_partial_until_closed_and_appends_keep_rows(tmp_path: Path) -> None:
    path = tmp_path / "producer.csv"
    log = PayloadLog(path, PRODUCER_COLUMNS)
    log.writerow(["r:p:0", 0, "t", 1, 5, 0, "acked", "", 1, 'say "hi", then go'])
    log.flush()
    assert not path.exists() and log.partial.exists()
    assert log.close() == path and not log.partial.exists()
    log = PayloadLog(path, PRODUCER_COLUMNS, truncate=False)  # the course appends by default
    log.writerow(["r:p:7", 7, "t", 1, 6, 1, "acked", "", 2, "x"])
    assert log.close(complete=False).name == "producer.csv.partial" and not path.exists()
    assert log_files(tmp_path, "producer") == [log.partial]
    with open(log.partial, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["value"] for r in rows] == ['say "hi", then go', "x"]
    assert max_seq(path) == 7


def test_seed_export_merges_instances_and_sorts(tmp_path: Path) -> None:
    run = tmp_path / "run"
    rows = {
        "producer.csv": (PRODUCER_COLUMNS, [
            ["r:p:1", 1, "t", 1, 0, 1, "acked", "", 0, "b, with comma"],
            ["r:p:0", 0, "t", 0, 0, 0, "acked", "", 0, '"quoted"'],
            ["r:p:2", 2, "t", 0, -1, 2, "failed", "NOT_ENOUGH_REPLICAS", 0, "lost"],
        ]),
        "consumer-1.csv.partial": (
            CONSUMER_COLUMNS, [["r:p:1", "consumer-1", "t", 1, 0, 1, 0, 0, "b, with comma", "g"]]),
        "consumer-2.csv": (CONSUMER_COLUMNS, [["r:p:0", "consumer-2", "t", 0, 0, 0, 0, 0, '"quoted"', "g"]]),
        "audit.csv": (CONSUMER_COLUMNS, [["r:p:9", "audit", "t", 0, 9, 9, 0, 0, "not a consumer", ""]]),
    }
    run.mkdir()
    for name, (columns, data) in rows.items():
        with open(run / name, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(columns)
            w.writerows(data)
    prod, cons, n_prod, n_cons = export_seed_format(run, tmp_path / "seed")
    expected = 't,0,0,"quoted"\nt,1,1,b, with comma\n'
    assert prod.read_text() == expected == cons.read_text()
    assert (n_prod, n_cons) == (2, 2)


def test_corpus_has_hundreds_of_lines_with_commas_and_quotes_and_seeded_picks() -> None:
    lines = corpus_lines()
    assert len(lines) >= 200 and len(set(lines)) == len(lines)
    assert sum("," in line for line in lines) > 20 and sum('"' in line for line in lines) > 20
    a, b = ValuePicker(7), ValuePicker(7)
    assert [a.next_bytes() for _ in range(50)] == [b.next_bytes() for _ in range(50)]


def test_consumed_rows_are_rfc4180_lines_with_the_offsets_after_each_partition() -> None:
    def record(partition: int, offset: int, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes]] | None) -> Message:
        return Message(topic="t", partition=partition, offset=offset, key=key, value=value, headers=headers,
                       timestamp=(1, 1000 + offset))

    batch = [
        record(1, 5, (7).to_bytes(4, "big"), b'he said, "hi"', [("kafkalab-msg-id", b"r:producer:1")]),
        record(2, 9, None, None, None),
        record(1, 6, b"k,y", b"quit", [("other", b"x"), ("kafkalab-msg-id", b"r:producer:2")]),
    ]
    rows = ConsumedRows("consumer-1", "t", "group, one")
    formatted = rows.format(batch)
    assert formatted is not None
    text, ends = formatted
    parsed = list(csv.DictReader([",".join(CONSUMER_COLUMNS), *text.splitlines()]))
    assert [(r["msg_id"], r["partition"], r["offset"], r["key"], r["value"], r["group"]) for r in parsed] == [
        ("r:producer:1", "1", "5", "7", 'he said, "hi"', "group, one"),
        ("", "2", "9", "", "", "group, one"),
        ("r:producer:2", "1", "6", "k,y", "quit", "group, one"),
    ]
    assert ends == {1: 7, 2: 10}
    assert rows.format(batch, frozenset([b"quit"])) is None  # a control word: the caller goes record by record
    assert rows.line(batch[0]) == text.splitlines(keepends=True)[0]
