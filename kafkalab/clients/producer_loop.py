"""The course producer's send loop, run as ``python -m kafkalab.clients.producer_loop`` by ``Producer``.

N rolls of records keyed 0..n-1, every delivery outcome in the payload log. A full send buffer (leaders
gone) makes the loop wait and retry, as the Java ``send()`` blocks, so the producer halts rather than fails.
Spoken to as ``child_io`` describes: the spec is the validated config's fields, the log dir, the run id and
the value seed; the words are ``stop`` (drain, then close), ``abort`` (purge, then close) and ``crash``
(outstanding records dropped unlogged, the log left ``.partial``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as _RdProducer

from kafkalab.clients.child_io import EXIT_CRASH, Sink, event_item, serve
from kafkalab.clients.corpus import ValuePicker, corpus_lines
from kafkalab.clients.options import ProducerConfig
from kafkalab.clients.payload_log import Headers, PayloadLog, csv_field, max_seq
from kafkalab.clients.preflight import base_conf, check_topic
from kafkalab.clients.stats import ClientState, RateMeter
from kafkalab.logformat import MSG_ID_HEADER, PRODUCER_COLUMNS

_POLL_EVERY = 512  # records between serving delivery reports (and flushing the log)
_STALL_AFTER_S = 1.0  # a send blocked this long is reported as a stall
_UNKNOWN_ERRORS = frozenset({"_PURGE_INFLIGHT"})  # sent, outcome never learned
_STATS_EVERY_S = 0.25


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
        self.state = ClientState.RUNNING
        self._emit("started", f"{cfg.total} records to {cfg.topic}, acks={cfg.acks}, idempotent={cfg.idempotent}")
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
        for roll in range(cfg.num_rolls):
            for key in keys:
                if stop.is_set():
                    return
                headers: Headers = [(MSG_ID_HEADER, b"%s%d" % (prefix, seq))]
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
                         headers: Headers, report: partial[None]) -> bool:
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
                    self.state = ClientState.BLOCKED
                    self._emit("stalled", f"send buffer full with {len(rd)} records: waiting for the brokers")
                continue
            if stalled:
                self.state = ClientState.RUNNING
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
            self.state = ClientState.CRASHED
            self._log.close(complete=False)
            self._emit("crashed", f"{len(rd)} records dropped unlogged")
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
        self._emit("finished", f"{self.acked} acked, {sum(self._failed.values())} failed, {self.unknown} unknown; "
                   f"log {path}")

    # -- callbacks (run in the loop's thread, inside poll) ----------------------------------------
    def _on_delivery(self, seq: int, err: KafkaError | None, msg: Message) -> None:
        raw_key, raw = msg.key(), msg.value()
        assert raw_key is not None and raw is not None  # every record sent has both
        key = int.from_bytes(raw_key, "big", signed=True)
        value = self._quoted.get(raw) or csv_field(raw.decode("utf-8", "replace"))
        partition, offset = msg.partition(), msg.offset()
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
        assert self._log is not None  # reports are served only while running
        self._log.write(
            f"{self._prefix}{seq},{seq},{self._topic},{partition},"
            f"{offset if offset is not None and offset >= 0 else -1},{key},{status},{error},"
            f"{msg.timestamp()[1]},{value}\n"
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
