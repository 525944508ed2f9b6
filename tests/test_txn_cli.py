"""`kafkalab txn list/describe/find-hanging/abort` and `tail --isolation`, on the real session cluster.

A transaction is left open by a transactional producer of the test's own (begun, written, flushed, never
committed), beside one committed: read_committed stops short of the open one, read_uncommitted reads it, and
`txn abort` lets read_committed past it. Each command runs as a person runs it (a `kafkalab` process, each
`txn` command one run of the Java helper, ended by its own timeout).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from kafkalab.admin.transactions import OpenTransaction, TransactionDescription, _answer, refusal
from kafkalab.cli.txn_cmds import describe_lines, hanging_row
from kafkalab.cluster import Cluster
from kafkalab.cluster.ports import free_port
from tests.test_cli_cluster import assert_one_line_error, kafkalab

if TYPE_CHECKING:
    from confluent_kafka import Producer

# the open transaction's: longer than the test on a loaded machine (a load of 15 on two cores took 48 s to the
# abort), so no coordinator times it out under the test; the broker's transaction.max.timeout.ms is 15 min
OPEN_TIMEOUT_MS = 300_000


@contextlib.contextmanager
def transactional(bootstrap: str, transactional_id: str, timeout_ms: int = 60_000) -> Iterator[Producer]:
    """A transactional producer, initialised; purged and closed after the block, whatever happened in it (its open
    transaction, if any, left to its coordinator to time out)."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": timeout_ms, "log_level": 0})
    try:
        producer.init_transactions(30)
        yield producer
    finally:
        producer.purge()
        with contextlib.suppress(KafkaException):  # a producer the coordinator fenced (timed out) says so here
            producer.close()


def write(producer: Producer, topic: str, values: list[str]) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
    assert producer.flush(30) == 0


def tail_values(cluster: Cluster, topic: str, isolation: str | None) -> list[str]:
    level = [] if isolation is None else ["--isolation", isolation]
    done = kafkalab("tail", topic, "--from-beginning", "-e", *level, "--bootstrap", cluster.bootstrap, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def txn_states(cluster: Cluster) -> dict[str, str]:
    done = kafkalab("txn", "list", "--bootstrap", cluster.bootstrap, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"]
    return {line.split()[0]: line.split()[2] for line in lines[1:]}


def test_an_open_transaction_listed_described_held_back_and_aborted(
        cluster: Cluster, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=1)
    open_id, committed_id = f"{topic}-open", f"{topic}-committed"
    committed = ["c0", "c1", "c2"]
    later = ["c3", "c4", "c5"]
    opened = ["o0", "o1", "o2"]
    with transactional(cluster.bootstrap, committed_id) as done_producer, \
            transactional(cluster.bootstrap, open_id, OPEN_TIMEOUT_MS) as open_producer:
        write(done_producer, topic, committed)
        done_producer.commit_transaction(30)
        write(open_producer, topic, opened)  # begun, written, never committed
        write(done_producer, topic, later)
        done_producer.commit_transaction(30)

        states = txn_states(cluster)
        assert states[open_id] == "Ongoing"
        assert states[committed_id] == "CompleteCommit"

        described = kafkalab("txn", "describe", open_id, "--bootstrap", cluster.bootstrap, timeout=120)
        assert described.returncode == 0, described.stderr
        facts = dict(line.split("  ", 1) for line in described.stdout.splitlines())  # name, two spaces, value
        facts = {name.strip(): value.strip() for name, value in facts.items()}
        assert facts["transactional id"] == open_id and facts["state"] == "Ongoing"
        assert facts["partitions"] == f"{topic}-0"
        assert facts["timeout"] == f"{OPEN_TIMEOUT_MS} ms"
        assert facts["started"].endswith("s ago)")

        # read_committed stops at the last stable offset: the open transaction's first record
        assert tail_values(cluster, topic, "read_committed") == committed
        assert tail_values(cluster, topic, "read_uncommitted") == committed + opened + later
        assert tail_values(cluster, topic, None) == committed + opened + later  # the default, as the lab consumers'

        # open, but its coordinator still counts the partition in it: not hanging, however old
        hanging = kafkalab("txn", "find-hanging", "--topic", topic, "--max-transaction-timeout", "0",
                           "--bootstrap", cluster.bootstrap, timeout=120)
        assert hanging.returncode == 1 and not hanging.stdout, hanging.stdout + hanging.stderr
        assert f"no hanging transactions on topic {topic}" in hanging.stderr
        on_broker = kafkalab("txn", "find-hanging", "--broker", "1", "--max-transaction-timeout", "0",
                             "--bootstrap", cluster.bootstrap, timeout=120)  # every partition with a replica there
        assert on_broker.returncode in (0, 1) and topic not in on_broker.stdout, on_broker.stdout + on_broker.stderr

        aborted = kafkalab("txn", "abort", "--topic", topic, "--partition", "0", "--bootstrap", cluster.bootstrap,
                           timeout=120)
        assert aborted.returncode == 0, aborted.stderr
        # after c0..c2 (offsets 0-2) and their commit marker, which the coordinator writes after commit returns:
        # the open transaction's first record can come before it
        assert any(f"on {topic}-0, open since offset {n}:" in aborted.stdout for n in (3, 4)), aborted.stdout

        assert tail_values(cluster, topic, "read_committed") == committed + later  # past it, its records skipped
        again = kafkalab("txn", "abort", "--topic", topic, "--partition", "0", "--bootstrap", cluster.bootstrap,
                         timeout=120)
        assert_one_line_error(again, "no open transaction on", f"{topic}-0")

        # the coordinator took no part: Ongoing until the producer ends it (or it times out), then aborted
        assert txn_states(cluster)[open_id] == "Ongoing"
        open_producer.abort_transaction(30)
        deadline = time.monotonic() + 60
        state = txn_states(cluster)[open_id]
        while state != "CompleteAbort" and time.monotonic() < deadline:
            assert state == "PrepareAbort", state
            time.sleep(1)
            state = txn_states(cluster)[open_id]
        assert state == "CompleteAbort"
        assert tail_values(cluster, topic, "read_committed") == committed + later


def test_unknown_transactional_id_and_partition_are_one_line_each(cluster: Cluster) -> None:
    result = kafkalab("txn", "describe", "no-such-transactional-id", "--bootstrap", cluster.bootstrap, timeout=120)
    assert_one_line_error(result, "no transactional id 'no-such-transactional-id'", "txn list")
    result = kafkalab("txn", "abort", "--topic", "no-such-topic-txn", "--partition", "0",
                      "--bootstrap", cluster.bootstrap, timeout=120)
    assert_one_line_error(result, "no partition no-such-topic-txn-0")
    result = kafkalab("txn", "find-hanging", "--topic", "no-such-topic-txn", "--bootstrap", cluster.bootstrap,
                      timeout=120)
    assert_one_line_error(result, "no topic no-such-topic-txn")


def test_an_unreachable_cluster_is_one_line() -> None:
    result = kafkalab("txn", "list", "--bootstrap", f"127.0.0.1:{free_port()}", timeout=120)
    assert_one_line_error(result, "cannot reach the Kafka cluster at 127.0.0.1:")


def test_find_hanging_arguments_are_checked_before_any_jvm() -> None:
    assert_one_line_error(kafkalab("txn", "find-hanging", "--partition", "0", "--bootstrap", "127.0.0.1:1"),
                          "--partition needs --topic")
    assert_one_line_error(kafkalab("txn", "find-hanging", "--max-transaction-timeout", "-1",
                                   "--bootstrap", "127.0.0.1:1"), "is negative")


def test_tail_isolation_takes_the_two_levels_only() -> None:
    result = kafkalab("tail", "t", "--isolation", "committed", "--bootstrap", "127.0.0.1:1")
    assert result.returncode == 2 and "invalid choice: 'committed'" in result.stderr


def test_describe_lines_say_each_fact() -> None:
    desc = TransactionDescription("tx", 2, "Ongoing", 1000, 3, 60000, 1_700_000_000_250, (("t", 0), ("t", 2)))
    lines = describe_lines(desc, 1_700_000_012.5)
    assert lines[0].split() == ["transactional", "id", "tx"]
    assert "broker 2" in lines[1] and lines[2].endswith("Ongoing") and lines[3].endswith("id 1000, epoch 3")
    assert lines[5].endswith("(12.2 s ago)") and lines[6].endswith("t-0, t-2")
    idle = describe_lines(TransactionDescription("tx", 1, "CompleteCommit", 1000, 0, 60000, None, ()), 0)
    assert idle[5].endswith("  -") and idle[6].endswith("  -")


def test_hanging_row_is_kafka_transactions_columns() -> None:
    t = OpenTransaction("t", 1, 1000, 0, -1, 42, 1_700_000_000_000)
    assert hanging_row(t, 1_700_000_000 + 16 * 60 + 5) == ("t", "1", "1000", "0", "-1", "42", "1700000000000", "16")


@pytest.mark.parametrize(("stdout", "expected"), [
    ('log4j:WARN no appenders\n{"ok": []}\n', {"ok": []}),
    ('{"error": "no_open", "message": "no open transaction on t-0"}', {"error": "no_open",
                                                                       "message": "no open transaction on t-0"}),
    ("", None), ("{not json\n", None),
])
def test_the_helpers_answer_is_its_last_json_line(stdout: str, expected: object) -> None:
    assert _answer(stdout) == expected


def test_refusals_name_what_to_do() -> None:
    request = {"op": "abort", "topic": "t", "partition": 3}
    assert "--start-offset" in str(refusal("b:1", request, "several_open", "2 open transactions on t-3, ..."))
    assert "no partition t-3 on" in str(refusal("b:1", request, "unknown_partition", "UnknownTopicOrPartition"))
    said = str(refusal("b:1", request, "unknown_partition", "topic t has partitions 0..2"))
    assert "no partition t-3 on the cluster at b:1 (topic t has partitions 0..2)" in said
    assert str(refusal("b:1", request, "failed", "X: boom\nat ...")).endswith("failed: X: boom")


def test_find_hanging_says_where_it_looked() -> None:
    from argparse import Namespace

    from kafkalab.cli.txn_cmds import searched

    assert searched(Namespace(topic=None, partition=None, broker=None)) == "on any partition"
    assert searched(Namespace(topic=None, partition=None, broker=2)) == "on broker 2's partitions"
    assert searched(Namespace(topic="t", partition=None, broker=None)) == "on topic t"
    assert searched(Namespace(topic="t", partition=1, broker=3)) == "on t-1 (its replica on broker 3)"
