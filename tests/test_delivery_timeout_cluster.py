"""Records the producer gives up after its delivery timeout, on the session cluster: the leader of a one-replica
topic paused (SIGSTOP) longer than the timeout, the records fail with ``_MSG_TIMED_OUT`` while the producer runs,
the producer pane says so in words, and the producer goes on once the leader answers again."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalab.admin import Admin
from kafkalab.clients.producer import Producer
from kafkalab.cluster import Cluster
from kafkalab.ui.producer import failures_line
from tests.helpers import wait_until

pytestmark = pytest.mark.cluster
TIMED_OUT = "_MSG_TIMED_OUT"


def test_records_fail_after_the_delivery_timeout_and_the_producer_moves_on(
        cluster: Cluster, admin: Admin, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=1, replication_factor=1)
    leader = admin.snapshot().partition(topic, 0).leader  # type: ignore[union-attr]
    assert leader is not None
    producer = Producer({"producer.topic": topic, "producer.num-records-per-roll": "1500",
                         "producer.wait-after-send": "2", "producer.delivery-timeout": "1500",
                         "producer.request-timeout": "1000"}, tmp_path, "dt", cluster.bootstrap)
    producer.start()
    try:
        wait_until(lambda: producer.stats().acked > 50, 60, 0.05, "sending under way")
        cluster.node(leader).pause()  # one replica: no other broker can take the partition over
        live = wait_until(lambda: (s := producer.stats()).failed.get(TIMED_OUT) and s, 30, 0.05,
                          "records timed out")
    finally:
        cluster.node(leader).resume()
    assert not live.state.ended  # failed while it still sends: the app moves on
    assert f"{live.failed[TIMED_OUT]:,} failed: delivery timeout" in failures_line(live).plain
    assert producer.join(90)
    final = producer.stats()
    assert final.state == "finished" and final.acked > live.acked  # sending again after the leader came back
    with (tmp_path / "producer.csv").open(newline="") as f:
        logged = Counter((r["status"], r["error"]) for r in csv.DictReader(f))
    assert logged[("failed", TIMED_OUT)] == final.failed[TIMED_OUT] >= live.failed[TIMED_OUT]
    assert final.acked + final.failed_total + final.unknown == final.total == sum(logged.values())
