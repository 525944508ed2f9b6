"""A consumer's lag against the leaders' real high watermarks, measured beside its poll loop.

A client of its own asks: confluent-kafka serializes calls on one consumer, so a query from the loop's
consumer would wait for the poll loop, and on the loop's own connections it would queue behind the fetch
long-poll. The position is the loop's (next offset after the last poll), read before the watermark, so the
lag can only be overstated, never understated, and a lab's drain cannot end early. A partition not yet
polled starts at the group's committed offset, else where auto.offset.reset puts it.
"""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import Consumer as _RdConsumer
from confluent_kafka import KafkaException, TopicPartition

from kafkalab.clients.options import ConsumerConfig


class LagWatch:
    def __init__(self, conf: dict[str, Any], config: ConsumerConfig, assignment: set[int],
                 positions: dict[int, int], lag: dict[int, int]) -> None:
        """``assignment`` and ``positions`` are the loop's own (read); ``lag`` is written here, per partition."""
        self.conf = {k: v for k, v in conf.items() if k != "group.instance.id"}
        self.cfg = config
        self.assignment = assignment
        self.positions = positions
        self.lag = lag

    def run(self, done: threading.Event, every_s: float) -> None:
        """Every ``every_s`` until ``done``."""
        marks = _RdConsumer({**self.conf, "enable.auto.commit": False})  # never subscribes: not a group member
        try:
            while not done.wait(every_s):
                positions = dict(self.positions)
                for p in sorted(tuple(self.assignment)):
                    lag = self._lag_of(marks, p, positions.get(p))
                    if p not in self.assignment:
                        continue  # revoked meanwhile
                    if lag is None:
                        self.lag.pop(p, None)
                    else:
                        self.lag[p] = lag
        finally:
            marks.close()

    def _lag_of(self, marks: _RdConsumer, partition: int, position: int | None) -> int | None:
        tp = TopicPartition(self.cfg.topic, partition)
        try:
            low, high = marks.get_watermark_offsets(tp, timeout=1.0, cached=False) or (-1, -1)
            if position is None:
                committed = marks.committed([tp], timeout=1.0)[0].offset
                reset_to = low if self.cfg.auto_offset_reset == "earliest" else high
                position = committed if committed >= 0 else reset_to
        except (KafkaException, RuntimeError):
            return None  # no reachable leader or coordinator right now
        return max(0, high - position) if high >= 0 and position >= 0 else None
