"""A consumer's lag against the leaders' real high watermarks, measured beside its poll loop; for a read_committed
consumer, also how long it has waited at the last stable offset behind an open transaction.

A client of its own asks: confluent-kafka serializes calls on one consumer, so a query from the loop's
consumer would wait for the poll loop, and on the loop's own connections it would queue behind the fetch
long-poll. The position is the loop's (next offset after the last poll), read before the watermark, so the
lag can only be overstated, never understated, and a lab's drain cannot end early. A partition not yet
polled starts at the group's committed offset, else where auto.offset.reset puts it.

librdkafka's watermark query honours ``isolation.level``: a read_committed consumer's lag is counted to the last
stable offset (LSO), which an open transaction holds at its first record. Such a consumer is held when it has
read up to the LSO while records lie past it (a read_uncommitted query's high watermark is beyond it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer as _RdConsumer
from confluent_kafka import KafkaException, TopicPartition

from kafkalab.clients.options import ConsumerConfig
from kafkalab.clients.stats import HELD_SHOWN_AFTER_S

# a committed transaction's marker sits just before the next one's first record: a consumer past the last
# committed record is one short of the LSO there
MARKER_SLACK = 1

EventCallback = Callable[[str, str, list[int]], None]  # the loop's own: (kind, detail, partitions)


class LagWatch:
    def __init__(self, conf: dict[str, Any], config: ConsumerConfig, assignment: set[int],
                 positions: dict[int, int], lag: dict[int, int], held: dict[int, float],
                 event: EventCallback) -> None:
        """``assignment`` and ``positions`` are the loop's own (read); ``lag`` (per partition) and ``held``
        (per partition held now: seconds so far) are written here, and ``longest_held_s``; ``event`` tells a
        hold's start and end."""
        self.conf = {k: v for k, v in conf.items() if k != "group.instance.id"}
        self.cfg = config
        self.assignment = assignment
        self.positions = positions
        self.lag = lag
        self.held = held
        self.longest_held_s = 0.0
        self._event = event
        self._held_since: dict[int, float] = {}
        self._told: set[int] = set()  # partitions whose current hold is on the timeline

    def run(self, done: threading.Event, every_s: float) -> None:
        """Every ``every_s`` until ``done``."""
        marks = _RdConsumer({**self.conf, "enable.auto.commit": False})  # never subscribes: not a group member
        committed_only = self.cfg.isolation_level == "read_committed"
        ends = _RdConsumer({**self.conf, "enable.auto.commit": False, "isolation.level": "read_uncommitted"}) \
            if committed_only else None
        try:
            while not done.wait(every_s):
                positions = dict(self.positions)
                held: list[int] = []  # partitions whose hold became worth telling this round
                for p in sorted(tuple(self.assignment)):
                    found = self._offsets(marks, p, positions.get(p))
                    if p not in self.assignment:
                        continue  # revoked meanwhile
                    if found is None:
                        self.lag.pop(p, None)
                        continue
                    position, end = found
                    self.lag[p] = max(0, end - position)
                    if ends is not None and self._watch_hold(p, position, end, self._offsets(ends, p, position)):
                        held.append(p)
                if held:
                    self._event("held", f"read to the last stable offset, an open transaction past it, for "
                                        f"{HELD_SHOWN_AFTER_S:.0f}s", held)
                self._release(set(self._held_since) - self.assignment)
        finally:
            self._release(set(self._held_since))
            marks.close()
            if ends is not None:
                ends.close()

    def _offsets(self, marks: _RdConsumer, partition: int, position: int | None) -> tuple[int, int] | None:
        """(position, end offset): the end is the high watermark, or the LSO where ``marks`` reads committed."""
        tp = TopicPartition(self.cfg.topic, partition)
        try:
            low, high = marks.get_watermark_offsets(tp, timeout=1.0, cached=False) or (-1, -1)
            if position is None:
                committed = marks.committed([tp], timeout=1.0)[0].offset
                reset_to = low if self.cfg.auto_offset_reset == "earliest" else high
                position = committed if committed >= 0 else reset_to
        except (KafkaException, RuntimeError):
            return None  # no reachable leader or coordinator right now
        return (position, high) if high >= 0 and position >= 0 else None

    def _watch_hold(self, partition: int, position: int, stable: int, uncommitted: tuple[int, int] | None) -> bool:
        """Whether ``partition``'s hold has just become worth telling."""
        if not (uncommitted is not None and uncommitted[1] > stable and stable - position <= MARKER_SLACK):
            self._release({partition})
            return False
        now = time.monotonic()
        since = self._held_since.setdefault(partition, now)
        self.held[partition] = seconds = round(now - since, 1)
        self.longest_held_s = max(self.longest_held_s, seconds)
        if seconds < HELD_SHOWN_AFTER_S or partition in self._told:
            return False
        self._told.add(partition)
        return True

    def _release(self, partitions: set[int]) -> None:
        """The holds of ``partitions`` ended; those told, told ended (one event, the longest of them)."""
        told = sorted(p for p in partitions if p in self._told)
        waited = max((self.held.get(p, 0.0) for p in told), default=0.0)
        for p in partitions:
            self._held_since.pop(p, None)
            self.held.pop(p, None)
        self._told -= partitions
        if told:
            self._event("released", f"waited {waited:.1f}s behind an open transaction", told)
