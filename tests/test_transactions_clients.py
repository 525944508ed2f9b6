"""Transactions in kafkalab's own clients: ``producer.transaction-id`` and ``consumer.isolation-level``.

The options' rules are checked alone; the rest runs on the real session cluster, one topic per test. A
transactional producer's record is acked only once its transaction committed; a stopped producer aborts its open
transaction (its records failed, ABORTED); a crashed one leaves it open: a read_committed consumer stops short of
it, a read_uncommitted one reads it, and `kafkalab txn list` says Ongoing.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from kafkalab.clients.consumer import Consumer
from kafkalab.clients.control_words import send_control
from kafkalab.clients.options import ConsumerConfig, OptionsConflict, OptionsError, ProducerConfig
from kafkalab.clients.stats import HELD_SHOWN_AFTER_S, ClientEvent, ClientState, ProducerStats
from kafkalab.cluster import Cluster
from kafkalab.labs.metrics import consumer_metrics
from kafkalab.logformat import ABORTED
from kafkalab.ui.consumers import consumer_row
from kafkalab.ui.line import Line, flow
from kafkalab.ui.producer import ProducerPane, transactions_parts
from tests.helpers import wait_until
from tests.test_clients_cluster import drain, rows, run_producer, start_consumer
from tests.test_txn_cli import txn_states

# a crashed producer's transaction stays open longer than the test, on a loaded machine too (test_txn_cli's)
OPEN_TIMEOUT_MS = "300000"


# ---- the options --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("settings", "named"), [
    ({"producer.transaction-id": "t", "producer.acks": "1"}, "producer.acks=1"),
    ({"transactional.id": "t", "acks": "0"}, "producer.acks=0"),
    ({"producer.transaction-id": "t", "producer.max-inflight": "6"}, "producer.max-inflight=6"),
    ({"producer.transaction-id": "t", "enable.idempotence": "false"}, "producer.idempotent=false"),
])
def test_a_transaction_id_without_idempotence_is_a_one_line_conflict(settings: dict[str, str], named: str) -> None:
    with pytest.raises(OptionsConflict) as exc:
        ProducerConfig.from_settings(settings)
    text = str(exc.value)
    assert "\n" not in text and text.startswith("producer.transaction-id needs idempotence") and named in text
    assert exc.value.names[0] == "producer.transaction-id" and named.split("=")[0] in exc.value.names


@pytest.mark.parametrize("name", ["producer.records-per-transaction", "transaction.timeout.ms"])
def test_a_transactions_setting_without_a_transaction_id_is_a_conflict(name: str) -> None:
    with pytest.raises(OptionsConflict) as exc:
        ProducerConfig.from_settings({name: "5000"})
    assert "\n" not in str(exc.value) and "give producer.transaction-id too" in str(exc.value)
    assert ProducerConfig.from_settings({name: "5000", "transactional.id": "t"}).transactional  # together: fine


def test_transaction_settings_reach_librdkafka_and_ranges_are_librdkafkas() -> None:
    plain = ProducerConfig.from_settings({})
    assert not plain.transactional and "transactional.id" not in plain.librdkafka()
    config = ProducerConfig.from_settings({"producer.transaction-id": "pay", "producer.transaction-timeout": "10000",
                                           "producer.records-per-transaction": "7"})
    conf = config.librdkafka()
    assert (config.records_per_transaction, config.idempotent) == (7, True)
    assert (conf["transactional.id"], conf["transaction.timeout.ms"], conf["enable.idempotence"]) == ("pay", 10000,
                                                                                                      True)
    assert conf["message.timeout.ms"] == 10000  # librdkafka refuses one above transaction.timeout.ms
    assert config.delivery_timeout_ms == 120000 and not config.notes  # the Java client's, kept
    with pytest.raises(OptionsError) as exc:
        ProducerConfig.from_settings({"producer.transaction-id": "pay", "producer.transaction-timeout": "999"})
    assert not isinstance(exc.value, OptionsConflict) and "give 1000..2147483647" in str(exc.value)


def test_isolation_level_is_always_set_for_librdkafka() -> None:
    # librdkafka's own default is read_committed; the Java client's, the course's, is read_uncommitted
    assert ConsumerConfig.from_settings({}).librdkafka()["isolation.level"] == "read_uncommitted"
    committed = ConsumerConfig.from_settings({"isolation.level": "read_committed"})
    assert committed.isolation_level == "read_committed" and committed.librdkafka()["isolation.level"] == (
        "read_committed")
    with pytest.raises(OptionsError) as exc:
        ConsumerConfig.from_settings({"consumer.isolation-level": "committed"})
    assert "is not one of read_uncommitted, read_committed" in str(exc.value)


# ---- on the cluster -----------------------------------------------------------------------------------------
def txn_producer(topic: str, transaction_id: str, **more: str) -> dict[str, str]:
    return {"producer.topic": topic, "producer.transaction-id": transaction_id, "producer.payload-trunc": "true",
            **more}


def reader(cluster: Cluster, tmp_path: Path, topic: str, level: str, local_id: int,
           events: list[ClientEvent] | None = None) -> Consumer:
    return start_consumer(cluster.bootstrap, tmp_path, {
        "consumer.topic": topic, "consumer.group-id": f"{topic}-{level}", "consumer.auto-offset-reset": "earliest",
        "consumer.isolation-level": level, "consumer.local-id": str(local_id)}, events)


def read_all(consumer: Consumer, count: int, tmp_path: Path) -> list[dict[str, str]]:
    """``consumer``'s rows once it processed ``count`` records and closed."""
    try:
        drain(consumer, count)
    finally:
        consumer.stop()
    assert consumer.join(60) and consumer.stats().state == "finished"
    return rows(tmp_path / f"{consumer.name}.csv")


@pytest.mark.cluster
def test_transactions_of_50_are_acked_once_committed_and_read_committed_reads_them_all(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=3)
    producer = run_producer(cluster.bootstrap, tmp_path, txn_producer(
        topic, f"{topic}-txn", **{"producer.num-records-per-roll": "150", "producer.records-per-transaction": "50"}))
    assert producer.join(120)
    stats = producer.stats()
    assert stats.state == "finished", stats.error
    assert (stats.acked, stats.failed_total, stats.unknown, stats.transactional) == (150, 0, 0, True)
    assert (stats.transactions_committed, stats.transactions_aborted, stats.transactions_open) == (3, 0, 0)
    produced = rows(tmp_path / "producer.csv")
    assert len(produced) == 150 and {r["status"] for r in produced} == {"acked"}
    # each transaction ended with a commit marker on every partition it wrote: offsets its records do not use
    by_partition = Counter(r["partition"] for r in produced)
    highest = {p: max(int(r["offset"]) for r in produced if r["partition"] == p) for p in by_partition}
    assert all(highest[p] + 1 > count for p, count in by_partition.items())
    consumed = read_all(reader(cluster, tmp_path, topic, "read_committed", 1), 150, tmp_path)
    assert sorted(r["msg_id"] for r in consumed) == sorted(r["msg_id"] for r in produced)


@pytest.mark.cluster
def test_a_stopped_producer_aborts_its_open_transaction(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=1)  # one partition: a `quit` record after it all is read last
    producer = run_producer(cluster.bootstrap, tmp_path, txn_producer(
        topic, f"{topic}-txn", **{"producer.num-records-per-roll": "100", "producer.records-per-transaction": "50",
                                  "producer.wait-after-send": "50"}))
    wait_until(lambda: producer.stats().transactions_committed == 1 and producer.stats().uncommitted >= 10, 90,
               0.05, "the second transaction under way")
    producer.stop()
    assert producer.join(60)
    stats = producer.stats()
    assert stats.state == "finished", stats.error
    assert (stats.transactions_committed, stats.transactions_aborted, stats.transactions_open) == (1, 1, 0)
    produced = rows(tmp_path / "producer.csv")  # complete: a stop closes the log
    acked = [r for r in produced if r["status"] == "acked"]
    aborted = [r for r in produced if r["status"] != "acked"]
    assert [int(r["seq"]) for r in acked] == list(range(50)) and stats.acked == 50
    assert aborted and {(r["status"], r["error"]) for r in aborted} == {("failed", "ABORTED")}
    assert [int(r["seq"]) for r in aborted] == list(range(50, 50 + len(aborted)))
    assert stats.failed == {"ABORTED": len(aborted)} and len(aborted) >= 10
    # the abort marker lets read_committed past the aborted records: it reads the committed 50, then `quit`
    consumer = reader(cluster, tmp_path, topic, "read_committed", 1)
    wait_until(lambda: consumer.stats().assignment, 90, 0.2, "consumer assigned")
    send_control(cluster.bootstrap, topic, "quit")
    assert consumer.join(90) and consumer.stats().state == "finished"
    consumed = rows(tmp_path / "consumer-1.csv")
    assert sorted(r["msg_id"] for r in consumed) == sorted(r["msg_id"] for r in acked)


@pytest.mark.cluster
def test_a_crashed_producer_leaves_its_transaction_open_and_read_committed_stops_short_of_it(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=3)
    transaction_id = f"{topic}-txn"
    producer = run_producer(cluster.bootstrap, tmp_path, txn_producer(
        topic, transaction_id, **{"producer.num-records-per-roll": "100", "producer.records-per-transaction": "50",
                                  "producer.wait-after-send": "50", "producer.transaction-timeout": OPEN_TIMEOUT_MS}))
    wait_until(lambda: producer.stats().transactions_committed == 1 and producer.stats().uncommitted >= 10, 90,
               0.05, "the second transaction under way")
    producer.crash()
    assert producer.join(60)
    stats = producer.stats()
    assert stats.state == "crashed" and stats.transactions_open == 1 and stats.transactions_committed == 1
    written = stats.uncommitted  # records of the open transaction the brokers acknowledged before the crash
    assert written >= 10
    produced = rows(tmp_path / "producer.csv.partial")
    assert [(int(r["seq"]), r["status"]) for r in produced[:50]] == [(seq, "acked") for seq in range(50)]
    # the open transaction's records, logged as its coordinator will end it: unlogged, a read_uncommitted
    # consumer's copies of them counted as records nobody sent ("a harness bug"), not as aborted ones
    left_open = produced[50:]
    assert len(left_open) >= written and all((r["status"], r["error"]) == ("failed", ABORTED) for r in left_open)
    assert txn_states(cluster).get(transaction_id) == "Ongoing"  # left to its coordinator's timeout

    told: list[ClientEvent] = []
    uncommitted = reader(cluster, tmp_path, topic, "read_uncommitted", 1)
    committed = reader(cluster, tmp_path, topic, "read_committed", 2, told)
    try:
        drain(uncommitted, 50 + written)
        drain(committed, 50)
        # read_uncommitted read past where read_committed waits: give read_committed as long again to read on
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            assert committed.stats().processed == 50
            time.sleep(0.2)
        # and it says why: held at the last stable offset, the open transaction past it
        wait_until(lambda: committed.stats().held_s >= HELD_SHOWN_AFTER_S, 30, 0.1, "read_committed held")
        assert committed.stats().state == ClientState.RUNNING
        assert "held" in consumer_row(committed.stats())["state"].plain
        assert uncommitted.stats().held == {} and uncommitted.stats().lso_wait_s is None
    finally:
        for consumer in (uncommitted, committed):
            consumer.stop()
    for consumer in (uncommitted, committed):
        assert consumer.join(60)
    waited = committed.stats().lso_wait_s
    assert waited is not None and waited >= HELD_SHOWN_AFTER_S and committed.stats().held == {}
    # told on the timeline: each partition's hold once, then its end (the longest wait named)
    held = [p for e in told if e.kind == "held" for p in e.partitions]
    released = [e for e in told if e.kind == "released"]
    assert held and sorted(held) == sorted(p for e in released for p in e.partitions)
    assert any(f"waited {waited:.1f}s behind an open transaction" == e.detail for e in released)
    metrics = consumer_metrics({1: [uncommitted.stats()], 2: [committed.stats()]}, {1: "u", 2: "c"})
    assert metrics["consumer.2.lso_wait_s"] == waited and "consumer.1.lso_wait_s" not in metrics
    acked = {r["msg_id"] for r in produced[:50]}
    read_committed = [r["msg_id"] for r in rows(tmp_path / "consumer-2.csv")]
    read_uncommitted = {r["msg_id"] for r in rows(tmp_path / "consumer-1.csv")}
    assert sorted(read_committed) == sorted(acked)
    opened = read_uncommitted - acked  # the open transaction's records, never acked
    assert len(opened) >= written and all(int(m.rsplit(":", 1)[1]) >= 50 for m in opened)
    assert opened <= {r["msg_id"] for r in left_open}


# ---- the producer pane ------------------------------------------------------------------------------------------
def pane_lines(stats: list[ProducerStats]) -> list[tuple[bool, str]]:
    """The pane's transactions line after each of ``stats``: (shown, its text)."""

    class PaneApp(App[None]):
        def compose(self) -> ComposeResult:
            yield ProducerPane()

    async def run() -> list[tuple[bool, str]]:
        seen = []
        async with PaneApp().run_test(size=(100, 12)) as pilot:
            for s in stats:
                pilot.app.query_one(ProducerPane).show(s, {}, [])
                await pilot.pause()
                line = pilot.app.query_one("#producer-transactions", Line)
                seen.append((line.display, str(line.render())))
        return seen

    return asyncio.run(run())


def test_the_producer_pane_shows_transactions_for_a_transactional_producer_only() -> None:
    plain = ProducerStats(name="producer", state=ClientState.RUNNING, attempted=10, acked=10, failed={}, unknown=0,
                          in_flight=0, rate=0.0, total=100)
    txn = replace(plain, transactional=True, transactions_committed=3, transactions_aborted=1, transactions_open=1,
                  uncommitted=37)
    (hidden, _), (shown, text), (again, _) = pane_lines([plain, txn, plain])
    assert not hidden and shown and not again
    assert " ".join(text.split()) == "transactions 3 committed 1 aborted open, 37 written"
    assert " ".join(flow(transactions_parts(replace(txn, transactions_open=0)), 80).plain.split()) == (
        "transactions 3 committed 1 aborted")


@pytest.mark.cluster
def test_a_transaction_whose_record_failed_is_aborted_and_the_next_goes_on(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    # every batch of records refused (the smallest is over 130 bytes), not the abort markers (under 80): with those
    # refused too the coordinator would never finish the abort, and the next transaction would wait for it
    topic = topic_factory(partitions=1, configs={"max.message.bytes": "120"})
    events: list[ClientEvent] = []
    producer = run_producer(cluster.bootstrap, tmp_path, txn_producer(
        topic, f"{topic}-txn", **{"producer.num-records-per-roll": "20", "producer.records-per-transaction": "10"}),
        events=events)
    assert producer.join(120)
    stats = producer.stats()
    assert stats.state == "finished", stats.error
    assert stats.acked == 0 and stats.transactions_committed == 0 and stats.transactions_aborted >= 2
    produced = rows(tmp_path / "producer.csv")
    assert [int(r["seq"]) for r in produced] == list(range(20))
    assert {(r["status"], r["error"], r["partition"], r["offset"]) for r in produced} == {
        ("failed", "ABORTED", "0", "-1")}  # never written: no offset
    assert stats.failed == {"ABORTED": 20} and all(int(r["ts_ms"]) > 0 for r in produced)
    said = [e.detail for e in events if e.kind == "error" and e.detail.startswith("transaction aborted")]
    assert said and "MSG_SIZE_TOO_LARGE" in said[0], [e.detail for e in events]
