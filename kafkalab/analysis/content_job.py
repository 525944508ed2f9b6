"""The analysis of logs without message ids (the course's payload logs): records matched by their content.

A course log line is ``topic,partition,key,value``: nothing tells two sends of the same quote with the same
key apart. So this job matches records by their *identity* (topic, partition, key, value) and counts, per
identity, how many times each log holds it, as a multiset. Every producer and consumer log of the analysis
is read this way as soon as one of them is a course log (kafkalab's own CSV rows are projected onto the same
identity; the audit, kafkalab's read-back of the topic, always is kafkalab's CSV).

Per identity: ``p`` sends acknowledged (a course producer logs only those), ``f`` sends failed or unknown
(kafkalab producer logs only), ``a`` copies in the audit, and per consumer group ``g`` the copies it
processed, ``copies_g`` (its rows, less the repeats at one offset where its log has offsets: kafkalab's
consumer logs do, the course's do not; all course consumer logs are one group, their logs name none);
``sure`` is those repeats at one offset, summed over groups; ``c = max_g copies_g`` (the group that
processed most); ``o = a`` with an audit, else ``c``. Then :func:`rules` (the only place they are written):

- recovered = min(max(o - p, 0), f): failed or unknown sends found anyway; ``s = p + recovered`` are the
  sends that account for copies.
- lost = max(p - c, 0); with an audit, lost_by_brokers = min(lost, max(p - a, 0)) and missed_by_consumers
  = lost - lost_by_brokers, so the two always add up to lost.
- with an audit: duplicated = max(a - s, 0) extra copies in the topic; redelivered = sure + sum over groups
  of max(copies_g - max(a, s), 0): processed more times than the topic holds it and than it was sent.
- without an audit: consumed_twice = sum over groups of max(copies_g - s, 0): processed more times than
  sent, which a redelivery and a duplicate write both explain (the audit tells them apart); redelivered =
  sure alone, known only where a consumer log has offsets.
- unexpected = c for an identity nobody sent (p + f = 0) that no consumer logged as typed by hand.
- duplicated, lost_by_brokers, missed_by_consumers and consumed_twice count 0 for identities nobody sent.

Records whose value is a control word (:data:`CONTROL_VALUES`) are left out everywhere: the consumers obey
them instead of processing them. What the identity cannot do is in :func:`unknown_classes` and in
docs/clients.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkalab.analysis.inputs import InputFile
from kafkalab.analysis.job import (
    AUDIT_CLASSES,
    CONTENT_KEY_PREFIX,
    OUTCOME_CLASSES,
    SEQUENCE_CLASSES,
    SRC_AUDIT,
    SRC_CONSUMER,
    SRC_PRODUCER,
    TOTALS,
    Identity,
    JobResult,
    collapse,
    collect_job,
    read_log,
    run_query,
    shuffle_partitions,
    sum_if,
    view_names,
)
from kafkalab.logformat import (
    CONSUMER_COLUMNS,
    CONTROL_VALUES,
    COURSE_NULL_KEY,
    MSG_ID_PATTERN,
    PRODUCER_COLUMNS,
    TYPED_MSG_ID,
    LogFormat,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

IDENTITY = ("topic", "partition", "key", "value")
_SRC = {"producer": SRC_PRODUCER, "consumer": SRC_CONSUMER, "audit": SRC_AUDIT}
_SENT = "(p + failed + unknown > 0)"


def _over(bound: str) -> str:
    """Sum over the consumer groups of the copies each processed beyond ``bound``."""
    return f"aggregate(group_copies, 0L, (acc, x) -> acc + GREATEST(x - {bound}, 0L))"


def rules(with_audit: bool) -> dict[str, str]:
    """Each class's count for one identity, as SQL over its columns (see the module's docstring)."""
    lost = "GREATEST(p - c, 0L)"
    counts = {
        "lost": lost,
        "redelivered": "sure" + (f" + {_over('GREATEST(a, s)')}" if with_audit else ""),
        "recovered": "recovered",
        "unexpected": f"CASE WHEN NOT {_SENT} AND NOT typed THEN c ELSE 0L END",
    }
    if with_audit:
        by_brokers = f"LEAST({lost}, GREATEST(p - a, 0L))"
        counts |= {"lost_by_brokers": by_brokers, "missed_by_consumers": f"{lost} - {by_brokers}",
                   "duplicated": f"CASE WHEN {_SENT} THEN GREATEST(a - s, 0L) ELSE 0L END"}
    else:
        counts["consumed_twice"] = f"CASE WHEN {_SENT} THEN {_over('s')} ELSE 0L END"
    return counts


# typed: records typed by hand that no producer sent (a typed copy of a record a producer sent is that send's)
TOTAL_RULES = {
    "attempted": "p + failed + unknown", "acknowledged": "p", "failed": "failed", "unknown": "unknown",
    "consumed_rows": "c_rows", "distinct_consumed": "c", "typed": f"CASE WHEN typed AND NOT {_SENT} THEN c ELSE 0L END",
}


def unknown_classes(identity: Identity, audit: bool, files: Sequence[InputFile]) -> frozenset[str]:
    """The classes the logs cannot tell (None in the report, not 0)."""
    unknown = set() if audit else set(AUDIT_CLASSES)
    if identity is Identity.MESSAGE_ID:
        return frozenset(unknown | {"consumed_twice"})  # message ids tell redeliveries from duplicates
    unknown.update(SEQUENCE_CLASSES)  # they need each producer's sequence numbers
    unknown.update(OUTCOME_CLASSES)  # an aborted copy and a committed one of a record are one identity
    unknown.add("consumed_twice" if audit else "duplicated")
    if not any(f.kind == "producer" and f.format is LogFormat.KAFKALAB for f in files):
        unknown.add("recovered")  # a course producer logs acknowledged sends only
    if not audit and not any(f.kind == "consumer" and f.format is LogFormat.KAFKALAB for f in files):
        unknown.add("redelivered")  # no offsets, no audit: see consumed_twice
    return frozenset(unknown)


def identity_of(files: Sequence[InputFile]) -> Identity:
    """Message ids unless a producer or consumer log is a course log, whose records carry none."""
    return Identity.CONTENT if any(f.format is LogFormat.COURSE for f in files) else Identity.MESSAGE_ID


def _course_rows(view: str, src: int, tails: list[str]) -> str:
    """A course log's lines in the shared shape; each ``tails`` parameter (a half-written last line, hex) is
    taken back with weight -1, so it counts in no identity (its malformed line is counted by the caller)."""
    lines = " UNION ALL ".join([f"SELECT value AS line, 1 AS w FROM {view}",
                                *[f"SELECT CAST(unhex(:{t}) AS STRING) AS line, -1 AS w" for t in tails]])
    return f"""
    SELECT CAST({src} AS TINYINT) AS src, get(f, 0) AS topic, TRY_CAST(get(f, 1) AS INT) AS partition,
           CASE WHEN get(f, 2) = '{COURSE_NULL_KEY}' THEN '' ELSE get(f, 2) END AS key, get(f, 3) AS value,
           false AS typed, CASE WHEN {src} = {SRC_CONSUMER} THEN '' END AS grp, CAST(NULL AS BIGINT) AS offset,
           CAST(CASE WHEN {src} = {SRC_PRODUCER} THEN 0 END AS TINYINT) AS status, w,
           size(f) = 4 AND get(f, 0) <> '' AND get(f, 1) RLIKE '^[0-9]+$'
               AND TRY_CAST(get(f, 1) AS INT) IS NOT NULL AS good
    FROM (SELECT split(line, ',', 4) AS f, w FROM ({lines}) WHERE line <> '')"""


def _csv_rows(view: str, src: int) -> str:
    """A kafkalab log's rows in the shared shape (its message ids ignored, but for records typed by hand)."""
    if src == SRC_PRODUCER:
        status = "CASE status WHEN 'acked' THEN 0 WHEN 'failed' THEN 1 WHEN 'unknown' THEN 2 END"
        good = f"msg_id IS NOT NULL AND msg_id RLIKE :pattern AND {status} IS NOT NULL"
        grp, offset = "NULL", "NULL"  # a producer's offset is no position a consumer row can share
    else:
        status, good, offset = "NULL", "offset IS NOT NULL", "offset"
        grp = "coalesce(`group`, '')" if src == SRC_CONSUMER else "NULL"
    return f"""
    SELECT CAST({src} AS TINYINT) AS src, topic, partition, coalesce(key, '') AS key,
           coalesce(value, '') AS value, coalesce(msg_id = :typed_id, false) AS typed, CAST({grp} AS STRING) AS grp,
           CAST({offset} AS BIGINT) AS offset, CAST({status} AS TINYINT) AS status, 1 AS w,
           _corrupt IS NULL AND topic IS NOT NULL AND partition IS NOT NULL AND {good} AS good
    FROM {view}"""


# typed (a consumer logged the record as typed by hand) is a fact of the identity, not part of it: the same
# record sent by a course producer and logged as typed by a kafkalab consumer is one identity
_IDENTITY_COLS = ", ".join(IDENTITY)
_BAD = [f"bad_{s}" for s in (SRC_PRODUCER, SRC_CONSUMER, SRC_AUDIT)]


def _folds(with_audit: bool) -> str:
    """Rows -> (identity, source, group, offset) -> (identity, source, group) -> identity, on the
    partitioning by identity (no further shuffle). A malformed row keeps only its source and weight."""
    observed = "a" if with_audit else "c"
    return f"""
per_offset AS (
    SELECT {_IDENTITY_COLS}, bool_or(typed) AS typed, src, grp, offset, status, good, SUM(w) AS n
    FROM shuffled GROUP BY {_IDENTITY_COLS}, src, grp, offset, status, good),
per_group AS (
    SELECT {_IDENTITY_COLS}, bool_or(typed) AS typed, src, grp, {sum_if("good", "n")} AS rows,
           {sum_if("good", "CASE WHEN offset IS NULL THEN n ELSE LEAST(n, 1) END")} AS copies,
           {sum_if("good AND offset IS NOT NULL", "n - 1")} AS repeats,
           {", ".join(f"{sum_if(f'good AND status = {code}', 'n')} AS {name}"
                      for code, name in enumerate(("acked", "failed", "unknown")))},
           MIN(offset) AS first_offset,
           {", ".join(f"{sum_if(f'NOT good AND src = {s}', 'n')} AS bad_{s}" for s in _SRC.values())}
    FROM per_offset GROUP BY {_IDENTITY_COLS}, src, grp),
identities AS (
    SELECT {_IDENTITY_COLS}, coalesce(bool_or(typed), false) AS typed,
           {sum_if(f"src = {SRC_PRODUCER}", "acked")} AS p,
           {sum_if(f"src = {SRC_PRODUCER}", "failed")} AS failed,
           {sum_if(f"src = {SRC_PRODUCER}", "unknown")} AS unknown,
           {sum_if(f"src = {SRC_AUDIT}", "copies")} AS a,
           coalesce(MAX(CASE WHEN src = {SRC_CONSUMER} THEN copies END), 0L) AS c,
           {sum_if(f"src = {SRC_CONSUMER}", "rows")} AS c_rows,
           {sum_if(f"src = {SRC_CONSUMER}", "repeats")} AS sure,
           collect_list(CASE WHEN src = {SRC_CONSUMER} THEN copies END) AS group_copies,
           MIN(CASE WHEN src <> {SRC_PRODUCER} THEN first_offset END) AS first_offset,
           {", ".join(f"SUM(bad_{s}) AS bad_{s}" for s in _SRC.values())}
    FROM per_group GROUP BY {_IDENTITY_COLS}),
recovering AS (
    SELECT *, LEAST(GREATEST({observed} - p, 0L), failed + unknown) AS recovered FROM identities),
accounted AS (SELECT *, p + recovered AS s FROM recovering)"""


def _facts(with_audit: bool) -> tuple[str, list[str], list[str]]:
    """One row per identity: its partition, totals, class counts and sample offsets; and the names of the
    count and sample-offset columns."""
    counts = rules(with_audit)
    anomalous = " OR ".join(f"({v}) > 0" for v in counts.values())
    columns = [
        *IDENTITY[:2],
        f"CASE WHEN {anomalous} THEN concat(:content_prefix, key, ',', value) END AS sample_key",
        *[f"CAST({v} AS BIGINT) AS {k}" for k, v in {**TOTAL_RULES, **counts}.items()],
        *_BAD,
        *[f"CASE WHEN ({v}) > 0 THEN coalesce(first_offset, -1L) END AS o_{k}" for k, v in counts.items()],
    ]
    return f"SELECT {', '.join(columns)} FROM accounted", [*TOTALS, *counts, *_BAD], [f"o_{k}" for k in counts]


def classify_content(session: SparkSession, files: Sequence[InputFile], input_bytes: int) -> JobResult:
    """Run the content-identity job over checked inputs (producer, consumer and audit files) and collect
    per-partition counts, as :func:`kafkalab.analysis.job.classify` does for message ids."""
    parts = {(kind, fmt): [f for f in files if f.kind == kind and f.format is fmt]
             for kind in _SRC for fmt in LogFormat}
    views: dict[str, DataFrame] = {}
    for (kind, fmt), chosen in parts.items():
        paths = [str(f.path) for f in chosen]
        if paths:
            views[f"{kind}_{fmt}"] = session.read.text(paths) if fmt is LogFormat.COURSE else \
                read_log(session, paths, PRODUCER_COLUMNS if kind == "producer" else CONSUMER_COLUMNS)
    names = view_names(views)
    tails: dict[str, str] = {}  # parameter -> a half-written last line's bytes, hex
    shapes: list[str] = []
    for (kind, fmt), chosen in parts.items():
        if not chosen:
            continue
        src, view = _SRC[kind], names[f"{kind}_{fmt}"]
        if fmt is LogFormat.COURSE:
            cut = {f"tail_{src}_{i}": f.tail.hex() for i, f in enumerate(chosen) if f.tail is not None}
            tails |= cut
            shapes.append(_course_rows(view, src, list(cut)))
        else:
            shapes.append(_csv_rows(view, src))
    rows = " UNION ALL ".join(shapes)
    with_audit = bool(parts["audit", LogFormat.KAFKALAB])
    facts, sums, offsets = _facts(with_audit)
    control = ", ".join(f"'{word}'" for word in CONTROL_VALUES)
    nulled = ", ".join(f"CASE WHEN good THEN {c} END AS {c}" for c in (*IDENTITY, "typed", "grp", "offset", "status"))
    query = f"""
    WITH shuffled AS (SELECT /*+ REPARTITION({shuffle_partitions(session, input_bytes)}, {", ".join(IDENTITY)}) */
                             src, {nulled}, w, good
                      FROM ({rows}) WHERE NOT (good AND value IN ({control}))),
    {_folds(with_audit)},
    facts AS ({facts})
    {collapse(sums, offsets)}"""
    params = {"typed_id": TYPED_MSG_ID, "pattern": MSG_ID_PATTERN, "content_prefix": CONTENT_KEY_PREFIX, **tails}
    result = collect_job(run_query(session, views, names, query, params, input_bytes), with_audit)
    for f in files:  # each half-written last line: malformed, though the job took it back from its identity
        if f.tail is not None:
            result.malformed[f.kind] += 1
    return result
