"""The Spark job that classifies every anomaly of a run, per partition, in one read of the logs.

Definitions (the tests hold a plain-Python reference of exactly these):

- A *message* is a message id within a topic. It is *sent* when a producer log has its row; its
  status is the producer's (acked / failed / unknown). A *position* is (topic, partition, offset).
- A message is *processed* when any consumer row has its id, and *observed* at every position where a
  consumer or audit row has it.
- lost: acked, not processed. With an audit log, lost splits into lost_by_brokers (not in the audit)
  and missed_by_consumers (in the audit).
- duplicated: sent and observed at two or more positions.
- recovered: sent, status failed or unknown, and observed; not a record of an aborted transaction (failed with
  the error ``ABORTED``): that one was never committed, only a read_uncommitted reader sees it.
- aborted_read: sent, failed ``ABORTED``, and processed: a consumer read a transaction that never committed.
- redelivered: a (consumer group, position) processed two or more times (any message id).
- unexpected: a position processed whose message id was not sent (another run, no id, unknown sender).
- typed (a total, not an anomaly): a position processed whose record was typed by hand (its id
  ``TYPED_MSG_ID``): received, but no producer log accounts for it.
- reordered: among the distinct (position, message id) pairs observed whose id is of the run, taken per
  (topic, partition, producer) in (offset, seq) order, a pair whose seq is below the previous pair's.
- key_reordered: across partitions, a record (message id at a position) whose first row in a consumer log
  comes after the first row there of a record of the same key (topic, record key and producer; keyless records
  have no key order) with a higher seq: what adding partitions mid-stream does. Only a key processed on two or
  more partitions is judged: on one partition, its order is the partition's (``reordered``). A consumer log's
  row order is its consumer's processing order, within one file (one consumer instance); its ``ts_ms`` is the
  record's timestamp (the producer's create time), not when it was processed, so nothing orders two consumers'
  rows and pairs processed by two consumers are not judged. A record's later rows in the file (redeliveries)
  are not judged (nor need they be as a newer record: its first row came before). A message counts once per
  partition, however many groups or consumers processed it out of order; the report also counts the distinct
  (topic, key)s of the messages counted.
- failed by reason (a total, not an anomaly): the producer's failed rows per its error (``_MSG_TIMED_OUT``:
  the delivery timeout expired; ``ABORTED``: the record's transaction did not commit), over the whole run.

Each message's counts go to its partition: the producer's, else (partition -1, or not sent) the lowest
partition it was observed in; a reordered pair, and a key_reordered record, goes to its own partition. A
row without a message id is its own message, keyed by its position (a typed one by its position under its
own prefix).

The job is one SQL query (building it costs a few calls to the JVM, not thousands). Its physical plan: the
three logs are read once (CSV, explicit schema; a consumer row's message id matched against the run's there,
once) and shuffled once, by message key. Three hash aggregations on that partitioning (no further shuffle) fold
rows into (group, position), position and message levels. A second branch over the same shuffle output orders
the observed pairs for reordering; a third finds the keys processed on two or more partitions (a small
aggregation, which counts the failed sends per error too; broadcast) and orders each consumer file's rows of
those keys only, after one more shuffle (of those rows, by group, file and key): usually none, so the common run
pays for an aggregation by key, not a sort of every row. Normal messages then collapse to one row per partition,
in a hash aggregation (numbers only); only anomalous messages survive individually, so the sample ids cost a
sort of the anomalies only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from kafkalab.logformat import (
    ABORTED,
    CONSUMER_COLUMNS,
    MSG_ID_PATTERN,
    PRODUCER_COLUMNS,
    PRODUCER_STATUSES,
    TYPED_MSG_ID,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# anomaly classes in report order; the audit-only ones are None without an audit log. consumed_twice is the
# content identity's (content_job.py): without an audit it cannot tell a redelivery from a duplicate write.
CLASSES = ("lost", "lost_by_brokers", "missed_by_consumers", "duplicated", "redelivered", "consumed_twice",
           "reordered", "key_reordered", "recovered", "aborted_read", "unexpected")
SEQUENCE_CLASSES = ("reordered", "key_reordered")  # they need each producer's sequence numbers
# it needs each send's own outcome: matched by content, an aborted copy cannot be told from a committed one
OUTCOME_CLASSES = ("aborted_read",)
AUDIT_CLASSES = ("lost_by_brokers", "missed_by_consumers")


class Identity(StrEnum):
    """What makes two log rows the same record: kafkalab's message id, or (for logs without one, the course's)
    the record's topic, partition, key and value, counted as a multiset (content_job.py)."""

    MESSAGE_ID = "message id"
    CONTENT = "topic, partition, key, value"

    def classes(self) -> tuple[str, ...]:
        """The classes an analysis by this identity reports: reordering needs sequence numbers, aborted_read each
        send's own outcome, consumed_twice is only for an identity that cannot tell a redelivery from a duplicate."""
        skip = ("consumed_twice",) if self is Identity.MESSAGE_ID else (*SEQUENCE_CLASSES, *OUTCOME_CLASSES)
        return tuple(c for c in CLASSES if c not in skip)


TOTALS = ("attempted", "acknowledged", "failed", "unknown", "consumed_rows", "distinct_consumed", "typed")
SAMPLES_PER_CLASS = 10

# source codes of a row in the shuffled union
SRC_PRODUCER, SRC_CONSUMER, SRC_AUDIT = 0, 1, 2
BAD_OFFSET = 3  # a malformed row of source s travels as s + BAD_OFFSET
SRC_FOREIGN = 6  # a producer row of another run
# keys of rows that are not messages; \x00, \x01 and \x02 cannot start a message id
BAD_KEY = "\x00bad"
FOREIGN_KEY = "\x00foreign"
POSITION_KEY_PREFIX = "\x01"
TYPED_KEY_PREFIX = "\x02"
CONTENT_KEY_PREFIX = "\x03"  # a sample of a record matched by content: the prefix, then "key,value"
NO_REASON = "(no error logged)"  # a failed send whose producer row has an empty error
RECORD_KEY_PREFIX = "\x04"  # a (topic, record key) whose records were processed out of key order: the prefix, the key

_INT_TYPES = {"seq": "long", "partition": "int", "offset": "long", "ts_ms": "long", "leader_epoch": "int"}


def schema_ddl(columns: Sequence[str]) -> str:
    """The explicit CSV schema of a log, plus the corrupt-record column Spark fills for bad lines."""
    cols = [f"`{c}` {_INT_TYPES.get(c, 'string')}" for c in columns]
    return ", ".join([*cols, "`_corrupt` string"])


@dataclass
class PartitionCounts:
    topic: str
    partition: int
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class Sample:
    msg_id: str | None
    topic: str
    partition: int
    offset: int
    record: str | None = None  # "key,value" of a record matched by its content (it has no message id)
    # key_reordered: the record's key, and the record of that key with a higher seq processed before it
    key: str | None = None
    after_msg_id: str | None = None
    after_partition: int | None = None
    after_offset: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Its fields; those only some classes have are left out where they are None."""
        return {k: v for k, v in vars(self).items() if k in _ALWAYS or v is not None}

    def describe(self) -> str:
        """``r1:p:3 @t-0:5``, a record without id by its content (``key 3: "value..." @t-0``), one processed out of
        its key's order with the newer record before it (``key 7: r1:p:3 @t-0:5 after r1:p:9 @t-2:1``)."""
        at = f"@{self.topic}-{self.partition}" + (f":{self.offset}" if self.offset >= 0 or not self.record else "")
        if self.record is not None:
            key, _, value = self.record.partition(",")
            shown = value if len(value) <= 40 else value[:39] + "…"
            return f"key {key or '(none)'}: {shown!r} {at}"
        if self.key is not None:
            return (f"key {self.key}: {self.msg_id} {at} after {self.after_msg_id} "
                    f"@{self.topic}-{self.after_partition}:{self.after_offset}")
        return f"{self.msg_id or '(no id)'} {at}"


_ALWAYS = ("msg_id", "topic", "partition", "offset")


@dataclass
class JobResult:
    partitions: list[PartitionCounts]
    samples: dict[str, list[Sample]]
    malformed: dict[str, int]  # per source kind: producer / consumer / audit
    foreign_runs: list[str]
    producer_id_repeats: int
    failed_by_reason: dict[str, int] = field(default_factory=dict)  # the producer's error -> failed sends
    key_reordered_keys: int = 0  # distinct (topic, record key)s of the key_reordered records


def read_log(session: SparkSession, paths: Sequence[Path | str], columns: Sequence[str]) -> DataFrame:
    """One CSV read of all files of a kind (local paths or URIs); RFC 4180 quoting; a bad line gets
    ``_corrupt`` set."""
    return session.read.csv(
        [str(p) for p in paths], schema=schema_ddl(columns), header=True, mode="PERMISSIVE",
        escape='"', columnNameOfCorruptRecord="_corrupt", enforceSchema=True,
    )


# SQL text of the producer and seq parts of a well-formed message id
PRODUCER_OF_KEY = "substring_index(substring_index(key, ':', 2), ':', -1)"
SEQ_OF_KEY = "substring_index(key, ':', -1)"


def _producer_rows(view: str, with_run: bool) -> str:
    """Producer rows in the shuffled shape; a bad row collapses onto one key, a row of another run
    travels on its own key with its run in the topic column, so the error can name it."""
    foreign = "good AND NOT startswith(msg_id, :run_prefix)" if with_run else "false"
    return f"""
    SELECT CASE WHEN NOT good THEN :bad_key WHEN foreign THEN :foreign_key ELSE msg_id END AS key,
           CAST(CASE WHEN NOT good THEN {SRC_PRODUCER + BAD_OFFSET} WHEN foreign THEN {SRC_FOREIGN}
                     ELSE {SRC_PRODUCER} END AS TINYINT) AS src,
           CAST(NULL AS STRING) AS grp,
           CASE WHEN foreign THEN substring_index(msg_id, ':', 1) WHEN good THEN topic END AS topic,
           CASE WHEN good AND NOT foreign THEN partition END AS partition,
           CASE WHEN good AND NOT foreign THEN coalesce(offset, -1) END AS offset,
           CAST(CASE WHEN good THEN status_code END AS TINYINT) AS status,
           CASE WHEN good AND NOT foreign AND status_code IN (1, 3) THEN coalesce(error, '') END AS text,
           {_NOT_PROCESSED}
    FROM (SELECT *, {foreign} AS foreign FROM (
        SELECT *, _corrupt IS NULL AND msg_id IS NOT NULL AND topic IS NOT NULL AND partition IS NOT NULL
                  AND status_code IS NOT NULL AND msg_id RLIKE :pattern AS good
        FROM (SELECT *, CASE status WHEN 'acked' THEN 0 WHEN 'unknown' THEN 2
                                    WHEN 'failed' THEN CASE WHEN error = :aborted THEN 3 ELSE 1 END END
                        AS status_code FROM {view})))"""


# The shuffled columns only a consumer row of a message id of the run has: its processing order and its file (see
# _key_reordered_facts). Its record's key travels in ``text``, where a producer row has its error: one column less.
_NOT_PROCESSED = "CAST(NULL AS BIGINT) AS pos, CAST(NULL AS BIGINT) AS fid"
# A consumer log's rows are in the order its consumer processed them. monotonically_increasing_id() follows that
# order within a file: it counts up within each scan partition, and a file's rows go to partitions in the file's
# order (one partition holds one file, or a stretch of one: Spark reads a file's splits in offset order, its
# sort by split size being stable). A file is named by a hash of its path (shorter than the path, in a shuffle).
# The message id is matched here, once per row: the branches after the shuffle test ``pos`` or ``text`` instead.
_PROCESSED = ("CASE WHEN good AND of_run THEN nullif(key, '') END AS text, "
              "CASE WHEN good AND of_run THEN pos END AS pos, CASE WHEN good AND of_run THEN fid END AS fid")
_PROCESSING_ORDER = ("monotonically_increasing_id() AS pos, xxhash64(input_file_name()) AS fid, "
                     "startswith(msg_id, :run_prefix) AND msg_id RLIKE :pattern AS of_run")


def _reader_rows(view: str, src: int, with_run: bool) -> str:
    """Consumer or audit rows in the shuffled shape; a row without a message id is keyed by position."""
    grp = "`group`" if src == SRC_CONSUMER else "NULL"
    processed, order = ((_PROCESSED, f", {_PROCESSING_ORDER}") if src == SRC_CONSUMER and with_run
                        else (f"CAST(NULL AS STRING) AS text, {_NOT_PROCESSED}", ""))
    return f"""
    SELECT CASE WHEN NOT good THEN :bad_key
                WHEN msg_id IS NULL OR msg_id = '' THEN concat_ws(':', :position_prefix, topic, partition, offset)
                WHEN msg_id = :typed_id THEN concat_ws(':', :typed_prefix, topic, partition, offset)
                ELSE msg_id END AS key,
           CAST(CASE WHEN good THEN {src} ELSE {src + BAD_OFFSET} END AS TINYINT) AS src,
           CAST(CASE WHEN good THEN {grp} END AS STRING) AS grp,
           CASE WHEN good THEN topic END AS topic,
           CASE WHEN good THEN partition END AS partition,
           CASE WHEN good THEN offset END AS offset,
           CAST(NULL AS TINYINT) AS status, {processed}
    FROM (SELECT *, _corrupt IS NULL AND topic IS NOT NULL AND partition IS NOT NULL AND offset IS NOT NULL
                    AS good{order} FROM {view})"""


def sum_if(cond: str, value: str = "1") -> str:
    return f"SUM(CASE WHEN {cond} THEN {value} ELSE 0 END)"


# (group, position) -> position -> message, on the partitioning by key
FOLDS = f"""
deliveries AS (
    SELECT key, src, grp, topic, partition, offset, COUNT(1) AS n, MAX(status) AS status
    FROM shuffled GROUP BY key, src, grp, topic, partition, offset),
positions AS (
    SELECT key, topic, partition, offset,
           {sum_if(f"src = {SRC_PRODUCER}", "n")} AS p_rows,
           MAX(CASE WHEN src = {SRC_PRODUCER} THEN status END) AS p_status,
           {sum_if(f"src = {SRC_CONSUMER}", "n")} AS c_rows,
           {sum_if(f"src = {SRC_CONSUMER} AND n >= 2")} AS redelivered,
           {sum_if(f"src = {SRC_AUDIT}", "n")} AS a_rows,
           {", ".join(f"{sum_if(f'src = {s + BAD_OFFSET}', 'n')} AS bad_{s}" for s in (0, 1, 2))},
           {sum_if(f"src = {SRC_FOREIGN}", "n")} AS foreign
    FROM deliveries GROUP BY key, topic, partition, offset),
messages AS (
    SELECT key, topic, SUM(p_rows) AS p_rows, MAX(p_status) AS p_status,
           MAX(CASE WHEN p_rows > 0 THEN partition END) AS p_partition,
           MAX(CASE WHEN p_rows > 0 THEN offset END) AS p_offset,
           SUM(c_rows) AS c_rows, SUM(a_rows) AS a_rows,
           {sum_if("c_rows > 0 OR a_rows > 0")} AS observed,
           {sum_if("c_rows > 0")} AS processed_positions,
           SUM(redelivered) AS redelivered,
           MIN(CASE WHEN c_rows > 0 OR a_rows > 0 THEN partition END) AS obs_partition,
           MIN(CASE WHEN c_rows > 0 OR a_rows > 0 THEN offset END) AS obs_offset,
           MIN(CASE WHEN redelivered > 0 THEN offset END) AS redelivered_offset,
           MIN(CASE WHEN c_rows > 0 THEN offset END) AS processed_offset,
           SUM(bad_0) AS bad_0, SUM(bad_1) AS bad_1, SUM(bad_2) AS bad_2, SUM(foreign) AS foreign
    FROM positions GROUP BY key, topic)"""


@dataclass(frozen=True)
class Facts:
    """A SELECT of fact rows (topic, partition, sample_key and some counts) and the count, sample-offset and
    sample-detail columns it gives; a column it does not give is NULL in its rows (see :func:`union_facts`)."""

    sql: str
    sums: tuple[str, ...]
    offsets: tuple[str, ...]
    details: tuple[str, ...] = ()
    keys: tuple[str, ...] = ("topic", "partition", "sample_key")  # and ``reason`` for the failed sends' errors
    # its rows are one per (topic, partition, sample key) already: they skip the sum per message (see per_message)
    collapsed: bool = False


def _message_facts(with_audit: bool) -> Facts:
    """One row per message: its partition, totals, class counts and the offset each sample shows."""
    sent = "p_rows > 0"
    typed = "startswith(key, :typed_prefix)"
    acked = f"{sent} AND p_status = 0"
    lost = f"{acked} AND c_rows = 0"
    failed = f"{sent} AND p_status IN (1, 3)"
    aborted = f"{sent} AND p_status = 3"  # failed ABORTED: never committed, in the topic yet not recovered
    flag = {
        "lost": lost,
        "duplicated": f"{sent} AND observed >= 2",
        "recovered": f"{sent} AND p_status IN (1, 2) AND observed >= 1",
        "aborted_read": f"{aborted} AND processed_positions > 0",
        "unexpected": f"NOT ({sent}) AND NOT {typed} AND processed_positions > 0",
        "redelivered": "redelivered > 0",
    }
    sample_offset = {"lost": "p_offset", "duplicated": "obs_offset", "recovered": "obs_offset",
                     "aborted_read": "processed_offset",
                     "unexpected": "processed_offset", "redelivered": "redelivered_offset"}
    if with_audit:
        flag |= {"lost_by_brokers": f"{lost} AND a_rows = 0", "missed_by_consumers": f"{lost} AND a_rows > 0"}
        sample_offset |= {"lost_by_brokers": "p_offset", "missed_by_consumers": "obs_offset"}
    counts = {name: f"CASE WHEN {cond} THEN 1 ELSE 0 END" for name, cond in flag.items()}
    counts["redelivered"] = "redelivered"
    counts["unexpected"] = f"CASE WHEN {flag['unexpected']} THEN processed_positions ELSE 0 END"
    totals = {
        "attempted": f"CASE WHEN {sent} THEN p_rows ELSE 0 END",
        "acknowledged": f"CASE WHEN {acked} THEN 1 ELSE 0 END",
        "failed": f"CASE WHEN {failed} THEN 1 ELSE 0 END",
        "unknown": f"CASE WHEN {sent} AND p_status = 2 THEN 1 ELSE 0 END",
        "consumed_rows": "c_rows",
        "distinct_consumed": "CASE WHEN c_rows > 0 THEN 1 ELSE 0 END",
        "typed": f"CASE WHEN {typed} THEN processed_positions ELSE 0 END",
        "p_repeats": "CASE WHEN p_rows > 1 THEN 1 ELSE 0 END",
        **{f"bad_{s}": f"bad_{s}" for s in (0, 1, 2)},
        "foreign": "foreign",
    }
    anomalous = " OR ".join(f"({cond})" for cond in flag.values())
    columns = [
        "topic",
        f"CASE WHEN {sent} AND p_partition >= 0 THEN p_partition ELSE coalesce(obs_partition, p_partition) END"
        " AS partition",
        f"CASE WHEN {anomalous} THEN key END AS sample_key",
        *[f"CAST({v} AS BIGINT) AS {k}" for k, v in {**totals, **counts}.items()],
        *[f"CASE WHEN {flag[k]} THEN {v} END AS o_{k}" for k, v in sample_offset.items()],
    ]
    return Facts(f"SELECT {', '.join(columns)} FROM messages", (*totals, *counts),
                 tuple(f"o_{k}" for k in sample_offset))


SHUFFLED = ("key", "src", "grp", "topic", "partition", "offset", "status", "text", "pos", "fid")


def _reusing_shuffle(cond: str) -> str:
    """A predicate over ``shuffled`` for a branch read from the rows as shuffled by message key, so that Spark
    reuses that one shuffle (and the one read of the logs) for every branch.

    Reuse needs each branch to keep every column of the shuffle and no filter pushed beneath it: hence one
    non-deterministic predicate (never pushed down), whose ELSE (never taken: no partition id is negative)
    mentions every column.
    """
    return f"CASE WHEN spark_partition_id() >= 0 THEN {cond} ELSE hash({', '.join(SHUFFLED)}) = 0 END"


def _checked(with_run: bool) -> str:
    """One aggregation over one read of the shuffle for two small answers: the failed sends per (topic, error),
    and each (topic, producer, record key) of the run's consumer rows with its lowest and highest partition.

    Spark runs it once for its two readers (:func:`_reason_facts`, :func:`_key_reordered_facts`): a common table
    expression over a non-deterministic predicate is not copied into each.
    """
    consumers = f" OR src = {SRC_CONSUMER} AND text IS NOT NULL" if with_run else ""
    return f"""checked AS (
    SELECT topic, src, producer, text, COUNT(1) AS n, MIN(partition) AS low, MAX(partition) AS high
    FROM (SELECT topic, src, partition, text, CASE WHEN src = {SRC_CONSUMER} THEN {PRODUCER_OF_KEY} END AS producer
          FROM shuffled WHERE {_reusing_shuffle(f"src = {SRC_PRODUCER} AND text IS NOT NULL{consumers}")})
    GROUP BY topic, src, producer, text)"""


_RUN_IDS = "startswith(key, :run_prefix) AND key RLIKE :pattern"  # the rows of a message id of the run
_OF_RUN = "pos IS NOT NULL"  # a consumer row's _RUN_IDS, matched before the shuffle (see _PROCESSED)


def _reordered_facts() -> Facts:
    """Backward steps of each producer's seq, in offset order, over the observed (position, id) pairs.

    A pair seen twice sorts next to itself and makes no backward step, so no distinct.
    """
    return Facts(f"""
    SELECT topic, partition, key AS sample_key, 1L AS reordered, offset AS o_reordered
    FROM (SELECT *, lag(seq) OVER (PARTITION BY topic, partition, producer ORDER BY offset, seq) AS prev_seq
          FROM (SELECT key, topic, partition, offset, {PRODUCER_OF_KEY} AS producer,
                       TRY_CAST({SEQ_OF_KEY} AS BIGINT) AS seq
                FROM shuffled
                WHERE {_reusing_shuffle(f"src = {SRC_CONSUMER} AND {_OF_RUN} OR src = {SRC_AUDIT} AND {_RUN_IDS}")})
          WHERE seq IS NOT NULL)
    WHERE seq < prev_seq""", ("reordered",), ("o_reordered",))


def _key_reordered_facts() -> Facts:
    """The records each consumer file shows processed after a record of the same key with a higher seq (see
    the module's docstring), one fact row each, and one per (topic, key) of them with no partition (its
    ``key_reordered_keys`` counts the keys once each).

    Only a key processed on two or more partitions is judged, and those are few (usually none: a key stays on its
    partition until partitions are added): a hash aggregation by key (:func:`_checked`), over the shuffle by
    message key, finds them and is broadcast. Its semi join keeps their consumer rows on that partitioning, so a
    record's first row in a file is its MIN(pos) there without a further shuffle; then one shuffle by (group, file,
    key), of those rows only, and one sort for the window: a record whose seq is below the highest seq of the
    records first processed before it. Its detail is the record's key and that newer record (seq, partition, offset).
    """
    per_key = "topic, producer, rkey"
    newer = (f"max(struct(seq, partition, offset)) OVER (PARTITION BY grp, fid, {per_key} ORDER BY pos "
             "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
    detail = ("named_struct('key', rkey, 'after', concat(:run_prefix, producer, ':', CAST(newer.seq AS STRING)), "
              "'partition', newer.partition, 'offset', newer.offset)")
    record = "key, grp, fid, topic, partition, offset, rkey, producer"
    keyed = (f"SELECT *, text AS rkey, {PRODUCER_OF_KEY} AS producer FROM shuffled "
             f"WHERE {_reusing_shuffle(f'src = {SRC_CONSUMER} AND text IS NOT NULL')}")
    spread = f"SELECT topic, producer, text AS rkey FROM checked WHERE src = {SRC_CONSUMER} AND low < high"
    # stack: the record's row, then its key's (no partition: a key's records are on several). Counted once per
    # record, or key, however many consumer files found it out of order: summed here, apart from the messages'
    # facts, the detail's struct (which no hash aggregation holds) makes a sort of these rows only.
    return Facts(f"""
    SELECT topic, partition, sample_key, MAX(key_reordered) AS key_reordered,
           MIN(o_key_reordered) AS o_key_reordered, MIN(d_key_reordered) AS d_key_reordered,
           MAX(key_reordered_keys) AS key_reordered_keys
    FROM (SELECT topic, stack(2, partition, key, 1L, offset, {detail}, CAST(NULL AS BIGINT),
                                 CAST(NULL AS INT), concat(:record_key_prefix, rkey), NULL, NULL, NULL, 1L)
                     AS (partition, sample_key, key_reordered, o_key_reordered, d_key_reordered, key_reordered_keys)
    FROM (SELECT *, {newer} AS newer
          FROM (SELECT /*+ BROADCAST(spread) */ {record}, TRY_CAST({SEQ_OF_KEY} AS BIGINT) AS seq, MIN(pos) AS pos
                FROM ({keyed}) keyed
                LEFT SEMI JOIN ({spread}) spread
                    ON keyed.topic = spread.topic AND keyed.producer = spread.producer AND keyed.rkey = spread.rkey
                GROUP BY {record})
          WHERE seq IS NOT NULL)
    WHERE newer.seq > seq)
    GROUP BY topic, partition, sample_key""", ("key_reordered", "key_reordered_keys"), ("o_key_reordered",),
                 ("key_reordered",), collapsed=True)


def _reason_facts() -> Facts:
    """The failed sends per (topic, producer error), a row each (no partition: a total of the run's), from
    :func:`_checked`. Apart from the messages' folds, whose aggregations a string would turn from hash into sort
    aggregations over every row."""
    return Facts(f"""
    SELECT topic, CAST(NULL AS INT) AS partition, CAST(NULL AS STRING) AS sample_key, text AS reason, n AS by_reason
    FROM checked WHERE src = {SRC_PRODUCER}""", ("by_reason",), (),
                 keys=("topic", "partition", "sample_key", "reason"), collapsed=True)


def union_facts(branches: Sequence[Facts]) -> tuple[str, Facts]:
    """The branches' UNION ALL, each projected onto every branch's columns by name, NULL where it has none (a
    union matches columns by position); and the columns of the whole."""
    keys = list(dict.fromkeys(k for b in branches for k in b.keys))
    sums = tuple(c for b in branches for c in b.sums)
    offsets = tuple(o for b in branches for o in b.offsets)
    details = tuple(d for b in branches for d in b.details)
    columns = [*keys, *sums, *offsets, *(f"d_{d}" for d in details)]
    selects = []
    for b in branches:
        given = {*b.keys, *b.sums, *b.offsets, *(f"d_{d}" for d in b.details)}
        selects.append(f"SELECT {', '.join(c if c in given else f'NULL AS {c}' for c in columns)} FROM ({b.sql})")
    return " UNION ALL ".join(selects), Facts("", sums, offsets, details, tuple(keys))


def per_message(sums: Sequence[str], offsets: Sequence[str]) -> Facts:
    """The facts summed per (partition, anomalous message): a normal message's rows fold into its partition's
    one row. Numbers only, so a hash aggregation does it (a string or struct would make it sort every row)."""
    columns = ", ".join([*[f"SUM({c}) AS {c}" for c in sums], *[f"MIN({o}) AS {o}" for o in offsets]])
    return Facts(f"SELECT topic, partition, sample_key, {columns} FROM facts GROUP BY topic, partition, sample_key",
                 tuple(sums), tuple(offsets), collapsed=True)


def per_partition(columns: Facts, rows: str) -> str:
    """The ``rows`` (one per partition and anomalous message) per partition: the sums, up to 10 samples per class,
    with a ``d_`` detail for the classes of ``columns.details``; and where the rows have a ``reason`` column (the
    failed sends' error), their ``failed_reasons`` (reason, by_reason) pairs."""
    # ties broken by the sample's key, so the samples are the same each time (a course log's records have no offset)
    samples = ", ".join(
        f"min_by(struct(sample_key, {o}{f', d_{o[2:]}' if o[2:] in columns.details else ''}), "
        f"CASE WHEN {o} IS NOT NULL THEN struct({o}, sample_key) END, {SAMPLES_PER_CLASS}) AS s_{o[2:]}"
        for o in columns.offsets)
    reasons = (", collect_list(CASE WHEN reason IS NOT NULL THEN struct(reason, by_reason) END) AS failed_reasons"
               if "reason" in columns.keys else "")
    return f"""
    SELECT topic, partition, {", ".join(f"SUM({c}) AS {c}" for c in columns.sums)}, {samples}{reasons}
    FROM {rows}
    GROUP BY topic, partition"""


def collapse(sums: Sequence[str], offsets: Sequence[str]) -> str:
    """The facts summed per (partition, anomalous message), then per partition with up to 10 samples per class."""
    return per_partition(Facts("", tuple(sums), tuple(offsets)), f"({per_message(sums, offsets).sql})")


ANALYSIS_JOB_GROUP = "kafkalab-analysis"


def cancel_analysis(session: SparkSession) -> None:
    """End every running analysis job of ``session`` now (its collect raises): a run stopped mid-analysis."""
    session.sparkContext.cancelJobGroup(ANALYSIS_JOB_GROUP)


SMALL_INPUT_BYTES = 32 * 1024 * 1024
"""Logs up to this size (a lab's run: 15,000 records are about 4 MB) are shuffled into one partition with
adaptive execution off: per-stage scheduling and re-planning, not the rows, are then the job's cost (a warm
2,000-record job: 0.98 s with 4 partitions and AQE, 0.54 s without, on 2 cores)."""


def shuffle_partitions(session: SparkSession, input_bytes: int) -> int:
    """One for small logs; else two tasks per core (the executors' cores on a cluster), more when the logs
    are big, so no task's hash maps outgrow its memory."""
    if input_bytes <= SMALL_INPUT_BYTES:
        return 1
    return max(2 * session.sparkContext.defaultParallelism, input_bytes // (96 * 1024 * 1024) + 1)


def classify(session: SparkSession, producer_logs: Sequence[Path | str], consumer_logs: Sequence[Path | str],
             audit_logs: Sequence[Path | str], run: str | None, input_bytes: int) -> JobResult:
    """Run the job over validated inputs (headers checked, one run; ``input_bytes`` their total size)
    and collect per-partition counts."""
    with_audit, with_run = bool(audit_logs), run is not None
    views = {"producer": read_log(session, producer_logs, PRODUCER_COLUMNS)}
    if consumer_logs:
        views["consumer"] = read_log(session, consumer_logs, CONSUMER_COLUMNS)
    if with_audit:
        views["audit"] = read_log(session, audit_logs, CONSUMER_COLUMNS)
    names = view_names(views)
    rows = [_producer_rows(names["producer"], with_run)]
    rows += [_reader_rows(names[kind], src, with_run)
             for kind, src in (("consumer", SRC_CONSUMER), ("audit", SRC_AUDIT)) if kind in names]
    partitions = shuffle_partitions(session, input_bytes)
    branches = [_message_facts(with_audit), _reason_facts()]
    if with_run:  # sequences are judged for the run's message ids only
        branches += [_reordered_facts(), _key_reordered_facts()]
    facts, columns = union_facts([b for b in branches if not b.collapsed])
    collapsed, whole = union_facts([per_message(columns.sums, columns.offsets), *(b for b in branches if b.collapsed)])
    query = f"""
    WITH shuffled AS (SELECT /*+ REPARTITION({partitions}, key) */ * FROM ({" UNION ALL ".join(rows)})),
    {FOLDS},
    {_checked(with_run)},
    facts AS ({facts}),
    collapsed AS ({collapsed})
    {per_partition(whole, "collapsed")}"""
    params = {"bad_key": BAD_KEY, "foreign_key": FOREIGN_KEY, "position_prefix": POSITION_KEY_PREFIX,
              "typed_id": TYPED_MSG_ID, "typed_prefix": TYPED_KEY_PREFIX, "record_key_prefix": RECORD_KEY_PREFIX,
              "aborted": ABORTED, "pattern": MSG_ID_PATTERN, "run_prefix": f"{run}:"}
    return collect_job(run_query(session, views, names, query, params, input_bytes), with_audit)


def view_names(views: dict[str, DataFrame]) -> dict[str, str]:
    """A temporary view name per frame, unique so two analyses in one session never share one."""
    return {kind: f"kafkalab_{kind}_{uuid4().hex}" for kind in views}


def run_query(session: SparkSession, views: dict[str, DataFrame], names: dict[str, str], query: str,
              params: dict[str, Any], input_bytes: int) -> list[Any]:
    """Run an analysis query over ``views`` (registered as ``names`` for its duration) and collect it."""
    session.conf.set("spark.sql.csv.parser.columnPruning.enabled", "false")  # see spark_conf()
    session.conf.set("spark.sql.adaptive.enabled", str(input_bytes > SMALL_INPUT_BYTES).lower())
    for kind, df in views.items():
        df.createOrReplaceTempView(names[kind])
    # its jobs in one group, for cancel_analysis() to end at once on a stop (the job group is this thread's)
    session.sparkContext.setJobGroup(ANALYSIS_JOB_GROUP, "kafkalab analysis", interruptOnCancel=True)
    try:
        return session.sql(query, args=params).collect()
    finally:
        for name in names.values():
            session.catalog.dropTempView(name)


def collect_job(rows: list[Any], with_audit: bool) -> JobResult:
    """The collapsed rows (see :func:`collapse`) as per-partition counts, samples and the bad-row counts."""
    partitions: list[PartitionCounts] = []
    candidates: dict[str, list[Sample]] = {name: [] for name in CLASSES}
    malformed = {"producer": 0, "consumer": 0, "audit": 0}
    foreign_runs: list[str] = []
    repeats = keys = 0
    reasons: Counter[str] = Counter()
    for row in rows:
        data = row.asDict()
        for s, kind in enumerate(("producer", "consumer", "audit")):
            malformed[kind] += data.get(f"bad_{s}") or 0
        repeats += data.get("p_repeats") or 0
        keys += data.get("key_reordered_keys") or 0
        for reason, failed in data.get("failed_reasons") or ():
            reasons[reason or NO_REASON] += failed
        if data.get("foreign"):
            foreign_runs.append(data["topic"])
        if data["topic"] is None or data["partition"] is None:
            continue  # the rows of malformed lines, other runs and out-of-order keys carry no partition
        counts = {k: int(data.get(k) or 0) for k in (*TOTALS, *CLASSES)}
        partitions.append(PartitionCounts(data["topic"], data["partition"], counts))
        for name in CLASSES:
            for key, offset, *detail in data.get(f"s_{name}") or ():
                if key.startswith(CONTENT_KEY_PREFIX):
                    sample = Sample(None, data["topic"], data["partition"], offset, key[1:])
                elif detail:  # key_reordered's: the record's key and the newer record processed before it
                    d = detail[0]
                    sample = Sample(key, data["topic"], data["partition"], offset, key=d["key"],
                                    after_msg_id=d["after"], after_partition=d["partition"], after_offset=d["offset"])
                else:
                    msg_id = None if key.startswith(POSITION_KEY_PREFIX) else key
                    sample = Sample(msg_id, data["topic"], data["partition"], offset)
                candidates[name].append(sample)
    merged: dict[tuple[str, int], PartitionCounts] = {}
    for part in partitions:
        into = merged.setdefault((part.topic, part.partition), PartitionCounts(part.topic, part.partition,
                                                                               dict.fromkeys(part.counts, 0)))
        for k, v in part.counts.items():
            into.counts[k] += v
    samples = {name: _one_per_key_first(found)[:SAMPLES_PER_CLASS] for name, found in candidates.items()
               if found and (with_audit or name not in AUDIT_CLASSES)}
    return JobResult(sorted(merged.values(), key=lambda p: (p.topic, p.partition)), samples, malformed,
                     sorted(set(foreign_runs)), repeats, dict(sorted(reasons.items())), keys)


def _one_per_key_first(found: list[Sample]) -> list[Sample]:
    """Samples by offset (then position and id, so the same each time); where they name record keys
    (key_reordered's), the first of each key before any key's second, so the few shown name several keys."""
    ordered = sorted(found, key=lambda s: (s.offset, s.topic, s.partition, s.msg_id or "", s.record or ""))
    seen: Counter[tuple[str, str | None]] = Counter()
    ranks = []
    for sample in ordered:
        ranks.append(seen[sample.topic, sample.key] if sample.key is not None else 0)
        seen[sample.topic, sample.key] += 1
    return [s for _, _, s in sorted(zip(ranks, range(len(ordered)), ordered, strict=True), key=lambda t: t[:2])]


__all__ = ["ANALYSIS_JOB_GROUP", "AUDIT_CLASSES", "CLASSES", "PRODUCER_STATUSES", "TOTALS", "Identity", "JobResult",
           "cancel_analysis", "classify", "collapse", "collect_job", "read_log", "run_query", "view_names"]
