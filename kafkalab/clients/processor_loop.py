"""The processor's consume-transform-produce loop, run as ``python -m kafkalab.clients.processor_loop`` by
``Processor``.

Each polled batch is read from the input topic, every record logged as consumed (the consumer log format) and
sent to the output topic upper-cased, with its message id kept; then the batch is committed:

- at-least-once (no ``processor.transaction-id``): the output flushed (each record logged as its delivery report
  says), then the input offsets committed by the consumer. A processor killed between the two reads the batch
  again when it restarts: its records reach the output twice.
- exactly once (``processor.transaction-id``): the batch's output and its input offsets
  (``send_offsets_to_transaction``) in one transaction; its records are logged ``acked`` once it committed;
  when it aborted, the input is read again from the committed offsets (a stopping processor's are logged
  ``failed`` ``ABORTED``). A killed processor's open transaction is aborted when the next one of the same id
  starts (it fences the old one).

The produced log has one row per message id (:mod:`~kafkalab.clients.processor_logs`). Control records
(``quit``, ``crash``, ``wait``) are neither forwarded nor logged: a processor does not obey them.
Spoken to as ``child_io`` describes: the spec is the validated config's fields and the log dir; ``stop`` ends
after the record in hand, what of the batch was processed committed; ``end`` (a stopped run's) ends without
waiting on the brokers (nothing committed, an open transaction aborted); a crash is the parent's SIGKILL.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka import Consumer as _RdConsumer
from confluent_kafka import Producer as _RdProducer

from kafkalab.clients.child_io import Sink, event_item, serve
from kafkalab.clients.consumer_loop import poll_records
from kafkalab.clients.control_words import CONTROL_WORDS
from kafkalab.clients.lag_watch import LagWatch
from kafkalab.clients.options import ProcessorConfig
from kafkalab.clients.payload_log import ConsumedRows, PayloadLog, csv_field, key_text
from kafkalab.clients.preflight import base_conf, check_topic, consumer_conf
from kafkalab.clients.processor_logs import consumed_log_path, logged_ids, produced_log_path
from kafkalab.clients.stats import ClientState, RateMeter
from kafkalab.errors import KafkalabError
from kafkalab.logformat import ABORTED, CONSUMER_COLUMNS, MSG_ID_HEADER, PRODUCER_COLUMNS

_CONTROL = frozenset(w.encode() for w in CONTROL_WORDS)
_STATS_EVERY_S = 0.25
_TXN_CALL_S = 5.0  # a transaction call's own timeout, retried while retriable
_TXN_DEADLINE_S = 60.0  # a transaction call retried this long at most
_FLUSH_S = 30.0  # at-least-once: the batch's deliveries awaited this long before its offsets are committed
# a newer instance of the same transactional id took over (its init_transactions bumped the epoch)
_FENCED = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})


def is_fenced(err: KafkaError) -> bool:
    """Whether ``err`` says this producer was fenced (librdkafka raises it as a fatal error)."""
    return err.code() in _FENCED or (err.fatal() and "fence" in err.str().lower())


def transform(value: bytes | None) -> bytes | None:
    """What the processor makes of a record's value: upper-cased."""
    return None if value is None else value.upper()


@dataclass
class _Out:
    """A record sent to the output: its row's fields, the delivery report's part once it came."""

    msg_id: str
    key: bytes | None
    value: bytes | None
    partition: int = -1
    offset: int = -1
    ts: int = 0
    error: str = ""  # the delivery's error name; "" until it failed


class ProcessorLoop:
    """Reads, transforms and writes; commits each batch as its mode says."""

    def __init__(self, config: ProcessorConfig, log_dir: Path, sink: Sink, log_name: str | None = None) -> None:
        self.cfg = config
        self.name = config.name
        self._log_name = log_name or config.name
        self._log_dir = Path(log_dir)
        self._sink = sink
        self.stop_requested = threading.Event()
        self.end_requested = False  # the run was stopped: no waiting on the brokers
        self.state: ClientState = ClientState.STARTING
        self.received = 0  # records consumed (logged to the consumed log)
        self.produced = 0  # records acknowledged on the output (at commit, exactly once)
        self.failed = 0
        self.txn_committed = 0
        self.txn_aborted = 0
        self.txn_open = False
        self.fenced = False  # a newer instance of its transactional id took over: it had to end
        self.uncommitted = 0  # output records of the batch in hand the brokers acknowledged, its offsets not committed
        self.assignment: set[int] = set()
        self.lag: dict[int, int] = {}
        self.held: dict[int, float] = {}  # input partition -> seconds waited so far at the LSO (read_committed)
        self._position: dict[int, int] = {}
        self._meter = RateMeter()
        self._rows = ConsumedRows(config.name, config.topic, config.group_id)
        self._in_log: PayloadLog | None = None
        self._out_log: PayloadLog | None = None
        self._batch: dict[int, _Out] = {}  # records sent and not yet logged, by their index
        self._logged: set[str] = set()  # the message ids the produced log has a row of: one row each
        self._sent = 0
        self._last_error: dict[str, float] = {}

    # -- reporting ------------------------------------------------------------------------------------------
    def event(self, kind: str, detail: str = "", partitions: list[int] | tuple[int, ...] = ()) -> None:
        self._sink(event_item(kind, detail, partitions))

    def report_stats(self) -> None:
        self._meter.sample(self.produced)
        done = self.state == ClientState.FINISHED
        self._sink({
            "t": "stats", "state": self.state, "received": self.received, "produced": self.produced,
            "failed": self.failed, "rate": self._meter.rate(), "assignment": sorted(self.assignment),
            "lag": dict(self.lag), "held": dict(self.held), "txn_committed": self.txn_committed,
            "txn_aborted": self.txn_aborted, "txn_open": int(self.txn_open), "fenced": self.fenced,
            "uncommitted": self.uncommitted,
            "log_paths": [str(log.path if done else log.partial) for log in (self._in_log, self._out_log) if log],
        })

    def _error(self, text: str) -> None:
        kind = text.split(":", 1)[0]
        now = time.monotonic()
        if now - self._last_error.get(kind, -1e9) >= 10:  # one line per kind per 10 s
            self._last_error[kind] = now
            self.event("error", text)

    # -- librdkafka callbacks -------------------------------------------------------------------------------
    def _on_assign(self, _consumer: _RdConsumer, partitions: list[TopicPartition]) -> None:
        self.assignment.update(p.partition for p in partitions)
        self.event("assigned", f"now {sorted(self.assignment)}", [p.partition for p in partitions])

    def _on_revoke(self, _consumer: _RdConsumer, partitions: list[TopicPartition]) -> None:
        for p in partitions:
            self.assignment.discard(p.partition)
            self._position.pop(p.partition, None)
            self.lag.pop(p.partition, None)
        self.event("revoked", f"now {sorted(self.assignment)}", [p.partition for p in partitions])

    def _on_delivery(self, index: int, out: _Out, err: KafkaError | None, msg: Message) -> None:
        """At-least-once: the record's row, as the report says; exactly once: kept until its transaction ends."""
        partition = msg.partition()
        out.partition = -1 if partition is None else partition
        if err is None:
            offset = msg.offset()
            out.offset = offset if offset is not None and offset >= 0 else -1
            out.ts = msg.timestamp()[1]
            self.uncommitted += 1
        else:
            out.error = err.name()
        if not self.cfg.transactional:
            self._batch.pop(index, None)
            self._write_row(out, "failed" if out.error else "acked", out.error)

    # -- the loop -------------------------------------------------------------------------------------------
    def run(self) -> int:
        cfg = self.cfg
        check_topic(cfg.bootstrap, cfg.topic)
        check_topic(cfg.bootstrap, cfg.output_topic)
        self._in_log = PayloadLog(consumed_log_path(self._log_dir, self._log_name), CONSUMER_COLUMNS,
                                  truncate=cfg.payload_trunc)
        out_path = produced_log_path(self._log_dir, self._log_name)
        self._logged = set() if cfg.payload_trunc else logged_ids(out_path)
        self._out_log = PayloadLog(out_path, PRODUCER_COLUMNS, truncate=cfg.payload_trunc)
        consumer_settings, producer_settings = cfg.librdkafka()
        conf = consumer_conf(consumer_settings)
        producer = _RdProducer({**base_conf(producer_settings), "error_cb": self._on_global_error})
        if cfg.transactional:
            self._transaction_call(lambda: producer.init_transactions(_TXN_CALL_S), "init_transactions")
        consumer = _RdConsumer({**conf, "error_cb": self._on_global_error})
        consumer.subscribe([cfg.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                           on_lost=self._on_revoke)
        self.state = ClientState.RUNNING
        mode = f"exactly once as {cfg.transaction_id}" if cfg.transactional else "at-least-once"
        self.event("started", f"{cfg.topic} -> {cfg.output_topic}, group {cfg.group_id}, {mode}")
        lag_done = threading.Event()
        watch = LagWatch(conf, cfg.consumer(), self.assignment, self._position, self.lag, self.held, self.event)
        lag_thread = threading.Thread(target=watch.run, args=(lag_done, _STATS_EVERY_S), name="kafkalab-lag",
                                      daemon=True)
        lag_thread.start()
        try:
            while not self.stop_requested.is_set():
                batch = self._poll(consumer)
                if batch:
                    self._process(consumer, producer, batch)
        finally:
            lag_done.set()
        if not self.end_requested:
            lag_thread.join()
            self.state = ClientState.CLOSING
            consumer.close()  # leaves the group (its offsets are committed per batch, never here)
        in_path, out_path = (log.close(complete=True) for log in (self._in_log, self._out_log))
        self.state = ClientState.FINISHED
        ended = "; ended with the run's stop: no leave-group" if self.end_requested else ""
        self.event("finished", f"{self.received} consumed, {self.produced} produced, {self.failed} failed"
                   f"{self._txn_words()}; logs {in_path.name}, {out_path.name}{ended}")
        if self.end_requested:  # librdkafka's destructors would wait on the brokers the stop is ending
            self.report_stats()
            sys.stdout.flush()
            os._exit(0)
        return 0

    def _txn_words(self) -> str:
        if not self.cfg.transactional:
            return ""
        return f" ({self.txn_committed} transactions committed, {self.txn_aborted} aborted)"

    def fail(self, exc: BaseException) -> None:
        if isinstance(exc, KafkaException) and is_fenced(exc.args[0]):
            self.fenced = True
        self.state = ClientState.FAILED
        for log in (self._in_log, self._out_log):
            if log is not None:
                log.close(complete=False)
        if self.fenced:  # what Kafka's producer must do then: end, its open transaction aborted by the newer one
            self.event("error", f"fenced: a newer instance of transactional id {self.cfg.transaction_id} took over "
                                "and aborted this one's open transaction; this one ends")
        else:
            self.event("error", str(exc))

    def _poll(self, consumer: _RdConsumer) -> list[Message]:
        """Up to a batch of records within the poll period (what is there once one came)."""
        return poll_records(consumer, self.cfg.batch_records, self.cfg.poll_period_ms / 1000,
                            self.stop_requested, self._error)

    def _process(self, consumer: _RdConsumer, producer: _RdProducer, batch: list[Message]) -> None:
        """One batch read, transformed, sent and committed (stopped in mid-batch: what of it was processed)."""
        cfg, out_log = self.cfg, self._out_log
        assert self._in_log is not None and out_log is not None
        if cfg.transactional:
            self._transaction_call(producer.begin_transaction, "begin_transaction")
            self.txn_open = True
        ends: dict[int, int] = {}  # what was processed: a stop in mid-batch commits that much
        self.uncommitted = 0
        for m in batch:
            if self.stop_requested.is_set():
                break
            partition, offset = m.partition(), m.offset()
            assert partition is not None and offset is not None  # a fetched record has both
            # the lag is of what is not processed yet (not, as a consumer's, not polled yet): a drain waits for
            # the processor's output, and a batch takes it a while
            ends[partition] = self._position[partition] = offset + 1
            if m.value() in _CONTROL:
                continue
            self._in_log.write(self._rows.line(m))
            self.received += 1
            self._send(producer, m)
            if cfg.wait_after_record_ms:
                self._in_log.flush()  # a processor killed mid-batch keeps every row it consumed
                producer.poll(0)  # the reports in: their rows written, and flushed with the consumed row
                out_log.flush()
                self.stop_requested.wait(cfg.wait_after_record_ms / 1000)
        self._in_log.flush()
        if not cfg.transactional:
            self._flush_and_commit(consumer, producer, ends)
        elif self.end_requested:  # the run was stopped: nothing is waited for
            self._abort(consumer, producer, "stopped")
        else:
            self._commit_transaction(consumer, producer, ends)
        self.uncommitted = 0  # committed, or aborted, or its commit failed: nothing of it is pending any more

    def _send(self, producer: _RdProducer, m: Message) -> None:
        headers = m.headers()
        pairs = headers if isinstance(headers, list) else []  # a fetched record's are a list, never a dict
        msg_id = next((v for n, v in pairs if n == MSG_ID_HEADER), None)
        out = _Out(msg_id.decode() if isinstance(msg_id, bytes) else (msg_id or ""), m.key(), transform(m.value()))
        index = self._sent = self._sent + 1
        self._batch[index] = out
        kwargs: dict[str, Any] = {"on_delivery": partial(self._on_delivery, index, out)}
        if msg_id is not None:
            kwargs["headers"] = [(MSG_ID_HEADER, msg_id)]
        while True:
            try:
                producer.produce(self.cfg.output_topic, out.value, out.key, **kwargs)
                return
            except BufferError:  # the send buffer full (leaders gone): wait, as the Java send() blocks
                producer.poll(0.1)
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if (err.fatal() or err.code() == KafkaError._FATAL) and self.cfg.transactional:
                    raise self._fatal_cause(producer) from None
                raise

    @staticmethod
    def _fatal_cause(producer: _RdProducer) -> KafkaException:
        """produce() says only "fatal error"; a transaction call says which (fenced, say)."""
        try:
            producer.abort_transaction(_TXN_CALL_S)
        except KafkaException as cause:
            return cause
        return KafkaException(KafkaError(KafkaError._FATAL, "fatal error, then the transaction aborted"))

    def _flush_and_commit(self, consumer: _RdConsumer, producer: _RdProducer, ends: dict[int, int]) -> None:
        """At-least-once: the batch's output delivered (each record logged as it fared), then its input offsets
        committed."""
        deadline = time.monotonic() + _FLUSH_S
        while len(producer) and time.monotonic() < deadline and not self.end_requested:
            producer.poll(0.1)
        self._log_batch("unknown", "")  # no report in time (or the run was stopped): sent, outcome not known
        tps = [TopicPartition(self.cfg.topic, p, o) for p, o in ends.items() if p in self.assignment]
        if tps and not self.end_requested:
            try:
                consumer.commit(offsets=tps, asynchronous=False)
            except KafkaException as exc:
                self._error(f"commit failed: {exc.args[0].name()}")

    def _commit_transaction(self, consumer: _RdConsumer, producer: _RdProducer, ends: dict[int, int]) -> None:
        """Exactly once: the batch's input offsets sent to its transaction, which is committed; aborted instead
        when that fails."""
        tps = [TopicPartition(self.cfg.topic, p, o) for p, o in ends.items()]
        try:
            if tps:
                metadata = consumer.consumer_group_metadata()
                self._transaction_call(lambda: producer.send_offsets_to_transaction(tps, metadata, _TXN_CALL_S),
                                       "send_offsets_to_transaction")
            self._transaction_call(lambda: producer.commit_transaction(_TXN_CALL_S), "commit_transaction")
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if is_fenced(err):
                raise
            if not err.txn_requires_abort():
                raise KafkalabError(f"transactional processor {self.cfg.transaction_id}: {err.name()}: "
                                    f"{err.str()}") from None
            self._abort(consumer, producer, err.name())
            return
        self.txn_open = False
        self.txn_committed += 1
        self._log_batch("acked", "")

    def _abort(self, consumer: _RdConsumer, producer: _RdProducer, why: str) -> None:
        """The open transaction aborted. Stopping, its records are logged failed ``ABORTED``; else the input is
        read again from the group's committed offsets, and the records' rows are those of their next sending."""
        try:
            self._transaction_call(lambda: producer.abort_transaction(_TXN_CALL_S), "abort_transaction")
        except KafkaException as exc:  # left to its coordinator, which aborts it at its timeout
            why = f"{why}, then {exc.args[0].name()}"
        self.txn_open = False
        if self._batch:
            self.txn_aborted += 1
            self.event("note" if why == "stopped" else "error",
                       f"transaction aborted ({len(self._batch)} records): {why}")
        if self.stop_requested.is_set():
            self._log_batch("failed", ABORTED)
        else:  # read and sent again: their rows are the next transaction's
            self.failed += len(self._batch)
            self._batch.clear()
            committed = consumer.committed([TopicPartition(self.cfg.topic, p) for p in sorted(self.assignment)],
                                           timeout=10)
            reset = OFFSET_BEGINNING if self.cfg.auto_offset_reset == "earliest" else OFFSET_END
            for tp in committed:  # none committed yet: where auto-offset-reset starts
                consumer.seek(tp if tp.offset >= 0 else TopicPartition(tp.topic, tp.partition, reset))
                self._position.pop(tp.partition, None)  # the lag watch reads the committed offset again

    def _transaction_call(self, call: Callable[[], object], what: str) -> None:
        """``call`` retried while its error is retriable (at most ``_TXN_DEADLINE_S``); its KafkaException
        raised otherwise."""
        deadline = time.monotonic() + _TXN_DEADLINE_S
        while True:
            try:
                call()
                return
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if not err.retriable() or time.monotonic() > deadline or self.end_requested:
                    if what == "init_transactions":
                        raise KafkalabError(f"cannot start transactions as {self.cfg.transaction_id}: "
                                            f"{err.name()}: {err.str()}") from None
                    raise

    def _log_batch(self, status: str, error: str) -> None:
        """The rows of the batch's records not yet logged (exactly once: all of them, at their transaction's
        end), all with ``status`` and ``error``."""
        for out in self._batch.values():
            self._write_row(out, status, error)
        self._batch.clear()
        assert self._out_log is not None
        self._out_log.flush()

    def _write_row(self, out: _Out, status: str, error: str) -> None:
        """The record's row, unless its message already has one (sent again: the same message, twice)."""
        assert self._out_log is not None
        if status == "acked":
            self.produced += 1
        else:
            self.failed += 1
        if out.msg_id in self._logged:
            return
        if out.msg_id:
            self._logged.add(out.msg_id)
        seq = out.msg_id.rsplit(":", 1)[-1] if out.msg_id.count(":") == 2 else "-1"  # the input's producer's
        value = "" if out.value is None else csv_field(out.value.decode("utf-8", "replace"))
        self._out_log.write(f"{out.msg_id},{seq},{self.cfg.output_topic},{out.partition},{out.offset},"
                            f"{key_text(out.key)},{status},{error},{out.ts or int(time.time() * 1000)},{value}\n")

    def _on_global_error(self, err: KafkaError) -> None:
        self.fenced = self.fenced or is_fenced(err)
        self._error(f"{err.name()}: {err.str()}")


def main() -> int:
    def make_loop(spec: dict[str, Any], sink: Sink) -> ProcessorLoop:
        return ProcessorLoop(ProcessorConfig.from_spec(spec["config"]), Path(spec["log_dir"]), sink,
                             spec.get("log_name"))

    def stop(loop: ProcessorLoop) -> None:
        loop.stop_requested.set()

    def end(loop: ProcessorLoop) -> None:
        loop.end_requested = True
        loop.stop_requested.set()

    return serve(make_loop, {"stop": stop, "end": end}, orphaned="end", interrupted="end",
                 stats_every=_STATS_EVERY_S)


if __name__ == "__main__":
    sys.exit(main())
