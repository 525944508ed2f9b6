"""The course consumer's poll loop, run as ``python -m kafkalab.clients.consumer_loop`` by ``Consumer``.

Spoken to as ``child_io`` describes: the spec is the validated config's fields and the log dir; the word
``stop`` asks for a clean close; ``end`` (a stopped run's, and Ctrl-C's) ends the process once the log is
written, without librdkafka's close: no leave-group, no final commit, nothing to wait for. A ``crash`` control
record ends the process at once, as an uncaught exception ends the course's Java app: no close, no leave-group,
no final commit.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer as _RdConsumer
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from kafkalab.clients.child_io import EXIT_CRASH, Sink, event_item, serve
from kafkalab.clients.control_words import CRASH, QUIT, WAIT
from kafkalab.clients.lag_watch import LagWatch
from kafkalab.clients.options import ConsumerConfig
from kafkalab.clients.payload_log import ConsumedRows, PayloadLog
from kafkalab.clients.preflight import check_topic, consumer_conf
from kafkalab.clients.stats import ClientState, RateMeter
from kafkalab.logformat import CONSUMER_COLUMNS

_CONTROL = frozenset((QUIT, CRASH, WAIT))
_STATS_EVERY_S = 0.5
_POLL_SLICE_S = 0.5  # a poll period is cut into slices so a stop request is seen quickly



def poll_records(consumer: _RdConsumer, want: int, period_s: float, stopping: threading.Event,
                 on_error: Callable[[str], None]) -> list[Message]:
    """Up to ``want`` records within ``period_s`` (what is there once one came), as the Java poll() returns;
    a partition's end is no error, any other is told to ``on_error``. Empty once ``stopping`` is set."""
    deadline = time.monotonic() + period_s
    while not stopping.is_set():
        left = deadline - time.monotonic()
        msgs = consumer.consume(want, 0) or consumer.consume(1, max(0.0, min(_POLL_SLICE_S, left)))
        if msgs and len(msgs) < want:
            msgs += consumer.consume(want - len(msgs), 0)
        good = []
        for m in msgs:
            err = m.error()
            if err is None:
                good.append(m)
            elif err.code() != KafkaError._PARTITION_EOF:
                on_error(f"{err.name()}: {err.str()}")
        if good or left <= 0:
            return good
    return []

class ConsumerLoop:
    """Polls, processes (logs) and commits exactly as the course's Java consumer does."""

    def __init__(self, config: ConsumerConfig, log_dir: Path, sink: Sink) -> None:
        self.cfg = config
        self.log_path = Path(log_dir) / f"{config.name}.csv"
        self._sink = sink
        self.stop_requested = threading.Event()
        self.end_requested = False  # the run was stopped: the log written, no close (see end_now)
        self._rows = ConsumedRows(config.name, config.topic, config.group_id)
        self.received = 0
        self.processed = 0
        self.rebalances = 0
        self.group_state = "joining"
        self.assignment: set[int] = set()
        self.committed: dict[int, int] = {}
        self.lag: dict[int, int] = {}
        self.held: dict[int, float] = {}  # partition -> seconds waited so far at the LSO (read_committed)
        self._watch: LagWatch | None = None
        self.member_id = ""
        self.state: ClientState = ClientState.STARTING
        self._seen = 0
        self._plain = not (config.ack_every or config.wait_after_record_ms)  # no per-record work
        self._position: dict[int, int] = {}  # next offset per partition, as of the last poll
        self._meter = RateMeter()
        self._last_error: dict[str, float] = {}
        self._log: PayloadLog | None = None

    # -- reporting --------------------------------------------------------------------------------
    def event(self, kind: str, detail: str = "", partitions: list[int] | tuple[int, ...] = ()) -> None:
        self._sink(event_item(kind, detail, partitions))

    def report_stats(self) -> None:
        self._meter.sample(self.processed)
        self._sink({
            "t": "stats", "state": self.state, "group_state": self.group_state, "received": self.received,
            "processed": self.processed, "rate": self._meter.rate(), "assignment": sorted(self.assignment),
            "committed": dict(self.committed), "lag": dict(self.lag), "rebalances": self.rebalances,
            "member_id": self.member_id, "held": dict(self.held), "lso_wait_s": self._lso_wait_s(),
            "log_path": self._log_name(),
        })

    def _lso_wait_s(self) -> float | None:
        """The longest it waited at the last stable offset; None for a read_uncommitted consumer (it never does)."""
        if self.cfg.isolation_level != "read_committed":
            return None
        return self._watch.longest_held_s if self._watch is not None else 0.0

    def _log_name(self) -> str | None:
        if self._log is None:
            return None
        return str(self._log.path if self.state == ClientState.FINISHED else self._log.partial)

    # -- librdkafka callbacks (served inside consume/commit/close) ------------------------------------
    def _on_assign(self, consumer: _RdConsumer, partitions: list[TopicPartition]) -> None:
        self.rebalances += 1
        self.assignment.update(p.partition for p in partitions)
        self.group_state = "stable"
        self.member_id = consumer.memberid() or ""
        self.event("assigned", f"now {sorted(self.assignment)}", [p.partition for p in partitions])

    def _on_revoke(self, _consumer: _RdConsumer, partitions: list[TopicPartition]) -> None:
        self._drop(partitions)
        self.group_state = "rebalancing"
        self.event("revoked", f"now {sorted(self.assignment)}", [p.partition for p in partitions])

    def _on_lost(self, _consumer: _RdConsumer, partitions: list[TopicPartition]) -> None:
        self._drop(partitions)
        self.group_state = "lost"
        self.event("lost", "partitions lost (session timed out)", [p.partition for p in partitions])

    def _drop(self, partitions: list[TopicPartition]) -> None:
        for p in partitions:
            self.assignment.discard(p.partition)
            self._position.pop(p.partition, None)
            self.lag.pop(p.partition, None)

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        if err is not None and err.code() != KafkaError._NO_OFFSET:
            self._error(f"commit failed: {err.name()}")
            return
        self._note_committed(partitions)

    def _note_committed(self, partitions: list[TopicPartition]) -> None:
        """The offsets a commit (automatic or ours) stored, per partition."""
        self.committed |= {p.partition: p.offset for p in partitions if p.error is None and p.offset >= 0}

    def _on_error(self, err: KafkaError) -> None:
        self._error(f"{err.name()}: {err.str()}")

    def _error(self, text: str) -> None:
        kind = text.split(":", 1)[0]
        now = time.monotonic()
        if now - self._last_error.get(kind, -1e9) >= 10:  # one line per kind per 10 s
            self._last_error[kind] = now
            self.event("error", text)

    # -- the loop ---------------------------------------------------------------------------------
    def run(self) -> int:
        cfg = self.cfg
        check_topic(cfg.bootstrap, cfg.topic)
        self._log = PayloadLog(self.log_path, CONSUMER_COLUMNS, truncate=cfg.payload_trunc)
        conf = consumer_conf(cfg.librdkafka())
        consumer = _RdConsumer({**conf, "on_commit": self._on_commit, "error_cb": self._on_error})
        consumer.subscribe([cfg.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                           on_lost=self._on_lost)
        for note in cfg.notes:
            self.event("note", note)
        self.state = ClientState.RUNNING
        self.event("started", f"group {cfg.group_id} on {cfg.topic}")
        lag_done = threading.Event()
        self._watch = watch = LagWatch(conf, cfg, self.assignment, self._position, self.lag, self.held, self.event)
        lag_thread = threading.Thread(target=watch.run, args=(lag_done, _STATS_EVERY_S), name="kafkalab-lag",
                                      daemon=True)
        lag_thread.start()
        try:
            while not self.stop_requested.is_set():
                batch = self._poll(consumer)
                if batch and self._process(consumer, batch):
                    break
        finally:
            lag_done.set()
            if not self.end_requested:  # ended at once: the lag thread dies with the process
                lag_thread.join()
        if self.end_requested:
            self.end_now()
        self.state = ClientState.CLOSING
        consumer.close()  # commits stored offsets when auto-commit is on; leaves the group
        self.group_state = "left"
        path = self._log.close(complete=True)
        self.state = ClientState.FINISHED
        self.event("finished", f"{self.processed} processed; log {path}")
        return 0

    def end_now(self) -> None:
        """The run was stopped: the log closed complete (every row processed is in it), the last report sent,
        and the process ended without librdkafka's close (its leave-group and commit wait on brokers the
        stopped run is ending; the consumer object's destructor would close it too)."""
        assert self._log is not None  # the loop ran
        path = self._log.close(complete=True)
        self.state = ClientState.FINISHED
        self.group_state = "dead"
        self.event("finished", f"{self.processed} processed; log {path}; ended with the run's stop: "
                   "no leave-group, no final commit")
        self.report_stats()
        sys.stdout.flush()
        os._exit(0)

    def fail(self, exc: BaseException) -> None:
        self.state = ClientState.FAILED
        if self._log is not None:
            self._log.close(complete=False)
        self.event("error", str(exc))

    def _poll(self, consumer: _RdConsumer) -> list[Message]:
        """Like the Java poll(): wait up to the poll period for records, return what is there."""
        return poll_records(consumer, self.cfg.max_poll_records, self.cfg.poll_period_ms / 1000,
                            self.stop_requested, self._error)

    def _process(self, consumer: _RdConsumer, batch: list[Message]) -> bool:
        """Process one polled batch; True when a `quit` record asks to close."""
        cfg, log = self.cfg, self._log
        assert log is not None
        stop = self.stop_requested
        self.received += len(batch)
        # the common case, no per-record commits, waits or control records: formatted in one pass
        formatted = self._rows.format(batch, _CONTROL) if self._plain else None
        batch_end = formatted[1] if formatted is not None else _ends(batch)
        self._position.update(batch_end)  # Java's position moves at poll, whatever gets processed
        if cfg.wait_after_recv_ms:
            stop.wait(cfg.wait_after_recv_ms / 1000)
        quit_requested = interrupted = False
        done: dict[int, int] = {}  # processed so far (for a stop in mid-batch)
        write = log.write
        if formatted is not None:
            write(formatted[0])  # one write per batch
            self._seen += len(batch)
            self.processed += len(batch)
            batch = []
        for m in batch:
            self._seen += 1  # as the Java app's recsSeen: control records count too
            value = m.value()
            if value == QUIT:
                self.event("quit", f"quit record at partition {m.partition()} offset {m.offset()}")
                quit_requested = True
                break
            if value == CRASH:
                self._crash_now(m)
            if value == WAIT:
                self.event("wait", f"wait record: pausing {cfg.wait_cmd_period_ms} ms, skipping the rest of the batch")
                log.flush()
                stop.wait(cfg.wait_cmd_period_ms / 1000)
                break
            write(self._rows.line(m))
            partition, offset = m.partition(), m.offset()
            assert partition is not None and offset is not None  # a fetched record has both
            self.processed += 1
            done[partition] = offset + 1
            if cfg.ack_every and self._seen % cfg.ack_every == 0:
                self._commit(consumer, self._position)  # the whole polled position: the early commit
            if cfg.wait_after_record_ms:
                log.flush()  # a slow consumer killed mid-batch keeps every row it processed
                if stop.wait(cfg.wait_after_record_ms / 1000):
                    interrupted = True
                    break
        log.flush()  # the log holds the batch before any offset of it is stored or committed
        if interrupted:  # a stop in mid-batch: keep only what was processed
            if cfg.auto_commit and done:
                self._store(consumer, done)
            return True
        if not quit_requested and cfg.wait_after_batch_ms:
            stop.wait(cfg.wait_after_batch_ms / 1000)
        if cfg.auto_commit:
            self._store(consumer, batch_end)
        if cfg.ack_after_batch and not quit_requested:
            self._commit(consumer, self._position)
        return quit_requested

    def _store(self, consumer: _RdConsumer, offsets: dict[int, int]) -> None:
        tps = [TopicPartition(self.cfg.topic, p, o) for p, o in offsets.items() if p in self.assignment]
        if tps:
            try:
                consumer.store_offsets(offsets=tps)
            except KafkaException as exc:
                self._error(f"store offsets failed: {exc.args[0].name()}")

    def _commit(self, consumer: _RdConsumer, offsets: dict[int, int]) -> None:
        tps = [TopicPartition(self.cfg.topic, p, o) for p, o in offsets.items() if p in self.assignment]
        if not tps:
            return
        assert self._log is not None  # offsets are committed only while running
        self._log.flush()
        try:
            result = consumer.commit(offsets=tps, asynchronous=False) or []
        except KafkaException as exc:
            self._error(f"commit failed: {exc.args[0].name()}")
            return
        self._note_committed(result)

    def _crash_now(self, m: Message) -> None:
        assert self._log is not None  # a crash record is read only while running
        self._log.flush()  # written rows survive, as the Java app's do
        self.state = ClientState.CRASHED
        self.group_state = "dead"
        self.event("crashed", f"crash record at partition {m.partition()} offset {m.offset()}")
        self.report_stats()
        os._exit(EXIT_CRASH)


def _ends(batch: list[Message]) -> dict[int, int]:
    """Per partition, the offset after the batch's last record."""
    ends: dict[int, int] = {}
    for m in batch:
        partition, offset = m.partition(), m.offset()
        assert partition is not None and offset is not None  # a fetched record has both
        ends[partition] = offset + 1
    return ends


def main() -> int:
    def make_loop(spec: dict[str, Any], sink: Sink) -> ConsumerLoop:
        return ConsumerLoop(ConsumerConfig.from_spec(spec["config"]), Path(spec["log_dir"]), sink)

    def stop(loop: ConsumerLoop) -> None:
        loop.stop_requested.set()

    def end(loop: ConsumerLoop) -> None:
        loop.end_requested = True
        loop.stop_requested.set()

    return serve(make_loop, {"stop": stop, "end": end}, orphaned="stop", interrupted="end",
                 stats_every=_STATS_EVERY_S)


if __name__ == "__main__":
    sys.exit(main())
