"""Transactions as `kafka-transactions.sh` (KIP-664) sees them: list, describe, find-hanging, abort.

confluent-kafka 2.16's AdminClient has none of ListTransactions, DescribeTransactions, DescribeProducers or
the abort (WriteTxnMarkers); Kafka's own Admin API has them all, run from the broker jars as a small Java
program (``Transactions.java``, compiled once as the other helpers are). One request per run, JSON in (an
argument) and JSON out (its last line on stdout).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any

from kafkalab import KAFKA_VERSION, KAFKA_VERSIONS
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install import Distribution, java_binary, java_helper_argv, locate
from kafkalab.paths import package_file

TRANSACTIONS_SOURCE = package_file("kafkalab.admin", "Transactions.java")
API_TIMEOUT_MS = 10_000  # each admin call's; an unreachable cluster says so after this
RUN_GRACE_S = 40.0  # beyond it: the JVM's start (and a first compile) on a loaded machine


@dataclass(frozen=True)
class TransactionListing:
    """One line of `kafka-transactions.sh list`."""

    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    """`kafka-transactions.sh describe`: the coordinator's view of one transactional id."""

    transactional_id: str
    coordinator: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int | None  # None: no transaction open
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class OpenTransaction:
    """A producer's transaction open on a partition, as the partition's leader (or a replica) knows it."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int
    transactional_id: str | None = None  # find-hanging's: None when no coordinator knows the producer


def helper_distribution() -> Distribution:
    """The Kafka jars to run the helper from: --kafka-home/KAFKA_HOME or the default version, else any cached one
    (its Admin API speaks to brokers of every version kafkalab runs)."""
    try:
        return locate()
    except KafkalabError as first:
        for version in KAFKA_VERSIONS:
            if version != KAFKA_VERSION:
                try:
                    return locate(version=version)
                except KafkalabError:
                    continue
        raise first from None


def list_transactions(dist: Distribution, bootstrap: str) -> list[TransactionListing]:
    rows = _ask(dist, bootstrap, {"op": "list"})
    return sorted((TransactionListing(**row) for row in rows), key=lambda t: t.transactional_id)


def describe_transaction(dist: Distribution, bootstrap: str, transactional_id: str) -> TransactionDescription:
    row = _ask(dist, bootstrap, {"op": "describe", "id": transactional_id})
    row["partitions"] = tuple(sorted((str(t), int(p)) for t, p in row["partitions"]))
    return TransactionDescription(**row)


def open_transactions(dist: Distribution, bootstrap: str, topic: str | None = None,
                      partition: int | None = None) -> list[OpenTransaction]:
    """The transactions open on one partition, a topic's or every topic's (DescribeProducers' producers with a
    current start offset), whether or not their coordinator will end them: what an abort can act on."""
    rows = _ask(dist, bootstrap, {"op": "producers", "topic": topic, "partition": partition})
    found = (OpenTransaction(**row) for row in rows if row["start_offset"] is not None)
    return sorted(found, key=lambda t: (t.topic, t.partition, t.start_offset))


def find_hanging(dist: Distribution, bootstrap: str, *, broker: int | None = None, topic: str | None = None,
                 partition: int | None = None, max_timeout_ms: int) -> list[OpenTransaction]:
    """`kafka-transactions.sh find-hanging`: open transactions older than ``max_timeout_ms`` on the partitions
    searched whose coordinator will write no marker (transactional id gone, or the partition not in its
    transaction)."""
    request = {"op": "find_hanging", "broker": broker, "topic": topic, "partition": partition,
               "max_timeout_ms": max_timeout_ms}
    rows = _ask(dist, bootstrap, request)
    return sorted((OpenTransaction(**row) for row in rows), key=lambda t: (t.topic, t.partition, t.start_offset))


def abort_transactions(dist: Distribution, bootstrap: str, topic: str, partition: int | None = None,
                       start_offset: int | None = None) -> list[OpenTransaction]:
    """`kafka-transactions.sh abort --topic --partition --start-offset`: an abort marker for the open transaction
    on the partition (the one starting at ``start_offset``, or the only one); without ``partition``, for every
    transaction open on the topic's partitions. Returns the transactions aborted (none open: KafkalabError).
    The one abort of the CLI, the console's key and the lab action ``abort-transaction``."""
    if partition is None:
        if start_offset is not None:
            raise KafkalabError(f"a start offset names a transaction on one partition: give the partition of "
                                f"{topic} too")
        rows = _ask(dist, bootstrap, {"op": "abort_all", "topic": topic})
        return [OpenTransaction(**row) for row in rows]
    row = _ask(dist, bootstrap, {"op": "abort", "topic": topic, "partition": partition, "start_offset": start_offset})
    return [OpenTransaction(**row)]


READ_PAST = "read_committed consumers read past it now"  # what an abort changed, said after it by hand


def aborted_line(t: OpenTransaction) -> str:
    """One aborted transaction in words, as the CLI, the console and a run's timeline say it."""
    return (f"aborted the transaction of producer {t.producer_id} (epoch {t.producer_epoch}) on {t.topic}-{t.partition}"
            f", open since offset {t.start_offset}")


def _ask(dist: Distribution, bootstrap: str, request: dict[str, Any]) -> Any:
    cmd = [java_binary(), "-Xmx128m", "-XX:TieredStopAtLevel=1", *java_helper_argv(dist, TRANSACTIONS_SOURCE),
           bootstrap, str(API_TIMEOUT_MS), json.dumps(request)]
    timeout = API_TIMEOUT_MS / 1000 * 3 + RUN_GRACE_S  # find-hanging makes up to four calls in a row
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise KafkalabError(f"asking {bootstrap} about transactions took over {timeout:.0f}s: check the "
                            "brokers") from None
    answer = _answer(done.stdout)
    if answer is None:
        lines = [ln for ln in done.stderr.splitlines() if "Exception" in ln or "rror" in ln] or ["no output"]
        raise KafkalabError(f"the transactions helper failed (exit {done.returncode}): {lines[-1].strip()[:300]}")
    if "error" in answer:
        raise refusal(bootstrap, request, str(answer["error"]), str(answer.get("message", "")))
    return answer["ok"]


def _answer(stdout: str) -> dict[str, Any] | None:
    """The helper's answer: its last JSON line (a Kafka's logging may print before it)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                return None
            return found if isinstance(found, dict) else None
    return None


def refusal(bootstrap: str, request: dict[str, Any], kind: str, message: str) -> KafkalabError:
    """The one line for the helper's error ``kind``."""
    where = f"{request.get('topic')}-{request.get('partition')}"
    first = message.splitlines()[0][:300] if message else kind
    if kind == "unreachable":
        return KafkalabError(f"cannot reach the Kafka cluster at {bootstrap} ({first}): start it "
                             "(`kafkalab cluster up`) or name the right one (--state-dir, --bootstrap)")
    if kind == "unknown_id":
        return KafkalabError(f"no transactional id {request.get('id')!r} on the cluster at {bootstrap}: "
                             "`kafkalab txn list` lists them")
    if kind == "unknown_partition":
        what = f"partition {where}" if request.get("partition") is not None else f"topic {request.get('topic')}"
        known = f" ({first})" if first.startswith("topic ") else ""
        return KafkalabError(f"no {what} on the cluster at {bootstrap}{known}: check --topic and --partition "
                             "(`kafkalab topic describe`)")
    if kind == "no_open":
        return KafkalabError(f"{first}: nothing to abort (`kafkalab txn list` shows the transactions)")
    if kind == "several_open":
        return KafkalabError(f"{first}: name the one to abort with --start-offset")
    return KafkalabError(f"{request.get('op')} of transactions on {bootstrap} failed: {first}")
