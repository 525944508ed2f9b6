"""The processor on the real session cluster: killed in mid-batch, at-least-once writes duplicates to its output
topic, exactly once (``processor.transaction-id``) none that a read_committed consumer sees.

One run each: 60 records on a 3-partition input, the processor (batches of 20, 100 ms a record) killed some five
records into its second batch, started again (its group's dead member gone after a 6 s session), and a consumer
of the 1-partition output reading up to a ``quit`` sent once the processor stopped: it read everything before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalab.clients.consumer import Consumer
from kafkalab.clients.control_words import send_control
from kafkalab.clients.processor import Processor
from kafkalab.clients.stats import ClientEvent
from kafkalab.cluster import Cluster
from kafkalab.errors import KafkalabError
from tests.helpers import wait_until
from tests.test_clients_cluster import rows, run_producer, start_consumer
from tests.test_hanging_txn_lab import state_of

pytestmark = pytest.mark.cluster

RECORDS = 60
BATCH = "20"


def _input(cluster: Cluster, tmp_path: Path, source: str) -> None:
    """The input topic's RECORDS records, all acknowledged."""
    producer = run_producer(cluster.bootstrap, tmp_path, {
        "producer.topic": source, "producer.num-records-per-roll": str(RECORDS), "producer.payload-trunc": "true"})
    assert producer.join(60) and producer.stats().acked == RECORDS


def _crash_running(*clients: Processor | Consumer) -> None:
    """A test's end, passed or not: no client of it left running."""
    for client in clients:
        if client.running:
            client.crash()
            client.join(10)


def _processor(cluster: Cluster, tmp_path: Path, settings: dict[str, str], events: list[ClientEvent]) -> Processor:
    processor = Processor(settings, tmp_path, cluster.bootstrap, on_event=events.append)
    processor.start()
    return processor


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_a_processor_killed_mid_batch_duplicates_its_output_unless_transactional(
        exactly_once: bool, cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    source, sink = topic_factory(partitions=3), topic_factory(partitions=1)  # one output partition: quit read last
    _input(cluster, tmp_path, source)
    mode = ({"processor.transaction-id": f"{source}-txn", "processor.records-per-transaction": BATCH}
            if exactly_once else {"processor.max-poll-recs": BATCH})
    settings = {"processor.input-topic": source, "processor.output-topic": sink, "processor.group-id": source,
                "processor.wait-after-record": "100", "processor.session-timeout": "6000",
                "processor.poll-period": "200", **mode}
    events: list[ClientEvent] = []
    first = _processor(cluster, tmp_path, settings, events)
    # in its second batch (the first committed), with records of it sent
    wait_until(lambda: (s := first.stats()).received >= 25 and (s.transactions_committed or not exactly_once), 90,
               0.05, "the second batch")
    first.crash()
    assert first.join(30) and first.stats().state == "crashed"
    assert first.stats().transactions_open == int(exactly_once)

    again = _processor(cluster, tmp_path, settings, events)
    downstream = start_consumer(cluster.bootstrap, tmp_path, {
        "consumer.topic": sink, "consumer.group-id": f"{sink}-reader", "consumer.auto-offset-reset": "earliest",
        "consumer.isolation-level": "read_committed" if exactly_once else "read_uncommitted",
        "consumer.local-id": "1"})
    try:
        wait_until(lambda: (s := again.stats()).assignment and set(s.assignment) <= set(s.lag) and s.total_lag == 0
                   and s.received, 90, 0.2, "the input processed")
        again.stop()
        assert again.join(60) and again.stats().state == "finished", again.stats().error
        wait_until(lambda: downstream.stats().assignment, 60, 0.2, "the downstream consumer assigned")
        send_control(cluster.bootstrap, sink, "quit")
        assert downstream.join(60) and downstream.stats().state == "finished"
    finally:
        _crash_running(again, downstream)

    sent = {r["msg_id"] for r in rows(tmp_path / "producer.csv")}
    read = Counter(r["msg_id"] for r in rows(tmp_path / "consumer-1.csv"))
    assert set(read) == sent  # every record reached the output, its message id kept
    produced = rows(tmp_path / "producer-processor.csv")  # both instances': the second appended and closed it
    consumed = rows(tmp_path / "consumer-processor.csv")
    values = {r["msg_id"]: r["value"] for r in rows(tmp_path / "producer.csv")}
    assert all(r["value"] == values[r["msg_id"]].upper() for r in produced)
    assert {r["topic"] for r in produced} == {sink} and {r["topic"] for r in consumed} == {source}
    redone = [m for m, n in Counter(r["msg_id"] for r in consumed).items() if n > 1]
    assert redone  # the killed batch was read again either way
    # one row per message, acked, whatever was sent twice: a producer log's contract, which the analysis reads
    assert sorted(r["msg_id"] for r in produced if r["status"] == "acked") == sorted(sent) == sorted(
        r["msg_id"] for r in produced)
    if exactly_once:
        assert sorted(read.elements()) == sorted(sent)  # none twice
    else:
        twice = {m for m, n in read.items() if n > 1}
        assert twice and twice <= set(redone)  # sent again after the crash: read at two offsets


def test_a_paused_processor_says_paused_hangs_and_carries_on_when_resumed(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    """SIGSTOP, as a long GC pause leaves a process: a stopped process reports nothing, so its pane must not show
    its last report's RUNNING and rate; resumed within its session, it processes the rest."""
    source, sink = topic_factory(partitions=3), topic_factory(partitions=1)
    _input(cluster, tmp_path, source)
    events: list[ClientEvent] = []
    processor = _processor(cluster, tmp_path, {
        "processor.input-topic": source, "processor.output-topic": sink, "processor.group-id": source,
        "processor.wait-after-record": "100", "processor.max-poll-recs": BATCH, "processor.session-timeout": "30000"},
        events)
    try:
        wait_until(lambda: processor.stats().received >= 10, 90, 0.05, "records processed")
        processor.pause()
        pid = processor.pid
        assert pid is not None
        wait_until(lambda: state_of(pid) == "T", 10, 0.02, "the process stopped")
        paused = processor.stats()
        assert (paused.state, paused.rate) == ("paused", 0.0) and processor.paused
        with pytest.raises(KafkalabError, match="processor is not running: nothing to pause"):
            Processor({}, tmp_path).pause()  # never started: nothing to pause
        processor.resume()
        wait_until(lambda: processor.stats().received == RECORDS, 90, 0.2, "the rest processed after the resume")
        assert processor.stats().state == "running" and not processor.paused
        processor.stop()
        assert processor.join(60) and processor.stats().state == "finished"
    finally:
        _crash_running(processor)


def test_a_paused_transactional_processor_is_fenced_by_its_replacement_and_ends_when_it_wakes(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    """A zombie: paused in the middle of a batch, replaced by an instance of the same transactional id (whose
    init_transactions fences it and aborts its open transaction), then woken. Its next call is refused and it ends,
    saying it was fenced; its half batch never logged as produced."""
    source, sink = topic_factory(partitions=3), topic_factory(partitions=1)
    _input(cluster, tmp_path, source)
    settings = {"processor.input-topic": source, "processor.output-topic": sink, "processor.group-id": source,
                "processor.wait-after-record": "100", "processor.session-timeout": "6000",
                "processor.transaction-id": f"{source}-txn", "processor.records-per-transaction": BATCH}
    events: list[ClientEvent] = []
    zombie = _processor(cluster, tmp_path, settings, events)
    replacement = Processor(settings, tmp_path, cluster.bootstrap, on_event=events.append, log_name="processor.2")
    try:
        wait_until(lambda: zombie.stats().uncommitted >= 3, 90, 0.05, "output of a batch in hand acknowledged")
        zombie.pause()
        replacement.start()
        wait_until(lambda: replacement.stats().assignment, 90, 0.2, "the replacement assigned")
        zombie.resume()
        assert zombie.join(60)
        ended = zombie.stats()
        assert (ended.state, ended.fenced) == ("failed", True), [e.detail for e in events if e.kind == "error"]
        assert ended.error is not None and ended.error.startswith("fenced: a newer instance of transactional id")
        wait_until(lambda: (s := replacement.stats()).received == RECORDS and not s.transactions_open, 90, 0.2,
                   "the replacement processed every record")
        replacement.stop()
        assert replacement.join(60) and replacement.stats().state == "finished"
    finally:
        _crash_running(zombie, replacement)
    produced = {r["msg_id"] for r in rows(tmp_path / "producer-processor.csv.partial")}
    assert len(produced) == zombie.stats().transactions_committed * int(BATCH)  # its half batch: no rows
