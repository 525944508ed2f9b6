"""The course producer: N rolls of records keyed 0..n-1, every delivery outcome in the payload log.

Runs in its own thread. A full send buffer (leaders gone) makes the thread wait and retry, as the Java
``send()`` blocks, so the producer halts rather than fails; the caller's thread never blocks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as _RdProducer

from kafkalab.clients.client_thread import ClientThread
from kafkalab.clients.corpus import ValuePicker, corpus_lines
from kafkalab.clients.options import ProducerConfig
from kafkalab.clients.payload_log import PayloadLog, csv_field, max_seq
from kafkalab.clients.preflight import base_conf, check_topic
from kafkalab.clients.stats import ClientEvent, ClientState, EventCallback, ProducerStats, RateMeter
from kafkalab.logformat import MSG_ID_HEADER, PRODUCER_COLUMNS

_POLL_EVERY = 512  # records between serving delivery reports (and flushing the log)
_STALL_AFTER_S = 1.0  # a send blocked this long is reported as a stall
_UNKNOWN_ERRORS = frozenset({"_PURGE_INFLIGHT"})  # sent, outcome never learned


class Producer(ClientThread):
    """Sends the course's records; see ``kafkalab.clients`` for the life cycle.

    ``settings`` are course option names (``producer.acks`` ...) or the same validated; ``bootstrap``, if
    given, overrides ``bootstrap.server``. The payload log goes to ``log_dir/producer[-LOCALID].csv``.
    """

    def __init__(
        self,
        settings: Mapping[str, str] | ProducerConfig,
        log_dir: Path,
        run_id: str,
        bootstrap: str | None = None,
        on_event: EventCallback | None = None,
        seed: int | None = None,
    ) -> None:
        self.config = ProducerConfig.of(settings, bootstrap)
        self.name = self.config.name
        self.run_id = run_id
        self.log_path = Path(log_dir) / f"{self.name}.csv"
        self._prefix = f"{run_id}:{self.name}:"  # message ids are {run}:{producer}:{seq}
        self._topic = self.config.topic
        self._on_event = on_event
        self._picker = ValuePicker(seed)
        self._quoted = {line.encode("utf-8"): csv_field(line) for line in corpus_lines()}
        self._stop = threading.Event()
        self._abort = False  # stop without draining
        self._crash = False
        self._log: PayloadLog | None = None
        self._meter = RateMeter()
        self._state: ClientState = ClientState.STARTING
        self._error: str | None = None
        self.attempted = 0
        self.acked = 0
        self.unknown = 0
        self._failed: dict[str, int] = {}
        self._last_global_error: dict[str, float] = {}

    # -- life cycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Begin sending in a new thread (returns at once)."""
        if self._thread is not None:
            raise RuntimeError("producer already started")
        self._start_thread(self._run, self.name)

    def stop(self, drain: bool = True) -> None:
        """Stop sending; with ``drain`` wait for outstanding deliveries (at most the delivery timeout),
        else purge them (their rows say failed/unknown). The log is closed as complete."""
        self._abort = not drain
        self._stop.set()

    def crash(self) -> None:
        """Abrupt end: outstanding records are dropped unlogged; the log stays ``.partial``."""
        self._crash = True
        self._abort = True
        self._stop.set()

    def stats(self) -> ProducerStats:
        failed = dict(self._failed)
        done = self.acked + sum(failed.values()) + self.unknown
        log = self._log
        return ProducerStats(
            name=self.name, state=self._state, attempted=self.attempted, acked=self.acked, failed=failed,
            unknown=self.unknown, in_flight=max(0, self.attempted - done),
            rate=0.0 if self._state.ended else self._meter.rate(), total=self.config.total,
            log_path=str(log.path if self._state == ClientState.FINISHED else log.partial) if log else None,
            error=self._error,
        )

    # -- the thread -------------------------------------------------------------------------------
    def _emit(self, kind: str, detail: str = "", partitions: tuple[int, ...] = ()) -> None:
        if self._on_event is not None:
            self._on_event(ClientEvent(time.time(), self.name, kind, detail, partitions))

    def _run(self) -> None:
        cfg = self.config
        try:
            check_topic(cfg.bootstrap, cfg.topic)
            first_seq = 0 if cfg.payload_trunc else max_seq(self.log_path) + 1
            self._log = PayloadLog(self.log_path, PRODUCER_COLUMNS, truncate=cfg.payload_trunc)
            conf = base_conf(cfg.librdkafka())
            conf["error_cb"] = self._on_global_error
            rd = _RdProducer(conf)
        except Exception as exc:  # reported through stats/events; the CLI turns it into one line
            self._fail(exc)
            return
        for note in cfg.notes:
            self._emit("note", note)
        self._state = ClientState.RUNNING
        self._emit("started", f"{cfg.total} records to {cfg.topic}, acks={cfg.acks}, idempotent={cfg.idempotent}")
        try:
            self._send_all(rd, first_seq)
            self._finish(rd)
        except Exception as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self._error = str(exc)
        self._state = ClientState.FAILED
        if self._log is not None:
            self._log.close(complete=False)
        self._emit("error", self._error)

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
        for roll in range(cfg.num_rolls):
            for key in keys:
                if stop.is_set():
                    return
                headers = [(MSG_ID_HEADER, b"%s%d" % (prefix, seq))]
                value = next_value()
                report = partial(on_delivery, seq)
                try:
                    produce(topic, value, key, on_delivery=report, headers=headers)
                except BufferError:
                    if not self._produce_blocked(rd, topic, value, key, headers, report):
                        return
                seq += 1
                self.attempted += 1
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

    def _produce_blocked(self, rd: _RdProducer, topic: str, value: bytes, key: bytes,
                         headers: list[tuple[str, bytes]], report: partial[None]) -> bool:
        """Retry a send the full buffer refused; False when told to stop meanwhile."""
        assert self._log is not None
        since = time.monotonic()
        stalled = False
        while True:
            if rd.poll(0.1):
                self._log.flush()
            self._meter.sample(self.acked)
            if self._stop.is_set():
                return False
            try:
                rd.produce(topic, value, key, on_delivery=report, headers=headers)
            except BufferError:
                if not stalled and time.monotonic() - since > _STALL_AFTER_S:
                    stalled = True
                    self._state = ClientState.BLOCKED
                    self._emit("stalled", f"send buffer full with {len(rd)} records: waiting for the brokers")
                continue
            if stalled:
                self._state = ClientState.RUNNING
                self._emit("resumed", f"sending again after {time.monotonic() - since:.1f}s")
            return True

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
        if self._crash:
            rd.purge(in_queue=True, in_flight=True, blocking=False)
            self._state = ClientState.CRASHED
            self._log.close(complete=False)
            self._emit("crashed", f"{len(rd)} records dropped unlogged")
            return
        self._state = ClientState.FLUSHING
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
        self._state = ClientState.FINISHED
        self._emit("finished", f"{self.acked} acked, {sum(self._failed.values())} failed, {self.unknown} unknown; "
                   f"log {path}")

    # -- callbacks (run in the producer thread, inside poll) ----------------------------------------
    def _on_delivery(self, seq: int, err: KafkaError | None, msg: Message) -> None:
        key = int.from_bytes(msg.key(), "big", signed=True)
        raw = msg.value()
        value = self._quoted.get(raw) or csv_field(raw.decode("utf-8", "replace"))
        offset = msg.offset()
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
                    self._emit("error", f"delivery failed: {error}", (msg.partition(),))
        self._log.write(  # type: ignore[union-attr]
            f"{self._prefix}{seq},{seq},{self._topic},{msg.partition()},"
            f"{offset if offset is not None and offset >= 0 else -1},{key},{status},{error},"
            f"{msg.timestamp()[1]},{value}\n"
        )

    def _on_global_error(self, err: KafkaError) -> None:
        name = err.name()
        now = time.monotonic()
        if now - self._last_global_error.get(name, -1e9) >= 10:  # one line per kind per 10 s
            self._last_global_error[name] = now
            self._emit("error", f"{name}: {err.str()}")
