"""The lab action `abort-transaction` and the console's listing, on the real session cluster: a transaction open
on two partitions holds read_committed back on both; the console's list (the helper's `producers` over every
topic) shows it on each, and the action on the topic (no partition: every transaction open there) aborts both,
its timeline line saying which, as `kafkalab txn abort` says it. Unit checks of the fault's fields beside."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkalab.cluster import Cluster
from kafkalab.feeds import by_hand
from kafkalab.labs import load_lab
from kafkalab.labs.events import EventKind
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.faults import make_fault
from kafkalab.labs.fix import action_change
from kafkalab.labs.run_view import RunControls
from kafkalab.labs.timeline import Timeline
from tests.test_add_partitions import lab_text
from tests.test_labs_unit import error_of, write
from tests.test_txn_cli import OPEN_TIMEOUT_MS, tail_values, transactional

ABORT = """\
[[fault]]
at = "start"
do = "abort-transaction"
on = "topic test-topic"
{partition}
"""


def test_the_action_is_read_with_or_without_its_partition(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, lab_text(ABORT.format(partition="partition = 2"), ABORT.format(partition=""))))
    one, every = lab.faults
    assert (one.action, one.target.topic, one.partition) == ("abort-transaction", "test-topic", 2)
    assert every.partition is None
    assert one.describe() == "abort-transaction topic test-topic/2 at start"
    change = action_change("after 5s -> abort-transaction topic test-topic partition=0", brokers=3)
    assert change.name == "action.abort-transaction" and change.fault is not None and change.fault.partition == 0


@pytest.mark.parametrize(("fault", "says"), [
    (ABORT.format(partition='partition = "first"'), "fault[1].partition: 'first' is not a partition"),
    (ABORT.format(partition="partition = 1").replace("abort-transaction", "elect-preferred"),
     "fault[1].partition: only abort-transaction takes a partition"),
], ids=["not-a-number", "on-another-action"])
def test_a_bad_partition_is_refused_at_its_field(tmp_path: Path, fault: str, says: str) -> None:
    assert says in error_of(tmp_path, lab_text(fault))


def test_the_action_aborts_every_transaction_open_on_the_topic(
        cluster: Cluster, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=2)
    with transactional(cluster.bootstrap, f"{topic}-done") as done, \
            transactional(cluster.bootstrap, f"{topic}-open", OPEN_TIMEOUT_MS) as hanging:
        done.begin_transaction()
        done.produce(topic, value=b"c0", partition=0)
        done.commit_transaction(30)
        hanging.begin_transaction()
        for partition in (0, 1):
            hanging.produce(topic, value=f"o{partition}".encode(), partition=partition)
        assert hanging.flush(30) == 0  # written, never committed
        done.begin_transaction()
        for partition in (0, 1):
            done.produce(topic, value=f"c{partition + 1}".encode(), partition=partition)
        done.commit_transaction(30)
        assert tail_values(cluster, topic, "read_committed") == ["c0"]  # held back on both partitions

        listed = [t for t in by_hand.open_transactions_now(cluster) if t.topic == topic]
        # on 0 after c0 and its commit marker, which the coordinator may write after the commit returned
        assert [t.partition for t in listed] == [0, 1] and listed[0].start_offset in (1, 2)
        assert listed[1].start_offset == 0

        fault = make_fault({"at": "start", "do": "abort-transaction", "on": f"topic {topic}"}, brokers=3)
        timeline = Timeline("hanging")
        host = RunControls(SimpleNamespace(clients=None, cluster=cluster))  # type: ignore[arg-type]
        assert FaultFiring([fault], timeline, random.Random(1), [1]).fire(host, fault, []) == [f"topic {topic}"]
        [event] = timeline.events(EventKind.FAULT)
        producer, start = listed[0].producer_id, listed[0].start_offset
        assert event.detail == (f"abort-transaction topic {topic}: aborted the transaction of producer {producer} "
                                f"(epoch 0) on {topic}-0, open since offset {start}; aborted the transaction of "
                                f"producer {producer} (epoch 0) on {topic}-1, open since offset 0")
        assert sorted(tail_values(cluster, topic, "read_committed")) == ["c0", "c1", "c2"]  # past both
