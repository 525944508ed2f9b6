"""The course producer's send loop, run as ``python -m kafkalab.clients.producer_loop`` by ``Producer``.

N rolls of records keyed 0..n-1, every delivery outcome in the payload log. With ``producer.tombstones`` N the
second roll begins with a tombstone (a null value) for each of keys 0..N-1, which no later roll writes again: a
compacted topic's deletes, logged with an empty value. A full send buffer (leaders gone) makes the loop wait
and retry, as the Java ``send()`` blocks: the producer halts, and once a send has
waited ``producer.max-block`` (max.block.ms) that record fails, ``MAX_BLOCK_TIMED_OUT`` (never sent, as Kafka's
``send()`` throws a TimeoutException), and the loop goes on to the next one, as an app that ignores it does.
Spoken to as ``child_io`` describes: the spec is the validated config's fields, the log dir, the run id and
the value seed; the words are ``stop`` (drain, then close), ``abort`` (purge, then close) and ``crash``
(outstanding records dropped unlogged, the log left ``.partial``).

With ``producer.transaction-id`` the records go in transactions of ``producer.records-per-transaction``: begin,
send them, commit. A record is acknowledged only once its transaction committed: its delivery report is kept
until then and logged ``acked`` after the commit; a transaction that fails to commit, or is aborted, has its
records logged ``failed`` with the error ``ABORTED`` (at the offsets the brokers wrote them, if they did). ``stop``
and ``abort`` abort the open transaction; ``crash`` leaves it open, as a killed producer leaves it (its
coordinator aborts it after ``transaction.timeout.ms``), and logs its records as what they will be: ``failed``,
``ABORTED`` (nobody else can commit it), or ``unknown`` if its commit was asked before the crash. Unlogged, a
consumer that read them (read_uncommitted) counted them as records nobody sent, not as aborted ones.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message
from confluent_kafka import Producer as _RdProducer

from kafkalab.clients.child_io import EXIT_CRASH, Sink, event_item, serve
from kafkalab.clients.corpus import ValuePicker, corpus_lines
from kafkalab.clients.options import ProducerConfig
from kafkalab.clients.payload_log import TOMBSTONE, Headers, PayloadLog, csv_field, max_seq
from kafkalab.clients.preflight import base_conf, check_topic
from kafkalab.clients.stats import ClientState, RateMeter
from kafkalab.errors import KafkalabError
from kafkalab.logformat import ABORTED, MAX_BLOCK_TIMED_OUT, MSG_ID_HEADER, PRODUCER_COLUMNS

_POLL_EVERY = 512  # records between serving delivery reports (and flushing the log)
_STALL_AFTER_S = 1.0  # a send blocked this long is reported as a stall
_UNKNOWN_ERRORS = frozenset({"_PURGE_INFLIGHT"})  # sent, outcome never learned
_STATS_EVERY_S = 0.25
_TXN_CALL_S = 1.0  # a transaction call waits this long at a time, so that a control word is obeyed meanwhile
_TXN_INIT_S = 60.0  # init_transactions gives up after this long


class _Blocked(Enum):
    """How a send the full buffer refused ended."""

    SENT = "sent"
    FAILED = "failed"  # blocked past max.block.ms: the record failed, never sent
    STOPPED = "stopped"  # told to stop meanwhile


class _Pending:
    """A record of the open transaction: what its row needs, the delivery report's part once it came."""

    __slots__ = ("key", "offset", "partition", "ts", "value")

    def __init__(self, key: bytes, value: bytes | None) -> None:
        self.key, self.value = key, value
        self.partition, self.offset, self.ts = -1, -1, int(time.time() * 1000)


def roll_keys(keys: Sequence[bytes], roll: int, tombstones: int) -> Iterator[tuple[bytes, bool]]:
    """The keys roll ``roll`` (0-based) writes, each with whether it gets a value (False: a tombstone): every key
    in the first; with ``tombstones`` N, the second begins by deleting keys 0..N-1, and no roll writes them again."""
    if roll == 1:
        yield from ((key, False) for key in keys[:tombstones])
    yield from ((key, True) for key in (keys if roll == 0 else keys[tombstones:]))


class ProducerLoop:
    """Sends the course's records and reports how they fared."""

    def __init__(self, config: ProducerConfig, log_dir: Path, run_id: str, seed: int | None, sink: Sink) -> None:
        self.config = config
        self.name = config.name
        self.log_path = Path(log_dir) / f"{self.name}.csv"
        self._prefix = f"{run_id}:{self.name}:"  # message ids are {run}:{producer}:{seq}
        self._topic = config.topic
        self._sink = sink
        self._picker = ValuePicker(seed)
        self._quoted = {line.encode("utf-8"): csv_field(line) for line in corpus_lines()}
        self._stop = threading.Event()
        self._abort = False  # stop without draining
        self._crash = False
        self._log: PayloadLog | None = None
        self._meter = RateMeter()
        self.state: ClientState = ClientState.STARTING
        self.attempted = 0
        self.acked = 0
        self.unknown = 0
        self._failed: dict[str, int] = {}
        self._last_global_error: dict[str, float] = {}
        self._blocked_since = 0.0  # when the send the full buffer refused was first tried (monotonic)
        # transactions (producer.transaction-id): counts, and the open one's records by seq
        self._transactional = config.transactional
        self.txn_committed = 0
        self.txn_aborted = 0
        self._txn_open = False
        self._committing = False  # the open transaction's commit asked: a crash leaves its fate unknown
        self._txn: dict[int, _Pending] = {}
        self._txn_written = 0  # records of the open transaction the brokers acknowledged
        self._txn_error = ""  # the first failure in the open transaction: it cannot commit
        self._aborted_why: set[str] = set()  # reasons an abort was already reported for

    # -- control words --------------------------------------------------------------------------------
    def stop(self, drain: bool = True) -> None:
        self._abort = self._abort or not drain
        self._stop.set()

    def crash(self) -> None:
        self._crash = True
        self._abort = True
        self._stop.set()

    def report_stats(self) -> None:
        log = self._log
        self._sink({
            "t": "stats", "state": self.state, "attempted": self.attempted, "acked": self.acked,
            "failed": dict(self._failed), "unknown": self.unknown, "rate": self._meter.rate(),
            "txn_committed": self.txn_committed, "txn_aborted": self.txn_aborted, "txn_open": int(self._txn_open),
            "txn_written": self._txn_written,
            "blocked_s": time.monotonic() - self._blocked_since if self.state == ClientState.BLOCKED else 0.0,
            "log_path": str(log.path if self.state == ClientState.FINISHED else log.partial) if log else None,
        })

    # -- the loop ---------------------------------------------------------------------------------
    def _emit(self, kind: str, detail: str = "", partitions: tuple[int, ...] = ()) -> None:
        self._sink(event_item(kind, detail, partitions))

    def run(self) -> int:
        cfg = self.config
        check_topic(cfg.bootstrap, cfg.topic)
        first_seq = 0 if cfg.payload_trunc else max_seq(self.log_path) + 1
        self._log = PayloadLog(self.log_path, PRODUCER_COLUMNS, truncate=cfg.payload_trunc)
        rd = _RdProducer({**base_conf(cfg.librdkafka()), "error_cb": self._on_global_error})
        for note in cfg.notes:
            self._emit("note", note)
        if cfg.transactional and not self._init_transactions(rd):
            self._finish(rd)
            return EXIT_CRASH if self.state == ClientState.CRASHED else 0
        self.state = ClientState.RUNNING
        txn = (f", transactions of {cfg.records_per_transaction} as {cfg.transaction_id}" if cfg.transactional
               else "")
        deleted = f", keys 0..{cfg.tombstones - 1} deleted after the first roll" if cfg.tombstones else ""
        self._emit("started", f"{cfg.total} records to {cfg.topic}, acks={cfg.acks}, idempotent={cfg.idempotent}"
                              f"{txn}{deleted}")
        self._send_all(rd, first_seq)
        self._finish(rd)
        return EXIT_CRASH if self.state == ClientState.CRASHED else 0

    def fail(self, exc: BaseException) -> None:
        """Reported as an error event (the CLI turns it into one line); the log kept ``.partial``."""
        self.state = ClientState.FAILED
        if self._log is not None:
            self._log.close(complete=False)
        self._emit("error", str(exc))

    def _send_all(self, rd: _RdProducer, seq: int) -> None:
        cfg = self.config
        produce, poll = rd.produce, rd.poll
        log, meter = self._log, self._meter
        assert log is not None
        topic, stop = cfg.topic, self._stop
        prefix = self._prefix.encode()
        on_delivery = self._on_delivery
        keys = [y.to_bytes(4, "big", signed=True) for y in range(cfg.records_per_roll)]
        next_value = self._picker.next_bytes
        pause = cfg.wait_after_send_ms / 1000
        transactional, per_txn, txn = cfg.transactional, cfg.records_per_transaction, self._txn
        for roll in range(cfg.num_rolls):
            for key, valued in roll_keys(keys, roll, cfg.tombstones):
                if stop.is_set():
                    return
                headers: Headers = [(MSG_ID_HEADER, b"%s%d" % (prefix, seq))]
                value = next_value() if valued else None
                report = partial(on_delivery, seq)
                if transactional and not self._txn_open:
                    self._begin_transaction(rd)
                blocked = _Blocked.SENT
                try:
                    produce(topic, value, key, on_delivery=report, headers=headers)
                except BufferError:
                    blocked = self._produce_blocked(rd, topic, value, key, headers, report)
                except KafkaException as exc:  # a transaction in error refuses records: end it, send in the next
                    blocked = (self._produce_blocked(rd, topic, value, key, headers, report)
                               if self._refused_in_transaction(rd, exc) else _Blocked.STOPPED)
                if blocked is _Blocked.STOPPED:
                    return
                if blocked is _Blocked.FAILED:
                    self._fail_blocked(seq, key, value)
                elif transactional:
                    txn[seq] = _Pending(key, value)
                seq += 1
                self.attempted += 1
                if transactional and (len(txn) >= per_txn or self._txn_error) and not self._end_transaction(rd):
                    return  # crashed meanwhile
                if pause:
                    if poll(0):
                        log.flush()
                    meter.sample(self.acked)
                    if stop.wait(pause):
                        return
                elif not self.attempted % _POLL_EVERY:
                    if poll(0):
                        log.flush()
                    meter.sample(self.acked)
            if roll < cfg.num_rolls - 1:
                self._idle(rd, cfg.wait_after_roll_ms / 1000)

    def _produce_blocked(self, rd: _RdProducer, topic: str, value: bytes | None, key: bytes,
                         headers: Headers, report: partial[None]) -> _Blocked:
        """Retry a send the full buffer refused, for up to max.block.ms."""
        assert self._log is not None
        self._blocked_since = since = time.monotonic()
        max_block_s = self.config.max_block_ms / 1000
        stalled = False
        while True:
            if rd.poll(0.1):
                self._log.flush()
            self._meter.sample(self.acked)
            if self._stop.is_set():
                return _Blocked.STOPPED
            if (blocked_s := time.monotonic() - since) >= max_block_s:
                if stalled:
                    self.state = ClientState.RUNNING
                    self._emit("resumed", f"send() gave up after {blocked_s:.1f}s (max.block.ms): the record failed")
                return _Blocked.FAILED
            try:
                if self._transactional and not self._txn_open:
                    self._begin_transaction(rd)
                rd.produce(topic, value, key, on_delivery=report, headers=headers)
            except BufferError:
                if not stalled and time.monotonic() - since > _STALL_AFTER_S:
                    stalled = True
                    self.state = ClientState.BLOCKED
                    self._emit("stalled", f"send buffer full with {len(rd)} records: waiting for the brokers")
                continue
            except KafkaException as exc:
                if not self._refused_in_transaction(rd, exc):
                    return _Blocked.STOPPED
                continue
            if stalled:
                self.state = ClientState.RUNNING
                self._emit("resumed", f"sending again after {time.monotonic() - since:.1f}s")
            return _Blocked.SENT

    def _fail_blocked(self, seq: int, key: bytes, value: bytes | None) -> None:
        """A record its send() blocked on past max.block.ms: logged failed, never sent (a transaction it was for
        cannot commit, as Kafka's producer then aborts it)."""
        first = MAX_BLOCK_TIMED_OUT not in self._failed
        self._failed[MAX_BLOCK_TIMED_OUT] = self._failed.get(MAX_BLOCK_TIMED_OUT, 0) + 1
        self._write_row(seq, key, value, -1, -1, "failed", MAX_BLOCK_TIMED_OUT, int(time.time() * 1000))
        if self._transactional:
            self._txn_error = self._txn_error or MAX_BLOCK_TIMED_OUT
        if first:
            self._emit("error", f"send() failed: buffer full after max.block.ms={self.config.max_block_ms} "
                                f"({MAX_BLOCK_TIMED_OUT}): the record dropped, the next one sent")

    def _idle(self, rd: _RdProducer, seconds: float) -> None:
        """Sleep between rolls while serving delivery reports."""
        assert self._log is not None
        deadline = time.monotonic() + seconds
        while not self._stop.is_set() and (left := deadline - time.monotonic()) > 0:
            if rd.poll(min(0.1, left)):
                self._log.flush()
            self._meter.sample(self.acked)

    def _finish(self, rd: _RdProducer) -> None:
        assert self._log is not None
        if not self._crash and self._txn_open:
            self._end_transaction(rd)  # committed when every record was sent, else (stopped) aborted
        if self._crash:
            left_open = (f"; its transaction of {len(self._txn)} records left open, logged as its coordinator ends "
                         "it" if self._txn_open else "")
            self._log_left_open()
            rd.purge(in_queue=True, in_flight=True, blocking=False)
            self.state = ClientState.CRASHED
            self._log.close(complete=False)
            self._emit("crashed", f"{len(rd)} records dropped unlogged{left_open}")
            return
        self.state = ClientState.FLUSHING
        deadline = time.monotonic() + self.config.delivery_timeout_ms / 1000 + 5
        while len(rd) and time.monotonic() < deadline and not self._abort:
            if rd.poll(0.1):
                self._log.flush()
            self._meter.sample(self.acked)
        if self._crash:
            self._finish(rd)
            return
        if len(rd):
            rd.purge(in_queue=True, in_flight=True, blocking=False)
            rd.flush(10)
        path = self._log.close(complete=True)
        self.state = ClientState.FINISHED
        txn = (f" ({self.txn_committed} transactions committed, {self.txn_aborted} aborted)"
               if self.config.transactional else "")
        self._emit("finished", f"{self.acked} acked, {sum(self._failed.values())} failed, {self.unknown} unknown"
                   f"{txn}; log {path}")

    # -- transactions -------------------------------------------------------------------------------------
    def _init_transactions(self, rd: _RdProducer) -> bool:
        """The producer id and epoch from the transaction coordinator (fencing an earlier producer of the same
        transactional id); False when told to stop meanwhile."""
        deadline = time.monotonic() + _TXN_INIT_S
        while not self._stop.is_set():
            try:
                rd.init_transactions(_TXN_CALL_S)
                return True
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if err.retriable() and time.monotonic() < deadline:
                    continue
                why = (f"producer.transaction-timeout={self.config.transaction_timeout_ms} is above the brokers' "
                       "transaction.max.timeout.ms" if err.name() == "INVALID_TRANSACTION_TIMEOUT" else
                       f"{err.name()}: {err.str()}")
                raise KafkalabError(f"cannot start transactions as {self.config.transaction_id}: {why}") from None
        return False

    def _begin_transaction(self, rd: _RdProducer) -> None:
        rd.begin_transaction()
        self._txn_open = True

    def _refused_in_transaction(self, rd: _RdProducer, exc: KafkaException) -> bool:
        """A record refused because its transaction failed: that one aborted (True: send the record in the next
        one; False: crashed meanwhile). Any other refusal is raised again."""
        err: KafkaError = exc.args[0]
        if not self._transactional or err.fatal() or not self._txn_open:
            raise exc
        self._txn_error = self._txn_error or err.name()
        return self._end_transaction(rd)

    def _end_transaction(self, rd: _RdProducer) -> bool:
        """Commit the open transaction once its records' delivery reports are in; abort it instead when one of
        them failed or the producer was told to stop. Its records are logged. False when crashed meanwhile (the
        transaction left open, its records unlogged)."""
        assert self._log is not None
        deadline = time.monotonic() + self.config.delivery_timeout_ms / 1000 + 5
        while len(rd) and not self._stop.is_set() and not self._txn_error and time.monotonic() < deadline:
            if rd.poll(0.1):
                self._log.flush()
            self._meter.sample(self.acked)
        if self._crash:
            return False
        if self._stop.is_set() or self._txn_error or len(rd):
            return self._abort_transaction(rd, self._txn_error or ("stopped" if self._stop.is_set() else
                                                                    "no delivery reports in time"))
        deadline = time.monotonic() + self.config.transaction_timeout_ms / 1000 + 30
        self._committing = True
        while True:
            try:
                rd.commit_transaction(_TXN_CALL_S)
                break
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if self._crash:
                    return False
                if err.retriable() and time.monotonic() < deadline:
                    continue  # the commit goes on: wait for it again
                if err.txn_requires_abort():
                    return self._abort_transaction(rd, err.name())
                # fatal (fenced by a newer producer of the same id), or no answer: not committed by this producer
                unknown = err.retriable()
                self._log_transaction("unknown" if unknown else "failed", err.name() if unknown else ABORTED)
                raise KafkalabError(f"transactional producer {self.config.transaction_id}: commit failed: "
                                    f"{err.name()}: {err.str()}") from None
        self._log_transaction("acked", "")
        self.txn_committed += 1
        return True

    def _abort_transaction(self, rd: _RdProducer, why: str) -> bool:
        """Abort the open transaction (``why``: the first failure, or ``stopped``); its records logged failed,
        ABORTED. False when crashed meanwhile."""
        deadline = time.monotonic() + self.config.transaction_timeout_ms / 1000
        fatal: KafkaError | None = None
        while True:
            try:
                rd.abort_transaction(_TXN_CALL_S)
                break
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if self._crash:
                    return False
                if err.retriable() and time.monotonic() < deadline and not err.fatal():
                    continue
                fatal = err if err.fatal() else None
                why = f"{why}, then {err.name()}"  # not aborted by us: the coordinator does, at its timeout
                break
        until = time.monotonic() + 1.0
        while len(rd) and time.monotonic() < until:  # the reports of the records the abort purged
            rd.poll(0.05)
        rd.poll(0)
        count = len(self._txn)
        self._log_transaction("failed", ABORTED)
        if count:  # one that never held a record is no transaction to count
            self.txn_aborted += 1
            if why not in self._aborted_why:  # one line per reason
                self._aborted_why.add(why)
                self._emit("note" if why == "stopped" else "error", f"transaction aborted ({count} records): {why}")
        if fatal is not None:  # fenced by a newer producer of the same id, or the like: no more transactions
            raise KafkalabError(f"transactional producer {self.config.transaction_id}: {fatal.name()}: "
                                f"{fatal.str()}")
        return True

    def _log_left_open(self) -> None:
        """A crash's open transaction, its records logged as they will end (the transaction itself left open for
        its coordinator): aborted, as nobody else can commit it; unknown once its commit was asked."""
        assert self._log is not None
        if not self._txn_open:
            return
        status, error = ("unknown", "") if self._committing else ("failed", ABORTED)
        for seq, rec in self._txn.items():
            self._write_row(seq, rec.key, rec.value, rec.partition, rec.offset, status, error, rec.ts)

    def _log_transaction(self, status: str, error: str) -> None:
        """The open transaction's records, one row each, in the order they were sent; the transaction closed."""
        assert self._log is not None
        for seq, rec in self._txn.items():
            self._write_row(seq, rec.key, rec.value, rec.partition, rec.offset, status, error, rec.ts)
        if status == "acked":
            self.acked += len(self._txn)
        elif status == "unknown":
            self.unknown += len(self._txn)
        elif self._txn:
            self._failed[error] = self._failed.get(error, 0) + len(self._txn)
        self._log.flush()
        self._txn.clear()
        self._txn_open = self._committing = False
        self._txn_written = 0
        self._txn_error = ""

    # -- callbacks (run in the loop's thread, inside poll) ----------------------------------------
    def _on_delivery(self, seq: int, err: KafkaError | None, msg: Message) -> None:
        partition, offset = msg.partition(), msg.offset()
        if self._transactional:  # kept until the transaction ends
            if (rec := self._txn.get(seq)) is not None:
                rec.partition = -1 if partition is None else partition
                if err is None:  # a failed report's offset says nothing (a failed batch's base, -1, plus its index)
                    rec.offset = offset if offset is not None and offset >= 0 else -1
                    rec.ts = msg.timestamp()[1]
                    self._txn_written += 1
                else:
                    self._txn_error = self._txn_error or err.name()
            return
        raw_key, raw = msg.key(), msg.value()
        assert raw_key is not None  # every record sent has a key (a tombstone has no value)
        if err is None:
            self.acked += 1
            status, error = "acked", ""
        else:
            error = err.name()
            if error in _UNKNOWN_ERRORS:
                self.unknown += 1
                status = "unknown"
            else:
                status = "failed"
                first = error not in self._failed
                self._failed[error] = self._failed.get(error, 0) + 1
                if first:
                    self._emit("error", f"delivery failed: {error}", () if partition is None else (partition,))
        self._write_row(seq, raw_key, raw, partition, offset, status, error, msg.timestamp()[1])

    def _write_row(self, seq: int, raw_key: bytes, raw: bytes | None, partition: int | None, offset: int | None,
                   status: str, error: str, ts: int) -> None:
        assert self._log is not None  # reports are served only while running
        key = int.from_bytes(raw_key, "big", signed=True)
        value = TOMBSTONE if raw is None else self._quoted.get(raw) or csv_field(raw.decode("utf-8", "replace"))
        self._log.write(
            f"{self._prefix}{seq},{seq},{self._topic},{partition},"
            f"{offset if offset is not None and offset >= 0 else -1},{key},{status},{error},{ts},{value}\n"
        )

    def _on_global_error(self, err: KafkaError) -> None:
        name = err.name()
        now = time.monotonic()
        if now - self._last_global_error.get(name, -1e9) >= 10:  # one line per kind per 10 s
            self._last_global_error[name] = now
            self._emit("error", f"{name}: {err.str()}")


def main() -> int:
    def make_loop(spec: dict[str, Any], sink: Sink) -> ProducerLoop:
        return ProducerLoop(ProducerConfig.from_spec(spec["config"]), Path(spec["log_dir"]), spec["run_id"],
                            spec["seed"], sink)

    words: dict[str, Callable[[ProducerLoop], None]] = {
        "stop": ProducerLoop.stop, "abort": partial(ProducerLoop.stop, drain=False), "crash": ProducerLoop.crash}
    return serve(make_loop, words, orphaned="abort", stats_every=_STATS_EVERY_S)


if __name__ == "__main__":
    sys.exit(main())
