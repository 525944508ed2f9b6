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
- reordered: among the distinct (position, message id) pairs observed whose id is of the run, taken per
  (topic, partition, producer) in (offset, seq) order, a pair whose seq is below the previous pair's.

Each message's counts go to its partition: the producer's, else (partition -1, or not sent) the lowest
partition it was observed in; a reordered pair goes to its own partition. A row without a message id
is its own message, keyed by its position.

The physical plan: the three logs are read once (CSV, explicit schema) and shuffled once, by message
key. Three hash aggregations on that partitioning (no further shuffle) fold rows into (group, position),
position and message levels. A second branch over the same shuffle output orders the observed pairs for
reordering. Normal messages then collapse to one row per partition; only anomalous messages survive
individually, so the sample ids cost a sort of the anomalies only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS, PRODUCER_STATUSES

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# anomaly classes in report order; the audit-only ones are None without an audit log
CLASSES = ("lost", "lost_by_brokers", "missed_by_consumers", "duplicated", "redelivered", "reordered",
           "recovered", "unexpected")
AUDIT_CLASSES = ("lost_by_brokers", "missed_by_consumers")
TOTALS = ("attempted", "acknowledged", "failed", "unknown", "consumed_rows", "distinct_consumed")
SAMPLES_PER_CLASS = 10

# source codes of a row in the shuffled union
SRC_PRODUCER, SRC_CONSUMER, SRC_AUDIT = 0, 1, 2
BAD_OFFSET = 3  # a malformed row of source s travels as s + BAD_OFFSET
SRC_FOREIGN = 6  # a producer row of another run
# keys of rows that are not messages; \x00 and \x01 cannot start a message id
BAD_KEY = "\x00bad"
FOREIGN_KEY = "\x00foreign"
POSITION_KEY_PREFIX = "\x01"

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


@dataclass
class JobResult:
    partitions: list[PartitionCounts]
    samples: dict[str, list[Sample]]
    malformed: dict[str, int]  # per source kind: producer / consumer / audit
    foreign_runs: list[str]
    producer_id_repeats: int


def read_log(session: SparkSession, paths: Sequence[Path], columns: Sequence[str]) -> DataFrame:
    """One CSV read of all files of a kind; RFC 4180 quoting; a bad line gets ``_corrupt`` set."""
    return session.read.csv(
        [str(p) for p in paths], schema=schema_ddl(columns), header=True, mode="PERMISSIVE",
        escape='"', columnNameOfCorruptRecord="_corrupt", enforceSchema=True,
    )


MSG_ID_PATTERN = "^[^:]+:[^:]+:[0-9]+$"  # run:producer:seq, exactly two colons


def _msg_id_parts(msg_id: Column) -> tuple[Column, Column]:
    """(producer, seq text) of a well-formed ``run:producer:seq``."""
    from pyspark.sql import functions as F

    return F.substring_index(F.substring_index(msg_id, ":", 2), ":", -1), F.substring_index(msg_id, ":", -1)


def _key_columns(df: DataFrame, src: int, good: Column, key: Column) -> DataFrame:
    """Project a log to the shuffled row shape; bad rows collapse onto one key per source."""
    from pyspark.sql import functions as F

    bad = ~good
    return df.select(
        F.when(bad, F.lit(BAD_KEY)).otherwise(key).alias("key"),
        F.when(bad, F.lit(src + BAD_OFFSET)).otherwise(F.lit(src)).cast("byte").alias("src"),
        F.when(bad, F.lit(None)).otherwise(
            F.col("group") if "group" in df.columns and src == SRC_CONSUMER else F.lit(None)
        ).cast("string").alias("grp"),
        F.when(bad, F.lit(None)).otherwise(F.col("topic")).alias("topic"),
        F.when(bad, F.lit(None)).otherwise(F.col("partition")).alias("partition"),
        F.when(bad, F.lit(None)).otherwise(F.coalesce(F.col("offset"), F.lit(-1))).alias("offset"),
        F.when(bad, F.lit(None)).otherwise(
            F.col("status_code") if src == SRC_PRODUCER else F.lit(None)).cast("byte").alias("status"),
    )


def _producer_rows(df: DataFrame, run: str | None) -> DataFrame:
    from pyspark.sql import functions as F

    well_formed = F.col("msg_id").rlike(MSG_ID_PATTERN)
    status_code = F.when(F.col("status") == "acked", 0).when(F.col("status") == "failed", 1).when(
        F.col("status") == "unknown", 2)
    df = df.withColumn("status_code", status_code)
    good = (
        F.col("_corrupt").isNull() & F.col("msg_id").isNotNull() & F.col("topic").isNotNull()
        & F.col("partition").isNotNull() & F.col("status_code").isNotNull() & well_formed
    )
    rows = _key_columns(df, SRC_PRODUCER, good, F.col("msg_id"))
    foreign = ~F.col("key").startswith(f"{run}:") if run is not None else F.lit(False)
    rows = rows.withColumn("foreign", (F.col("src") == SRC_PRODUCER) & foreign)
    # a producer row of another run travels with its run in the topic column, so the error can name it
    is_foreign = F.col("foreign")
    return rows.select(
        F.when(is_foreign, F.lit(FOREIGN_KEY)).otherwise(F.col("key")).alias("key"),
        F.when(is_foreign, F.lit(SRC_FOREIGN).cast("byte")).otherwise(F.col("src")).alias("src"),
        "grp",
        F.when(is_foreign, F.substring_index(F.col("key"), ":", 1)).otherwise(F.col("topic")).alias("topic"),
        *[F.when(is_foreign, F.lit(None)).otherwise(F.col(c)).alias(c) for c in ("partition", "offset")],
        "status",
    )


def _reader_rows(df: DataFrame, src: int) -> DataFrame:
    from pyspark.sql import functions as F

    good = (F.col("_corrupt").isNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
            & F.col("offset").isNotNull())
    position_key = F.concat_ws(":", F.lit(POSITION_KEY_PREFIX), F.col("topic"), F.col("partition"),
                               F.col("offset"))
    key = F.when(F.col("msg_id").isNull() | (F.col("msg_id") == ""), position_key).otherwise(F.col("msg_id"))
    return _key_columns(df, src, good, key)


def _shuffle_partitions(session: SparkSession, paths: Sequence[Path]) -> int:
    """Two tasks per core, more when the logs are big, so no task's hash maps outgrow its memory."""
    size = sum(p.stat().st_size for p in paths)
    return max(2 * session.sparkContext.defaultParallelism, size // (96 * 1024 * 1024) + 1)


def _sum_if(cond: Column, value: Column | int = 1) -> Column:
    from pyspark.sql import functions as F

    return F.sum(F.when(cond, value).otherwise(0))


def classify(session: SparkSession, producer_logs: Sequence[Path], consumer_logs: Sequence[Path],
             audit_logs: Sequence[Path], run: str | None) -> JobResult:
    """Run the job over validated inputs (headers checked, one run) and collect per-partition counts."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    with_audit = bool(audit_logs)
    session.conf.set("spark.sql.csv.parser.columnPruning.enabled", "false")  # see spark_conf()
    raw = _producer_rows(read_log(session, producer_logs, PRODUCER_COLUMNS), run)
    if consumer_logs:
        raw = raw.unionByName(_reader_rows(read_log(session, consumer_logs, CONSUMER_COLUMNS), SRC_CONSUMER))
    if with_audit:
        raw = raw.unionByName(_reader_rows(read_log(session, audit_logs, CONSUMER_COLUMNS), SRC_AUDIT))
    shuffled = raw.repartition(_shuffle_partitions(session, [*producer_logs, *consumer_logs, *audit_logs]), "key")
    src = F.col("src")

    # (key, source, group, position): how often each group processed each position
    deliveries = shuffled.groupBy("key", "src", "grp", "topic", "partition", "offset").agg(
        F.count(F.lit(1)).alias("n"), F.max("status").alias("status"))
    n = F.col("n")
    positions = deliveries.groupBy("key", "topic", "partition", "offset").agg(
        _sum_if(src == SRC_PRODUCER, n).alias("p_rows"),
        F.max(F.when(src == SRC_PRODUCER, F.col("status"))).alias("p_status"),
        _sum_if(src == SRC_CONSUMER, n).alias("c_rows"),
        _sum_if((src == SRC_CONSUMER) & (n >= 2)).alias("redelivered"),
        _sum_if(src == SRC_AUDIT, n).alias("a_rows"),
        *[_sum_if(src == s + BAD_OFFSET, n).alias(f"bad_{s}") for s in (0, 1, 2)],
        _sum_if(src == SRC_FOREIGN, n).alias("foreign"),
    )
    observed = (F.col("c_rows") > 0) | (F.col("a_rows") > 0)
    messages = positions.groupBy("key", "topic").agg(
        F.sum("p_rows").alias("p_rows"),
        F.max("p_status").alias("p_status"),
        F.max(F.when(F.col("p_rows") > 0, F.col("partition"))).alias("p_partition"),
        F.max(F.when(F.col("p_rows") > 0, F.col("offset"))).alias("p_offset"),
        F.sum("c_rows").alias("c_rows"),
        F.sum("a_rows").alias("a_rows"),
        _sum_if(observed).alias("observed"),
        _sum_if(F.col("c_rows") > 0).alias("processed_positions"),
        F.sum("redelivered").alias("redelivered"),
        F.min(F.when(observed, F.col("partition"))).alias("obs_partition"),
        F.min(F.when(observed, F.col("offset"))).alias("obs_offset"),
        F.min(F.when(F.col("redelivered") > 0, F.col("offset"))).alias("redelivered_offset"),
        F.min(F.when(F.col("c_rows") > 0, F.col("offset"))).alias("processed_offset"),
        *[F.sum(f"bad_{s}").alias(f"bad_{s}") for s in (0, 1, 2)],
        F.sum("foreign").alias("foreign"),
    )
    facts = _message_facts(messages, with_audit)
    if run is not None:
        facts = facts.unionByName(_reordered_facts(shuffled, run, Window), allowMissingColumns=True)
    rows = _collapse(facts)
    return _collect(rows, with_audit)


def _message_facts(messages: DataFrame, with_audit: bool) -> DataFrame:
    """One row per message: its partition, totals, class counts and the offset each sample shows."""
    from pyspark.sql import functions as F

    c = F.col
    sent = c("p_rows") > 0
    acked = sent & (c("p_status") == 0)
    lost = acked & (c("c_rows") == 0)
    partition = F.when(sent & (c("p_partition") >= 0), c("p_partition")).otherwise(
        F.coalesce(c("obs_partition"), c("p_partition")))
    flag = {
        "lost": lost,
        "duplicated": sent & (c("observed") >= 2),
        "recovered": sent & (c("p_status") > 0) & (c("observed") >= 1),
        "unexpected": ~sent & (c("processed_positions") > 0),
        "redelivered": c("redelivered") > 0,
    }
    counts = {name: F.when(cond, 1).otherwise(0) for name, cond in flag.items()}
    counts["redelivered"] = c("redelivered")
    counts["unexpected"] = F.when(flag["unexpected"], c("processed_positions")).otherwise(0)
    sample_offset = {"lost": c("p_offset"), "duplicated": c("obs_offset"), "recovered": c("obs_offset"),
                     "unexpected": c("processed_offset"), "redelivered": c("redelivered_offset")}
    if with_audit:
        flag["lost_by_brokers"] = lost & (c("a_rows") == 0)
        flag["missed_by_consumers"] = lost & (c("a_rows") > 0)
        counts["lost_by_brokers"] = F.when(flag["lost_by_brokers"], 1).otherwise(0)
        counts["missed_by_consumers"] = F.when(flag["missed_by_consumers"], 1).otherwise(0)
        sample_offset["lost_by_brokers"] = c("p_offset")
        sample_offset["missed_by_consumers"] = c("obs_offset")
    totals = {
        "attempted": F.when(sent, c("p_rows")).otherwise(0),
        "acknowledged": F.when(acked, 1).otherwise(0),
        "failed": F.when(sent & (c("p_status") == 1), 1).otherwise(0),
        "unknown": F.when(sent & (c("p_status") == 2), 1).otherwise(0),
        "consumed_rows": c("c_rows"),
        "distinct_consumed": F.when(c("c_rows") > 0, 1).otherwise(0),
        "p_repeats": F.when(c("p_rows") > 1, 1).otherwise(0),
        **{f"bad_{s}": c(f"bad_{s}") for s in (0, 1, 2)},
        "foreign": c("foreign"),
    }
    anomalous = F.lit(False)
    for cond in flag.values():
        anomalous = anomalous | cond
    return messages.select(
        c("topic"), partition.alias("partition"),
        F.when(anomalous, c("key")).alias("sample_key"),
        *[v.cast("long").alias(k) for k, v in {**totals, **counts}.items()],
        *[F.when(flag[k], v).alias(f"o_{k}") for k, v in sample_offset.items()],
    )


def _reordered_facts(rows: DataFrame, run: str, window_cls: Any) -> DataFrame:
    """Backward steps of each producer's seq, in offset order, over the observed (position, id) pairs.

    Read from the rows as shuffled by message key, so Spark reuses that one shuffle (and the one read
    of the logs) for both branches. Reuse needs this branch to keep every column of the shuffle and no
    filter pushed beneath it: hence one non-deterministic predicate (never pushed down) that mentions
    every column. A pair seen twice sorts next to itself and makes no backward step, so no distinct.
    """
    from pyspark.sql import functions as F

    c = F.col
    producer, seq_text = _msg_id_parts(c("key"))
    observed = c("src").isin(SRC_CONSUMER, SRC_AUDIT) & c("key").startswith(f"{run}:") & c("key").rlike(MSG_ID_PATTERN)
    uses_every_column = F.coalesce(F.length(c("grp")), c("status").cast("int"), F.lit(0)) >= 0
    keep = F.when(F.spark_partition_id() >= 0, observed & uses_every_column)
    pairs = rows.where(keep).select("key", "topic", "partition", "offset", producer.alias("producer"),
                                    seq_text.cast("long").alias("seq"))
    order = window_cls.partitionBy("topic", "partition", "producer").orderBy("offset", "seq")
    steps = pairs.withColumn("prev_seq", F.lag("seq").over(order)).where(c("seq") < c("prev_seq"))
    return steps.select("topic", "partition", c("key").alias("sample_key"),
                        F.lit(1).cast("long").alias("reordered"), c("offset").alias("o_reordered"))


def _collapse(facts: DataFrame) -> DataFrame:
    """Sum per (partition, anomalous message), then per partition with up to 10 samples per class."""
    from pyspark.sql import functions as F

    sums = [c for c in facts.columns if c not in ("topic", "partition", "sample_key") and not c.startswith("o_")]
    offsets = [c for c in facts.columns if c.startswith("o_")]
    per_message = facts.groupBy("topic", "partition", "sample_key").agg(
        *[F.sum(c).alias(c) for c in sums], *[F.min(c).alias(c) for c in offsets])
    samples = [
        F.min_by(F.struct(F.col("sample_key"), F.col(o)), F.col(o), SAMPLES_PER_CLASS).alias(f"s_{o[2:]}")
        for o in offsets
    ]
    return per_message.groupBy("topic", "partition").agg(*[F.sum(c).alias(c) for c in sums], *samples)


def _collect(rows: DataFrame, with_audit: bool) -> JobResult:
    partitions: list[PartitionCounts] = []
    candidates: dict[str, list[Sample]] = {name: [] for name in CLASSES}
    malformed = {"producer": 0, "consumer": 0, "audit": 0}
    foreign_runs: list[str] = []
    repeats = 0
    for row in rows.collect():
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
                msg_id = None if key.startswith(POSITION_KEY_PREFIX) else key
                candidates[name].append(Sample(msg_id, data["topic"], data["partition"], offset))
    merged: dict[tuple[str, int], PartitionCounts] = {}
    for part in partitions:
        into = merged.setdefault((part.topic, part.partition), PartitionCounts(part.topic, part.partition,
                                                                               dict.fromkeys(part.counts, 0)))
        for k, v in part.counts.items():
            into.counts[k] += v
    samples = {
        name: sorted(found, key=lambda s: (s.offset, s.topic, s.partition, s.msg_id or ""))[:SAMPLES_PER_CLASS]
        for name, found in candidates.items()
        if found and (with_audit or name not in AUDIT_CLASSES)
    }
    return JobResult(sorted(merged.values(), key=lambda p: (p.topic, p.partition)), samples, malformed,
                     sorted(set(foreign_runs)), repeats)


__all__ = ["AUDIT_CLASSES", "CLASSES", "PRODUCER_STATUSES", "TOTALS", "JobResult", "classify"]
