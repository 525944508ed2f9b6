"""Records read and typed by hand, as kcat and Kafka's console producer/consumer do.

:class:`RecordTail` reads a topic from the beginning, the end or an offset, alone (assigned partitions,
nothing committed) or as a member of a group (subscribed, offsets committed). :class:`RecordTyper` sends
one line at a time and waits for its outcome, so the partition and offset can be shown beside the line.
Both are used by the `tail` and `type` commands and by the console's records pane. A tail reads
``read_uncommitted`` unless told otherwise, as Kafka's console consumer and kafkalab's lab consumers do
(librdkafka's own default is ``read_committed``, which stops short of an open transaction's records).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kafkalab.clients.options import BOOTSTRAP, ProducerConfig
from kafkalab.clients.payload_log import Headers
from kafkalab.errors import KafkalabError, short_error
from kafkalab.logformat import MSG_ID_HEADER, TYPED_MSG_ID

if TYPE_CHECKING:  # librdkafka is loaded when a tail or a typer starts, never by importing this module
    from confluent_kafka import KafkaError, Message

DEFAULT_FORMAT = "%s"
KEYS_FORMAT = "%k %s"
_TYPED_HEADERS: Headers = [(MSG_ID_HEADER, TYPED_MSG_ID.encode())]  # the analysis tells typed records by it
# librdkafka's logical offsets (confluent_kafka.OFFSET_BEGINNING, OFFSET_END), named without loading it
OFFSET_BEGINNING = -2
OFFSET_END = -1
_TAIL_GROUP = "kafkalab-tail"  # librdkafka wants a group.id even to assign; nothing is committed under it
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
DEFAULT_ISOLATION = "read_uncommitted"  # the Java client's and the lab consumers'; librdkafka's is read_committed


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None

    @classmethod
    def of(cls, msg: Message) -> Record:
        kind, ts = msg.timestamp()
        return cls(msg.topic() or "", msg.partition() or 0, msg.offset() or 0, msg.key(), msg.value(),
                   ts if kind and ts >= 0 else None)

    @property
    def key_text(self) -> str:
        """4 bytes that are not printable text are an int (the Java IntegerSerializer's, the course's and
        kafkalab's producers' keys; the payload logs write every 4-byte key so); any other key as text."""
        key = self.key
        if key is not None and len(key) == 4 and not _printable(key):
            return str(int.from_bytes(key, "big", signed=True))
        return _text(key)

    @property
    def value_text(self) -> str:
        return _text(self.value)

    def format(self, fmt: str) -> str:
        """kcat's -f: %t topic, %p partition, %o offset, %k key, %s value, %T timestamp (ms), %% a percent."""
        fields = {"t": self.topic, "p": str(self.partition), "o": str(self.offset), "k": self.key_text,
                  "s": self.value_text, "T": "" if self.timestamp_ms is None else str(self.timestamp_ms), "%": "%"}
        out: list[str] = []
        i = 0
        while i < len(fmt):
            ch = fmt[i]
            if ch == "%" and i + 1 < len(fmt) and fmt[i + 1] in fields:
                out.append(fields[fmt[i + 1]])
                i += 2
                continue
            if ch == "\\" and i + 1 < len(fmt) and fmt[i + 1] in "nt":
                out.append("\n" if fmt[i + 1] == "n" else "\t")
                i += 2
                continue
            out.append(ch)
            i += 1
        return "".join(out)


def parse_start(text: str) -> int:
    """--offset: ``beginning``, ``end`` or an offset >= 0, as a librdkafka offset."""
    word = text.strip().lower()
    if word in ("beginning", "earliest"):
        return OFFSET_BEGINNING
    if word in ("end", "latest"):
        return OFFSET_END
    try:
        offset = int(word)
    except ValueError:
        raise KafkalabError(f"--offset {text!r} is not beginning, end or an offset: write e.g. --offset 42") from None
    if offset < 0:
        raise KafkalabError(f"--offset {offset} is negative: give beginning, end or an offset >= 0")
    return offset


class RecordTail:
    """A topic read as it grows: alone from ``start``, or as a member of ``group``; with ``stop_at_end``, up to
    the end ``isolation`` sees (read_committed: the last stable offset, short of an open transaction)."""

    def __init__(self, bootstrap: str, topic: str, partitions: list[int], start: int = OFFSET_END,
                 group: str | None = None, stop_at_end: bool = False, isolation: str = DEFAULT_ISOLATION) -> None:
        from confluent_kafka import Consumer, TopicPartition

        if isolation not in ISOLATION_LEVELS:
            raise KafkalabError(f"isolation level {isolation!r} is not one of {', '.join(ISOLATION_LEVELS)}")
        self.topic = topic
        self.group = group
        self._pending_eof = set(partitions) if stop_at_end else set()
        self.stop_at_end = stop_at_end
        self._consumer = Consumer(_consumer_config(bootstrap, group, start, stop_at_end, isolation))
        if group:
            self._consumer.subscribe([topic])
        else:
            self._consumer.assign([TopicPartition(topic, p, start) for p in partitions])

    def poll(self, timeout_s: float = 0.2, limit: int = 500) -> list[Record]:
        """The records that arrived within ``timeout_s`` (at most ``limit``), in the order of each partition."""
        from confluent_kafka import KafkaError

        records: list[Record] = []
        for msg in self._consumer.consume(limit, timeout_s):
            err = msg.error()
            if err is None:
                records.append(Record.of(msg))
            elif err.code() == KafkaError._PARTITION_EOF:
                self._pending_eof.discard(msg.partition() or 0)
            elif err.fatal() or err.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED):
                raise KafkalabError(f"cannot read {self.topic}: {err.str()}")
        return records

    @property
    def at_end(self) -> bool:
        """With ``stop_at_end``: every partition has been read to its end."""
        return self.stop_at_end and not self._pending_eof

    def positions(self) -> dict[int, int]:
        """Per partition, the next offset this tail reads (read_committed: past the aborted records and the
        transaction markers it stepped over)."""
        return {tp.partition: tp.offset for tp in self._consumer.position(self._consumer.assignment())
                if tp.offset >= 0}

    def ends(self, partitions: Iterable[int], timeout_s: float = 0.5) -> dict[int, int]:
        """Per partition, the end this tail's isolation sees, asked of its leader (read_committed: the last
        stable offset; a fetch's cached answer is the high watermark either way). One that did not answer is left
        out."""
        from confluent_kafka import KafkaException, TopicPartition

        out: dict[int, int] = {}
        for partition in partitions:
            try:
                _low, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, partition),
                                                                  timeout=timeout_s, cached=False)
            except KafkaException:
                continue
            if high >= 0:
                out[partition] = high
        return out

    def close(self) -> None:
        """Leave the group (if any) and commit what was read, as a clean consumer does."""
        self._consumer.close()


class TxnView(StrEnum):
    """What a read_committed reader makes of a record a read_uncommitted one read."""

    COMMITTED = "committed"  # it reads it: committed, or written outside any transaction
    ABORTED = "aborted"  # it stepped over it: its transaction aborted
    HELD = "held"  # past the last stable offset: a transaction open at or before it holds it back
    PENDING = "pending"  # it has not got that far yet


class CommittedReach:
    """A read_committed reader of the same partitions beside a read_uncommitted tail: which of the tail's records
    it read, stepped over (aborted) or is held short of (an open transaction), so a records view can mark them."""

    def __init__(self, bootstrap: str, topic: str, partitions: list[int], start: int) -> None:
        self._tail = RecordTail(bootstrap, topic, partitions, start=start, isolation="read_committed")
        self._read: set[tuple[int, int]] = set()
        self._reach: dict[int, int] = {}  # partition -> the offset it has read or stepped past
        self._stable: dict[int, int] = {}  # partition -> last stable offset

    def poll(self, keep: Iterable[Record], timeout_s: float = 0.05) -> None:
        """Read on; remember only what ``keep`` (the records shown) may ask about."""
        for r in self._tail.poll(timeout_s):
            self._read.add((r.partition, r.offset))
            self._reach[r.partition] = max(self._reach.get(r.partition, 0), r.offset + 1)
        for partition, offset in self._tail.positions().items():
            self._reach[partition] = max(self._reach.get(partition, 0), offset)
        oldest: dict[int, int] = {}
        beyond: set[int] = set()  # partitions with a record it has not reached: held, or not read yet?
        for r in keep:
            oldest[r.partition] = min(oldest.get(r.partition, r.offset), r.offset)
            if r.offset >= self._reach.get(r.partition, 0):
                beyond.add(r.partition)
        self._stable = self._tail.ends(beyond)
        # a partition none of ``keep`` is of yet keeps all: its records may still come to the other tail
        self._read = {(p, o) for p, o in self._read if p not in oldest or o >= oldest[p]}

    def view(self, r: Record) -> TxnView:
        if (r.partition, r.offset) in self._read:
            return TxnView.COMMITTED
        if r.offset < self._reach.get(r.partition, 0):
            return TxnView.ABORTED
        stable = self._stable.get(r.partition)
        return TxnView.HELD if stable is not None and r.offset >= stable else TxnView.PENDING

    def close(self) -> None:
        self._tail.close()


def _consumer_config(bootstrap: str, group: str | None, start: int, stop_at_end: bool,
                     isolation: str = DEFAULT_ISOLATION) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "isolation.level": isolation,
        "group.id": group or _TAIL_GROUP,
        "enable.auto.commit": bool(group),
        "enable.partition.eof": stop_at_end,
        "auto.offset.reset": "earliest" if start == OFFSET_BEGINNING else "latest",
        "client.id": "kafkalab-tail",
        "session.timeout.ms": 10000,
        "log_level": 0,
    }


@dataclass(frozen=True)
class Outcome:
    """What became of one typed line: where it landed, or why not."""

    line: str
    partition: int | None = None
    offset: int | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    def describe(self) -> str:
        return f"error: {self.error}" if self.error else f"partition {self.partition} offset {self.offset}"


def split_key(line: str, key_sep: str | None) -> tuple[str | None, str]:
    """``key<sep>value`` -> (key, value); without a separator the whole line is the value."""
    if not key_sep:
        return None, line
    key, sep, value = line.partition(key_sep)
    if not sep:
        raise ValueError(f"no {key_sep!r} in the line: write key{key_sep}value")
    return key, value


class RecordTyper:
    """Sends one record at a time and waits for its delivery report."""

    def __init__(self, bootstrap: str, topic: str, settings: Mapping[str, str] | None = None) -> None:
        from confluent_kafka import Producer as RdProducer

        given = dict(settings or {})
        given.setdefault("producer.delivery-timeout", "10000")  # a typed line should not wait two minutes
        given.setdefault("producer.request-timeout", "5000")
        config = ProducerConfig.from_settings({**given, BOOTSTRAP: bootstrap, "producer.topic": topic})
        self.topic = topic
        self._wait_s = config.delivery_timeout_ms / 1000 + 2
        self._producer = RdProducer({**config.librdkafka(), "client.id": "kafkalab-type", "log_level": 0})

    def send(self, line: str, key_sep: str | None = None) -> Outcome:
        from confluent_kafka import KafkaError, KafkaException

        try:
            key, value = split_key(line, key_sep)
        except ValueError as exc:
            return Outcome(line, error=str(exc))
        reports: list[Message | KafkaError] = []

        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            reports.append(err if err is not None else msg)

        try:
            self._producer.produce(self.topic, value=value.encode(), key=None if key is None else key.encode(),
                                   headers=_TYPED_HEADERS, on_delivery=on_delivery)
        except (KafkaException, BufferError) as exc:
            return Outcome(line, error=short_error(exc))
        deadline = time.monotonic() + self._wait_s
        while not reports and time.monotonic() < deadline:
            self._producer.poll(0.1)
        if not reports:
            return Outcome(line, error=f"no delivery report within {self._wait_s:.0f}s")
        report = reports[0]
        if isinstance(report, KafkaError):
            return Outcome(line, error=report.str())
        return Outcome(line, report.partition(), report.offset())

    def close(self) -> None:
        self._producer.flush(2)


def _text(raw: bytes | None) -> str:
    return "" if raw is None else raw.decode("utf-8", errors="replace")


def _printable(raw: bytes) -> bool:
    try:
        return raw.decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return False
