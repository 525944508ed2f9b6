"""Committed offsets expire on a real broker: an empty group's offsets are deleted after
``offsets.retention.minutes`` (1, the least Kafka takes: this test waits that minute), `kafkalab group` says so
from ``__consumer_offsets`` where Kafka's group APIs have forgotten the group, and a consumer that comes back
with ``auto.offset.reset=latest`` skips what was sent while the group was away (the offsets-expire lab's lesson).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from itertools import count

import pytest
from confluent_kafka import Consumer, Producer

from kafkalab import kafka_install
from kafkalab.admin import Admin, Groups
from kafkalab.admin.coordinator import OFFSETS_TOPIC
from kafkalab.admin.offsets_log import OffsetsFate
from kafkalab.cluster import Cluster
from kafkalab.errors import KafkalabError
from tests.conftest import make_spec, started
from tests.helpers import wait_until

pytestmark = pytest.mark.cluster

TOPIC, GROUP = "orders", "orders-app"
RETENTION_MIN = 1


@pytest.fixture(scope="module")
def short_retention(distribution: kafka_install.Distribution) -> Iterator[Cluster]:
    """One broker that looks for expired offsets every second."""
    spec = make_spec("offsets-expire", brokers=1, overrides={
        "offsets.retention.minutes": str(RETENTION_MIN), "offsets.retention.check.interval.ms": "1000"})
    yield from started(spec, distribution, 180)


def send(bootstrap: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(TOPIC, value=value)
    assert producer.flush(30) == 0


def consumer(bootstrap: str, reset: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": reset,
                  "enable.auto.commit": False})
    c.subscribe([TOPIC])
    return c


def read(c: Consumer, count: int) -> list[str]:
    values: list[str] = []

    def more() -> bool:
        values.extend(value.decode() for m in c.consume(count, 0.5) if not m.error() and (value := m.value()))
        return len(values) >= count

    wait_until(more, timeout=60, interval=0, what=f"{count} records read")
    return values


def test_reading_the_offsets_log_never_creates_the_offsets_topic(short_retention: Cluster) -> None:
    """The console's Groups tab reads __consumer_offsets from a cluster's start. Its reader, a consumer with a group
    id, asked for a coordinator as soon as it was made, and that lookup created the topic: in
    consumer-receives-nothing while brokers 2 and 3 were still up, so the group's coordinator partition could
    land on a broker the lab then stopped, and the reference solution failed (first of this module: the topic
    does not exist yet)."""
    admin = Admin(short_retention.bootstrap, timeout_s=5.0)
    assert OFFSETS_TOPIC not in admin.client.list_topics(timeout=10).topics
    groups = Groups(admin)
    observed_until = time.monotonic() + 10  # a lookup creates the topic within a second or two: the console polls
    while time.monotonic() < observed_until:
        with contextlib.suppress(KafkalabError):  # the offsets topic loading: the list answers again later
            groups.listed_with_gone(1.0)
        assert OFFSETS_TOPIC not in admin.client.list_topics(timeout=10).topics


def test_an_empty_groups_offsets_expire_and_a_latest_consumer_then_skips_what_came_meanwhile(
        short_retention: Cluster) -> None:
    bootstrap = short_retention.bootstrap
    admin = Admin(bootstrap, timeout_s=5.0)
    admin.create_topic(TOPIC, partitions=2)
    groups = Groups(admin)
    send(bootstrap, [f"before-{i}" for i in range(10)])
    first = consumer(bootstrap, "earliest")
    assert sorted(read(first, 10)) == sorted(f"before-{i}" for i in range(10))
    first.commit(asynchronous=False)
    first.close()  # leaves: the group is empty, and its retention counts from now
    held = wait_until(lambda: (d := groups.describe(GROUP)).state == "Empty" and d, timeout=30, what="group Empty")
    assert sum(p.committed or 0 for p in held.partitions) == 10
    assert held.offsets_gone is None

    send(bootstrap, [f"meanwhile-{i}" for i in range(5)])
    gone = wait_until(lambda: groups.describe(GROUP).offsets_gone, timeout=RETENTION_MIN * 60 + 60,
                      interval=1.0, what="the group's offsets expired")
    assert gone.fate is OffsetsFate.EXPIRED and gone.partitions == 2 and gone.retention_min == RETENTION_MIN
    assert gone.at - gone.last_commit_at >= RETENTION_MIN * 60 - 1
    desc = groups.require(GROUP)  # Kafka forgot the group (Dead); `group describe` still tells it
    assert desc.state == "Dead" and desc.partitions == () and desc.offsets_gone == gone
    assert [(g.group_id, g.state, g.offsets_gone) for g in groups.listed_with_gone()] == [(GROUP, "Dead", gone)]

    back = consumer(bootstrap, "latest")
    got: list[str] = []
    sent = count()

    def sent_after_read() -> list[str]:
        """One more record sent after it came back, then a look: it reads once its reset to the end is done
        (librdkafka tells no position before a record is read)."""
        send(bootstrap, [f"after-{next(sent)}"])
        got.extend(value.decode() for m in back.consume(10, 1.0) if not m.error() and (value := m.value()))
        return got

    try:
        wait_until(sent_after_read, timeout=60, interval=0, what="a record sent after it came back, read")
    finally:
        back.close()
    assert got and all(v.startswith("after-") for v in got), got  # the five sent while it was away: skipped
