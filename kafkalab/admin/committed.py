"""A consumer group's committed offsets, read the way its own consumers read them.

Not through the admin API's ListConsumerGroupOffsets: librdkafka 2.16 answers a coordinator error in an
OffsetFetch response (NOT_COORDINATOR while the group's coordinator moves, as brokers stop, start or hand
leadership back) by queueing a coordinator query on the client's own consumer group, which an admin client
does not have, and the whole process dies (SIGSEGV in ``rd_kafka_cgrp_op``, called with no group by
``rd_kafka_handle_OffsetFetch``: two leader-failover consoles died so mid-run). A consumer handle that
carries the group's id has that group state and retries as every consumer does; it never subscribes, so it
never joins the group.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar
from weakref import WeakKeyDictionary

from kafkalab.admin.client import Admin, SilentLogger

if TYPE_CHECKING:  # librdkafka is loaded by the first read, never by importing this module (the console)
    from confluent_kafka import Consumer

TopicPartitionKey = tuple[str, int]
T = TypeVar("T")


class CommittedOffsets:
    """One consumer handle per group asked about, on one cluster, kept for the next reads."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._consumers: dict[str, Consumer] = {}
        self._lock = threading.Lock()

    def read(self, group: str, partitions: list[TopicPartitionKey], timeout_s: float) -> dict[TopicPartitionKey, int]:
        """The committed offset of each of ``partitions`` that has one; KafkaException when the group's
        coordinator does not answer within ``timeout_s``."""
        from confluent_kafka import TopicPartition

        if not partitions:
            return {}
        answered = self._consumer(group).committed([TopicPartition(t, p) for t, p in partitions],
                                                   timeout=max(0.1, timeout_s))
        return {(tp.topic, tp.partition): tp.offset for tp in answered if tp.error is None and tp.offset >= 0}

    def _consumer(self, group: str) -> Consumer:
        from confluent_kafka import Consumer

        with self._lock:
            if group not in self._consumers:
                self._consumers[group] = Consumer({
                    "bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
                    "client.id": "kafkalab-offsets", "log_level": 0, "logger": SilentLogger(),
                })
            return self._consumers[group]


class PerAdmin(Generic[T]):
    """One ``T`` per :class:`Admin` (one cluster's client), made on first use, living as long as that client."""

    def __init__(self, make: Callable[[Admin], T]) -> None:
        self._make = make
        self._made: WeakKeyDictionary[Admin, T] = WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, admin: Admin) -> T:
        with self._lock:
            made = self._made.get(admin)
            if made is None:
                made = self._made[admin] = self._make(admin)
            return made


committed_offsets: PerAdmin[CommittedOffsets] = PerAdmin(lambda admin: CommittedOffsets(admin.bootstrap))
