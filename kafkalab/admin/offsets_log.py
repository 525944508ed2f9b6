"""Which groups had committed offsets and have none now, read from ``__consumer_offsets`` itself.

Kafka keeps every offset commit as a record of ``__consumer_offsets`` keyed by (group, topic, partition) and
removes one by writing a tombstone (a null value) under the same key: when an empty group's offsets are older
than ``offsets.retention.minutes`` (the coordinator's periodic check, every
``offsets.retention.check.interval.ms``), and when someone deletes the group or its offsets. A group whose
offsets all expired is then forgotten: the group APIs list nothing and describe it Dead, as if it never was.
The log still tells it: the commits, then the tombstones and when they were written. The two removals write
the same records; this module tells them apart by time: offsets removed at least the retention after their
last commit had expired by then.

The records are read from the start once and folded; the reader stays assigned, so later reads fetch only
what was written since (the console asks every second). It is made only once the topic exists: reading must
never create it (a lab's brokers decide where it goes, and when).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from kafkalab.admin.client import Admin, SilentLogger
from kafkalab.admin.committed import PerAdmin
from kafkalab.admin.coordinator import OFFSETS_TOPIC, offsets_partition

if TYPE_CHECKING:  # librdkafka is loaded by the first read, never by importing this module (the console)
    from confluent_kafka import Consumer, Message

RETENTION_SETTING = "offsets.retention.minutes"
_OFFSET_COMMIT_KEYS = (0, 1)  # the key versions of an offset commit; 2 is a group's metadata, 3+ KIP-848 records


class OffsetsFate(StrEnum):
    """How a group's committed offsets went."""

    EXPIRED = "offsets expired"  # at least the retention after the last commit: the coordinator's expiry
    DELETED = "offsets deleted"  # sooner: a delete (`kafkalab group delete`, kafka-consumer-groups --delete)
    REMOVED = "offsets removed"  # the brokers' retention could not be read to tell which


@dataclass(frozen=True)
class OffsetsGone:
    """A group that had committed offsets and has none now: the one fact the Groups tab and `kafkalab group`
    both render, by :meth:`describe` and :meth:`explain`."""

    fate: OffsetsFate
    at: float  # epoch seconds: the tombstone that removed the last of them
    last_commit_at: float  # epoch seconds
    partitions: int  # how many partitions had a committed offset
    retention_min: int | None  # the brokers' offsets.retention.minutes, when it could be read

    def describe(self, now: float) -> str:
        """``offsets expired at 14:20:05 (35 s ago)``: a group state's suffix."""
        return f"{self.fate.value} at {_clock(self.at)} ({_ago(now - self.at)})"

    def explain(self) -> str:
        """What it means for a consumer that joins now, in a sentence."""
        had = f"it had committed offsets on {self.partitions} partition{'s' if self.partitions != 1 else ''}, " \
              f"the last at {_clock(self.last_commit_at)}"
        retention = f"{RETENTION_SETTING}={self.retention_min}" if self.retention_min is not None else "retention"
        why = {OffsetsFate.EXPIRED: f"the brokers deleted them while the group had no member ({retention})",
               OffsetsFate.DELETED: f"they were deleted sooner than {retention} would have",
               OffsetsFate.REMOVED: "they were deleted, or expired"}[self.fate]
        return f"{had}; {why}: a consumer joining now starts where its auto.offset.reset says"

    @classmethod
    def from_wire(cls, data: dict[str, object]) -> OffsetsGone:
        return cls(**{**data, "fate": OffsetsFate(data["fate"])})  # type: ignore[arg-type]


def _clock(epoch_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch_s))


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"


@dataclass
class _Trace:
    """One group's offsets as the log has told them so far."""

    live: set[tuple[str, int]] = field(default_factory=set)
    had: set[tuple[str, int]] = field(default_factory=set)
    last_commit_ms: int = 0
    gone_ms: int | None = None  # when the last live offset went (None while any is live)

    def commit(self, key: tuple[str, int], ts_ms: int) -> None:
        self.live.add(key)
        self.had.add(key)
        self.last_commit_ms = max(self.last_commit_ms, ts_ms)
        self.gone_ms = None

    def tombstone(self, key: tuple[str, int], ts_ms: int) -> None:
        if key in self.live:
            self.live.discard(key)
            if not self.live:
                self.gone_ms = ts_ms


def offset_commit_key(key: bytes) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an offset commit's key; None for any other record of the topic."""
    try:
        version = int.from_bytes(key[:2], "big", signed=True)
        if version not in _OFFSET_COMMIT_KEYS:
            return None
        group, at = _string(key, 2)
        topic, at = _string(key, at)
        if len(key) != at + 4:
            return None
        return group, topic, int.from_bytes(key[at:at + 4], "big", signed=True)
    except (ValueError, UnicodeDecodeError):
        return None


def _string(data: bytes, at: int) -> tuple[str, int]:
    """A Kafka protocol string (int16 length, UTF-8) at ``at``, and where the next field starts."""
    length = int.from_bytes(data[at:at + 2], "big", signed=True)
    end = at + 2 + length
    if length < 0 or end > len(data):
        raise ValueError("truncated string")
    return data[at + 2:end].decode(), end


class OffsetsFold:
    """Offset commits and tombstones folded, group by group (no Kafka client: what the reader feeds)."""

    def __init__(self) -> None:
        self._traces: dict[str, _Trace] = {}

    def add(self, key: bytes | None, value: bytes | None, ts_ms: int) -> None:
        parsed = offset_commit_key(key) if key else None
        if parsed is None:
            return
        group, topic, partition = parsed
        trace = self._traces.setdefault(group, _Trace())
        (trace.commit if value is not None else trace.tombstone)((topic, partition), ts_ms)

    def gone(self, retention_min: int | None) -> dict[str, OffsetsGone]:
        """Every group that had committed offsets and has none now."""
        return {group: _gone(trace, retention_min) for group, trace in self._traces.items()
                if trace.gone_ms is not None}


def _gone(trace: _Trace, retention_min: int | None) -> OffsetsGone:
    assert trace.gone_ms is not None
    if retention_min is None:
        fate = OffsetsFate.REMOVED
    else:
        # Kafka expires once now - base >= retention, base being when the group emptied (at or after its last
        # commit); a second's slack: a commit's record is stamped a moment after the commit time it counts from
        expired = trace.gone_ms - trace.last_commit_ms >= retention_min * 60_000 - 1000
        fate = OffsetsFate.EXPIRED if expired else OffsetsFate.DELETED
    return OffsetsGone(fate, trace.gone_ms / 1000, trace.last_commit_ms / 1000, len(trace.had), retention_min)


class OffsetsLog:
    """``__consumer_offsets`` of one cluster, read into an :class:`OffsetsFold` and kept reading where it was.

    A plain consumer assigned to the topic's partitions: it never subscribes nor commits, so it is in no group.
    """

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._fold = OffsetsFold()
        self._consumer: Consumer | None = None
        self._at_end: dict[int, bool] = {}  # partition -> read to its end at the last look
        self._retention_min: int | None = None
        self._lock = threading.Lock()

    def gone(self, admin: Admin, group: str | None, timeout_s: float) -> dict[str, OffsetsGone]:
        """Groups that had committed offsets and have none now (only ``group``'s partition read, if given), as
        far as the log was read: what it said within ``timeout_s``, on top of what earlier reads said (an
        unanswered read takes nothing back). ``admin`` reads the brokers' retention. Never raises."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + timeout_s
        with self._lock:
            try:
                # asked of the admin client: the reader, a consumer with a group id, asks for a coordinator once
                # made, and that lookup creates __consumer_offsets on whichever brokers are up at that moment
                meta = admin.client.list_topics(timeout=max(0.2, timeout_s))  # all: by name would create it
                topic = meta.topics.get(OFFSETS_TOPIC)
                if topic is not None and topic.error is None and topic.partitions:
                    count = len(topic.partitions)
                    self._catch_up([offsets_partition(group, count)] if group is not None else list(range(count)),
                                   deadline)
                    self._read_retention(admin, sorted(meta.brokers), deadline)
            except KafkaException:
                pass  # the next call reads on from where this one stopped
            gone = self._fold.gone(self._retention_min)
        return {g: why for g, why in gone.items() if group in (None, g)}

    def _catch_up(self, partitions: list[int], deadline: float) -> None:
        """Read each of ``partitions`` to its end (as far as ``deadline`` allows); already there, one short look
        for what came since."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        reader = self._reader()
        new = [p for p in partitions if p not in self._at_end]
        if new:
            reader.incremental_assign([TopicPartition(OFFSETS_TOPIC, p, OFFSET_BEGINNING) for p in new])
            self._at_end.update(dict.fromkeys(new, False))
        looked = False
        while True:
            reading = any(not self._at_end[p] for p in partitions)
            left = deadline - time.monotonic()
            if looked and (not reading or left <= 0):  # one look at least, however short the time left
                return
            for message in reader.consume(500, timeout=min(left, 0.2) if reading else 0.05):
                self._take(message)
            looked = True

    def _take(self, message: Message) -> None:
        from confluent_kafka import KafkaError

        error, partition = message.error(), message.partition()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF and partition is not None:
                self._at_end[partition] = True
            return
        if partition is not None:
            self._at_end[partition] = False  # more may follow: its end comes as an event of its own
        self._fold.add(message.key(), message.value(), message.timestamp()[1])

    def _read_retention(self, admin: Admin, brokers: list[int], deadline: float) -> None:
        """The brokers' offsets.retention.minutes, read once from one broker (kafkalab sets it on all)."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        if self._retention_min is not None or not brokers:
            return
        resource = ConfigResource(ResourceType.BROKER, str(brokers[0]))
        try:
            future = admin.client.describe_configs([resource], request_timeout=admin.timeout_s)[resource]
            entry = future.result(timeout=max(0.2, deadline - time.monotonic())).get(RETENTION_SETTING)
        except Exception:  # unanswered now: asked again next time, and meanwhile no fate but "removed"
            return
        self._retention_min = int(entry.value) if entry is not None and entry.value is not None else None

    def close(self) -> None:
        """The reader closed: its cluster is gone, and an assigned consumer fetches (and reconnects) until closed."""
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
            self._at_end.clear()

    def _reader(self) -> Consumer:
        from confluent_kafka import Consumer

        if self._consumer is None:
            self._consumer = Consumer({
                "bootstrap.servers": self.bootstrap, "group.id": "kafkalab-offsets-log",
                "enable.auto.commit": False, "enable.partition.eof": True, "client.id": "kafkalab-offsets-log",
                "log_level": 0, "logger": SilentLogger(),
            })
        return self._consumer


offsets_log: PerAdmin[OffsetsLog] = PerAdmin(lambda admin: OffsetsLog(admin.bootstrap))
