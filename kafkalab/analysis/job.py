"""The Spark job that classifies every anomaly of a run, per partition, in one read of the logs.

Definitions (the tests hold a plain-Python reference of exactly these):

- A *message* is a message id within a topic. It is *sent* when a producer log has its row; its
  status is the producer's (acked / failed / unknown). A *position* is (topic, partition, offset).
- A message is *processed* when any consumer row has its id, and *observed* at every position where a
  consumer or audit row has it.
- lost: acked, not processed. With an audit log, lost splits into lost_by_brokers (not in the audit)
  and missed_by_consumers (in the audit).
- duplicated: sent and observed at two or more positions.
- recovered: sent, status failed or unknown, and observed.
- redelivered: a (consumer group, position) processed two or more times (any message id).
- unexpected: a position processed whose message id was not sent (another run, no id, unknown sender).
- typed (a total, not an anomaly): a position processed whose record was typed by hand (its id
  ``TYPED_MSG_ID``): received, but no producer log accounts for it.
- reordered: among the distinct (position, message id) pairs observed whose id is of the run, taken per
  (topic, partition, producer) in (offset, seq) order, a pair whose seq is below the previous pair's.

Each message's counts go to its partition: the producer's, else (partition -1, or not sent) the lowest
partition it was observed in; a reordered pair goes to its own partition. A row without a message id
is its own message, keyed by its position (a typed one by its position under its own prefix).

The job is one SQL query (building it costs a few calls to the JVM, not thousands). Its physical
plan: the three logs are read once (CSV, explicit schema) and shuffled once, by message key. Three
hash aggregations on that partitioning (no further shuffle) fold rows into (group, position), position
and message levels. A second branch over the same shuffle output orders the observed pairs for
reordering. Normal messages then collapse to one row per partition; only anomalous messages survive
individually, so the sample ids cost a sort of the anomalies only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from kafkalab.logformat import CONSUMER_COLUMNS, MSG_ID_PATTERN, PRODUCER_COLUMNS, PRODUCER_STATUSES, TYPED_MSG_ID

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# anomaly classes in report order; the audit-only ones are None without an audit log. consumed_twice is the
# content identity's (content_job.py): without an audit it cannot tell a redelivery from a duplicate write.
CLASSES = ("lost", "lost_by_brokers", "missed_by_consumers", "duplicated", "redelivered", "consumed_twice",
           "reordered", "recovered", "unexpected")
AUDIT_CLASSES = ("lost_by_brokers", "missed_by_consumers")


class Identity(StrEnum):
    """What makes two log rows the same record: kafkalab's message id, or (for logs without one, the course's)
    the record's topic, partition, key and value, counted as a multiset (content_job.py)."""

    MESSAGE_ID = "message id"
    CONTENT = "topic, partition, key, value"

    def classes(self) -> tuple[str, ...]:
        """The classes an analysis by this identity reports: reordering needs sequence numbers, consumed_twice
        is only for an identity that cannot tell a redelivery from a duplicate."""
        skip = "consumed_twice" if self is Identity.MESSAGE_ID else "reordered"
        return tuple(c for c in CLASSES if c != skip)


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

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "record" or v is not None}

    def describe(self) -> str:
        """``r1:p:3 @t-0:5``, a record without id by its content (``key 3: "value..." @t-0``)."""
        at = f"@{self.topic}-{self.partition}" + (f":{self.offset}" if self.offset >= 0 or not self.record else "")
        if self.record is not None:
            key, _, value = self.record.partition(",")
            shown = value if len(value) <= 40 else value[:39] + "…"
            return f"key {key or '(none)'}: {shown!r} {at}"
        return f"{self.msg_id or '(no id)'} {at}"


@dataclass
class JobResult:
    partitions: list[PartitionCounts]
    samples: dict[str, list[Sample]]
    malformed: dict[str, int]  # per source kind: producer / consumer / audit
    foreign_runs: list[str]
    producer_id_repeats: int


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
           CAST(CASE WHEN good THEN status_code END AS TINYINT) AS status
    FROM (SELECT *, {foreign} AS foreign FROM (
        SELECT *, _corrupt IS NULL AND msg_id IS NOT NULL AND topic IS NOT NULL AND partition IS NOT NULL
                  AND status_code IS NOT NULL AND msg_id RLIKE :pattern AS good
        FROM (SELECT *, CASE status WHEN 'acked' THEN 0 WHEN 'failed' THEN 1 WHEN 'unknown' THEN 2 END
                        AS status_code FROM {view})))"""


def _reader_rows(view: str, src: int) -> str:
    """Consumer or audit rows in the shuffled shape; a row without a message id is keyed by position."""
    grp = "`group`" if src == SRC_CONSUMER else "NULL"
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
           CAST(NULL AS TINYINT) AS status
    FROM (SELECT *, _corrupt IS NULL AND topic IS NOT NULL AND partition IS NOT NULL AND offset IS NOT NULL
                    AS good FROM {view})"""


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


def _message_facts(with_audit: bool) -> tuple[str, list[str], list[str]]:
    """One row per message: its partition, totals, class counts and the offset each sample shows.

    Returns the SELECT over ``messages`` and the names of its count and sample-offset columns.
    """
    sent = "p_rows > 0"
    typed = "startswith(key, :typed_prefix)"
    acked = f"{sent} AND p_status = 0"
    lost = f"{acked} AND c_rows = 0"
    flag = {
        "lost": lost,
        "duplicated": f"{sent} AND observed >= 2",
        "recovered": f"{sent} AND p_status > 0 AND observed >= 1",
        "unexpected": f"NOT ({sent}) AND NOT {typed} AND processed_positions > 0",
        "redelivered": "redelivered > 0",
    }
    sample_offset = {"lost": "p_offset", "duplicated": "obs_offset", "recovered": "obs_offset",
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
        "failed": f"CASE WHEN {sent} AND p_status = 1 THEN 1 ELSE 0 END",
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
    sums = [*totals, *counts, "reordered"]
    offsets = [f"o_{k}" for k in (*sample_offset, "reordered")]
    return f"SELECT {', '.join(columns)}, CAST(NULL AS BIGINT) AS reordered, " \
           f"CAST(NULL AS BIGINT) AS o_reordered FROM messages", sums, offsets


def _reordered_facts(fact_columns: list[str]) -> str:
    """Backward steps of each producer's seq, in offset order, over the observed (position, id) pairs.

    Read from the rows as shuffled by message key, so Spark reuses that one shuffle (and the one read
    of the logs) for both branches. Reuse needs this branch to keep every column of the shuffle and no
    filter pushed beneath it: hence one non-deterministic predicate (never pushed down) that mentions
    every column. A pair seen twice sorts next to itself and makes no backward step, so no distinct.
    """
    nulls = ", ".join(f"NULL AS {c}" for c in fact_columns if c not in ("reordered", "o_reordered"))
    return f"""
    SELECT topic, partition, key AS sample_key, {nulls}, 1L AS reordered, offset AS o_reordered
    FROM (SELECT *, lag(seq) OVER (PARTITION BY topic, partition, producer ORDER BY offset, seq) AS prev_seq
          FROM (SELECT key, topic, partition, offset, {PRODUCER_OF_KEY} AS producer,
                       TRY_CAST({SEQ_OF_KEY} AS BIGINT) AS seq
                FROM shuffled
                WHERE CASE WHEN spark_partition_id() >= 0 THEN
                    src IN ({SRC_CONSUMER}, {SRC_AUDIT}) AND startswith(key, :run_prefix)
                    AND key RLIKE :pattern AND coalesce(length(grp), CAST(status AS INT), 0) >= 0 END)
          WHERE seq IS NOT NULL)
    WHERE seq < prev_seq"""


def collapse(sums: list[str], offsets: list[str]) -> str:
    """Sum per (partition, anomalous message), then per partition with up to 10 samples per class."""
    per_message = ", ".join([*[f"SUM({c}) AS {c}" for c in sums], *[f"MIN({o}) AS {o}" for o in offsets]])
    # ties broken by the sample's key, so the samples are the same each time (a course log's records have no offset)
    samples = ", ".join(f"min_by(struct(sample_key, {o}), CASE WHEN {o} IS NOT NULL THEN struct({o}, sample_key) END, "
                        f"{SAMPLES_PER_CLASS}) AS s_{o[2:]}" for o in offsets)
    return f"""
    SELECT topic, partition, {", ".join(f"SUM({c}) AS {c}" for c in sums)}, {samples}
    FROM (SELECT topic, partition, sample_key, {per_message} FROM facts GROUP BY topic, partition, sample_key)
    GROUP BY topic, partition"""


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
    with_audit = bool(audit_logs)
    views = {"producer": read_log(session, producer_logs, PRODUCER_COLUMNS)}
    if consumer_logs:
        views["consumer"] = read_log(session, consumer_logs, CONSUMER_COLUMNS)
    if with_audit:
        views["audit"] = read_log(session, audit_logs, CONSUMER_COLUMNS)
    names = view_names(views)
    rows = [_producer_rows(names["producer"], run is not None)]
    rows += [_reader_rows(names[kind], src) for kind, src in (("consumer", SRC_CONSUMER), ("audit", SRC_AUDIT))
             if kind in names]
    partitions = shuffle_partitions(session, input_bytes)
    facts, sums, offsets = _message_facts(with_audit)
    if run is not None:
        facts += f" UNION ALL {_reordered_facts([*sums, *offsets])}"
    query = f"""
    WITH shuffled AS (SELECT /*+ REPARTITION({partitions}, key) */ * FROM ({" UNION ALL ".join(rows)})),
    {FOLDS},
    facts AS ({facts})
    {collapse(sums, offsets)}"""
    params = {"bad_key": BAD_KEY, "foreign_key": FOREIGN_KEY, "position_prefix": POSITION_KEY_PREFIX,
              "typed_id": TYPED_MSG_ID, "typed_prefix": TYPED_KEY_PREFIX,
              "pattern": MSG_ID_PATTERN, "run_prefix": f"{run}:"}
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
    repeats = 0
    for row in rows:
        data = row.asDict()
        for s, kind in enumerate(("producer", "consumer", "audit")):
            malformed[kind] += data.get(f"bad_{s}") or 0
        repeats += data.get("p_repeats") or 0
        if data.get("foreign"):
            foreign_runs.append(data["topic"])
        if data["topic"] is None or data["partition"] is None:
            continue  # the rows of malformed lines and other runs carry no partition
        counts = {k: int(data.get(k) or 0) for k in (*TOTALS, *CLASSES)}
        partitions.append(PartitionCounts(data["topic"], data["partition"], counts))
        for name in CLASSES:
            for key, offset in data.get(f"s_{name}") or ():
                if key.startswith(CONTENT_KEY_PREFIX):
                    sample = Sample(None, data["topic"], data["partition"], offset, key[1:])
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
    samples = {
        name: sorted(found, key=lambda s: (s.offset, s.topic, s.partition, s.msg_id or "",
                                           s.record or ""))[:SAMPLES_PER_CLASS]
        for name, found in candidates.items()
        if found and (with_audit or name not in AUDIT_CLASSES)
    }
    return JobResult(sorted(merged.values(), key=lambda p: (p.topic, p.partition)), samples, malformed,
                     sorted(set(foreign_runs)), repeats)


__all__ = ["ANALYSIS_JOB_GROUP", "AUDIT_CLASSES", "CLASSES", "PRODUCER_STATUSES", "TOTALS", "Identity", "JobResult",
           "cancel_analysis", "classify", "collapse", "collect_job", "read_log", "run_query", "view_names"]
