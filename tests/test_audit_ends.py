"""The audit's end offsets: a client that keeps taking a partition for unknown is replaced, not asked again.

The clients here are fakes: the test claims the retry, not Kafka's behaviour (tests/test_clients_cluster.py
audits a real cluster)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafkalab.clients.audit import end_offsets
from kafkalab.errors import KafkalabError

WATERMARKS = {0: (0, 5), 1: (3, 3), 2: (2, 9)}  # partition 1 holds no records


class Client:
    def __init__(self, unknown: set[int]) -> None:
        self.unknown, self.closed = unknown, False

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        if tp.partition in self.unknown:
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))
        return WATERMARKS[tp.partition]

    def close(self) -> None:
        self.closed = True


def clients(*unknown: set[int]) -> tuple[list[Client], Any]:
    made: list[Client] = []

    def new() -> Client:
        made.append(Client(unknown[len(made)] if len(made) < len(unknown) else set()))
        return made[-1]

    return made, new


def test_a_client_that_takes_a_partition_for_unknown_is_replaced_by_a_new_one() -> None:
    made, new = clients({2})  # the first client's metadata lacks partition 2, as after a broker came back
    assert end_offsets(new, "t", 3) == {0: 5, 2: 9}
    assert len(made) == 2 and all(c.closed for c in made)


def test_a_partition_unknown_past_the_grace_names_itself() -> None:
    made, new = clients(*[{1}] * 100)
    with pytest.raises(KafkalabError, match=r"cannot read partition 1 of t \(_UNKNOWN_PARTITION\)"):
        end_offsets(new, "t", 3, grace=0.6)
    assert len(made) >= 2 and all(c.closed for c in made)
