"""A plain-Python reference of the analysis, written for obviousness, not speed.

It follows the definitions in kafkalab/analysis/job.py one by one, over the rows of the CSV files, and
returns counts per (topic, partition). The Spark job must agree with it exactly.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections import Counter, defaultdict
from pathlib import Path

from kafkalab.analysis.report import Report
from kafkalab.logformat import ABORTED, CONSUMER_COLUMNS, PRODUCER_COLUMNS, TYPED_MSG_ID

INT_COLUMNS = ("seq", "partition", "offset", "ts_ms", "leader_epoch")


def read_rows(path: Path, columns: tuple[str, ...]) -> tuple[list[dict], int]:
    """Good rows of a log as dicts with ints where ints belong, and how many lines were bad."""
    rows, bad = [], 0
    with path.open(newline="") as fh:
        lines = fh.read().split("\n")
    for line in lines[1:]:
        if not line:
            continue
        fields = next(csv.reader([line]))
        if len(fields) != len(columns):
            bad += 1
            continue
        row = dict(zip(columns, fields, strict=True))
        try:
            for name in INT_COLUMNS:
                if name in row:
                    row[name] = int(row[name]) if row[name] != "" else None
        except ValueError:
            bad += 1
            continue
        if not row["topic"] or row["partition"] is None:
            bad += 1
            continue
        if columns == PRODUCER_COLUMNS:
            if row["status"] not in ("acked", "failed", "unknown") or not re.fullmatch(
                    r"[^:]+:[^:]+:[0-9]+", row["msg_id"]):
                bad += 1
                continue
            if row["offset"] is None:
                row["offset"] = -1
        elif row["offset"] is None:
            bad += 1
            continue
        rows.append(row)
    return rows, bad


def reference(producer_logs: list[Path], consumer_logs: list[Path], audit_logs: list[Path],
              run: str) -> tuple[dict[tuple[str, int], Counter], dict[str, int]]:
    producers = [r for p in producer_logs for r in read_rows(p, PRODUCER_COLUMNS)[0]]
    consumers = [r for p in consumer_logs for r in read_rows(p, CONSUMER_COLUMNS)[0]]
    audits = [r for p in audit_logs for r in read_rows(p, CONSUMER_COLUMNS)[0]]
    bad = {
        "producer": sum(read_rows(p, PRODUCER_COLUMNS)[1] for p in producer_logs),
        "consumer": sum(read_rows(p, CONSUMER_COLUMNS)[1] for p in consumer_logs),
        "audit": sum(read_rows(p, CONSUMER_COLUMNS)[1] for p in audit_logs),
    }

    def key(row: dict) -> str:
        position = f"{row['topic']}:{row['partition']}:{row['offset']}"
        if row["msg_id"] == TYPED_MSG_ID:
            return f"typed:{position}"
        return row["msg_id"] or f"\x01:{position}"

    sent = {(r["msg_id"], r["topic"]): r for r in producers}
    processed_rows: Counter = Counter()
    positions: dict[tuple, set] = defaultdict(set)  # message -> observed (partition, offset)
    processed_positions: dict[tuple, set] = defaultdict(set)
    audited: set = set()
    deliveries: Counter = Counter()
    for r in consumers:
        msg = (key(r), r["topic"])
        processed_rows[msg] += 1
        positions[msg].add((r["partition"], r["offset"]))
        processed_positions[msg].add((r["partition"], r["offset"]))
        deliveries[(msg, r["group"], r["partition"], r["offset"])] += 1
    for r in audits:
        msg = (key(r), r["topic"])
        positions[msg].add((r["partition"], r["offset"]))
        audited.add(msg)

    counts: dict[tuple[str, int], Counter] = defaultdict(Counter)

    def partition_of(msg: tuple) -> tuple[str, int]:
        p = sent.get(msg)
        if p is not None and p["partition"] >= 0:
            return (msg[1], p["partition"])
        if positions.get(msg):
            return (msg[1], min(part for part, _ in positions[msg]))
        return (msg[1], p["partition"])

    for msg, p in sent.items():
        c = counts[partition_of(msg)]
        c["attempted"] += 1
        c[{"acked": "acknowledged", "failed": "failed", "unknown": "unknown"}[p["status"]]] += 1
        if p["status"] == "acked" and processed_rows[msg] == 0:
            c["lost"] += 1
            if audit_logs:
                c["missed_by_consumers" if msg in audited else "lost_by_brokers"] += 1
        if len(positions[msg]) >= 2:
            c["duplicated"] += 1
        aborted = p["status"] == "failed" and p["error"] == ABORTED  # never committed: not recovered
        if p["status"] != "acked" and positions[msg] and not aborted:
            c["recovered"] += 1
        if aborted and processed_rows[msg]:
            c["aborted_read"] += 1
    for msg, n in processed_rows.items():
        c = counts[partition_of(msg)]
        c["consumed_rows"] += n
        c["distinct_consumed"] += 1
        if msg[0].startswith("typed:"):
            c["typed"] += len(processed_positions[msg])
        elif msg not in sent:
            c["unexpected"] += len(processed_positions[msg])
    for (msg, _group, _partition, _offset), n in deliveries.items():
        if n >= 2:
            counts[partition_of(msg)]["redelivered"] += 1

    pairs = {(r["topic"], r["partition"], r["offset"], r["msg_id"]) for r in consumers + audits}
    by_producer: dict[tuple, list] = defaultdict(list)
    for topic, partition, offset, msg_id in pairs:
        m = re.fullmatch(r"([^:]+):([^:]+):([0-9]+)", msg_id or "")
        if m and m.group(1) == run:
            by_producer[(topic, partition, m.group(2))].append((offset, int(m.group(3))))
    for (topic, partition, _producer), seqs in by_producer.items():
        seqs.sort()
        for (_, before), (_, after) in itertools.pairwise(seqs):
            if after < before:
                counts[(topic, partition)]["reordered"] += 1
    out_of_order, _keys = key_order_reference(consumer_logs, run)
    for topic, partition, _msg_id in out_of_order:
        counts[(topic, partition)]["key_reordered"] += 1
    return dict(counts), bad


def key_order_reference(consumer_logs: list[Path], run: str) -> tuple[set[tuple[str, int, str]], set[tuple[str, str]]]:
    """key_reordered: the (topic, partition, message id)s of the records (message id at a position) some consumer
    file shows first processed after the first processing there of a record of the same (topic, record key,
    producer) with a higher seq; and their (topic, key)s. A file's rows are its consumer's processing order;
    keyless records have no key order; a key processed on one partition only is not judged (its order is the
    partition's)."""
    flagged: set[tuple[str, int, str]] = set()
    keys: set[tuple[str, str]] = set()
    on: dict[tuple, set[int]] = defaultdict(set)  # (topic, producer, key) -> the partitions it was processed on
    for path in consumer_logs:
        for row in read_rows(path, CONSUMER_COLUMNS)[0]:
            m = re.fullmatch(r"([^:]+):([^:]+):([0-9]+)", row["msg_id"] or "")
            if m and m.group(1) == run and row["key"]:
                on[(row["topic"], m.group(2), row["key"])].add(row["partition"])
    for path in consumer_logs:
        seen: set[tuple] = set()
        newest: dict[tuple, int] = {}  # (group, topic, producer, key) -> the highest seq processed so far
        for row in read_rows(path, CONSUMER_COLUMNS)[0]:
            m = re.fullmatch(r"([^:]+):([^:]+):([0-9]+)", row["msg_id"] or "")
            if not m or m.group(1) != run or not row["key"] or len(on[(row["topic"], m.group(2), row["key"])]) < 2:
                continue
            order = (row["group"], row["topic"], m.group(2), row["key"])
            record = (*order, row["msg_id"], row["partition"], row["offset"])
            if record in seen:
                continue  # a redelivery: only first processings count
            seen.add(record)
            seq = int(m.group(3))
            if seq < newest.get(order, -1):
                flagged.add((row["topic"], row["partition"], row["msg_id"]))
                keys.add((row["topic"], row["key"]))
            newest[order] = max(seq, newest.get(order, -1))
    return flagged, keys


def failed_reference(producer_logs: list[Path]) -> Counter:
    """Failed sends per the producer's error, an empty one as the report names it."""
    return Counter(r["error"] or "(no error logged)" for p in producer_logs for r in read_rows(p, PRODUCER_COLUMNS)[0]
                   if r["status"] == "failed")


# the content identity (course-format logs, kafkalab/analysis/content_job.py), one rule at a time

CONTROL = ("quit", "crash", "wait")


def read_course(path: Path) -> tuple[list[tuple[str, int, str, str]], int]:
    """A course log's records (topic, partition, key, value) and its bad lines: a last line without its line
    break is bad, whatever it holds."""
    text = path.read_bytes().decode("utf-8", "replace")
    lines = text.split("\n")
    bad = 0
    if lines[-1]:
        bad += 1
    records = []
    for line in lines[:-1]:
        line = line.removesuffix("\r")
        if not line:
            continue
        fields = line.split(",", 3)
        if len(fields) < 4 or not fields[0] or not fields[1].isdigit():
            bad += 1
            continue
        topic, partition, key, value = fields
        records.append((topic, int(partition), "" if key == "null" else key, value))
    return records, bad


def is_course(path: Path) -> bool:
    return not path.read_text(errors="replace").startswith("msg_id,")


def course_reference(producer_logs: list[Path], consumer_logs: list[Path],
                     audit_logs: list[Path]) -> tuple[dict[tuple[str, int], Counter], dict[str, int]]:
    """Counts per (topic, partition) and bad lines per kind, for course producer logs and consumer logs of
    either format (kafkalab's: grouped by their group, repeats at one offset known)."""
    audit = bool(audit_logs)
    bad: Counter = Counter()
    sent: Counter = Counter()
    for path in producer_logs:
        records, n = read_course(path)
        bad["producer"] += n
        sent.update(r for r in records if r[3] not in CONTROL)
    # identity -> group -> offsetless rows, and offset -> rows
    plain: dict[tuple, Counter] = defaultdict(Counter)
    at: dict[tuple, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    typed: set = set()
    for path in consumer_logs:
        if is_course(path):
            records, n = read_course(path)
            bad["consumer"] += n
            for r in records:
                if r[3] not in CONTROL:
                    plain[r][""] += 1
            continue
        rows, n = read_rows(path, CONSUMER_COLUMNS)
        bad["consumer"] += n
        for row in rows:
            identity = (row["topic"], row["partition"], row["key"], row["value"])
            if row["value"] in CONTROL:
                continue
            if row["msg_id"] == TYPED_MSG_ID:
                typed.add(identity)
            at[identity][row["group"]][row["offset"]] += 1
    in_topic: Counter = Counter()
    for path in audit_logs:
        rows, n = read_rows(path, CONSUMER_COLUMNS)
        bad["audit"] += n
        offsets = defaultdict(set)
        for row in rows:
            if row["value"] not in CONTROL:
                offsets[(row["topic"], row["partition"], row["key"], row["value"])].add(row["offset"])
        in_topic.update({identity: len(found) for identity, found in offsets.items()})

    counts: dict[tuple[str, int], Counter] = defaultdict(Counter)
    for identity in {*sent, *plain, *at, *in_topic}:
        groups = set(plain[identity]) | set(at[identity])
        copies = [plain[identity][g] + len(at[identity][g]) for g in groups]
        sure = sum(n - 1 for g in groups for n in at[identity][g].values())
        rows = sum(plain[identity].values()) + sum(n for g in groups for n in at[identity][g].values())
        p, a = sent[identity], in_topic[identity]
        c = max(copies, default=0)
        out = counts[identity[:2]]
        out["attempted"] += p
        out["acknowledged"] += p
        out["consumed_rows"] += rows
        out["distinct_consumed"] += c
        lost = max(p - c, 0)
        out["lost"] += lost
        out["redelivered"] += sure
        if identity in typed:
            out["typed"] += c
        elif not p:
            out["unexpected"] += c
        if not p:
            if audit:
                out["redelivered"] += sum(max(x - a, 0) for x in copies)
            continue
        if audit:
            by_brokers = min(lost, max(p - a, 0))
            out["lost_by_brokers"] += by_brokers
            out["missed_by_consumers"] += lost - by_brokers
            out["duplicated"] += max(a - p, 0)
            out["redelivered"] += sum(max(x - max(a, p), 0) for x in copies)
        else:
            out["consumed_twice"] += sum(max(x - p, 0) for x in copies)
    return dict(counts), dict(bad)


def spark_counts(report: Report) -> dict[tuple[str, int], Counter]:
    """The report's non-zero counts per (topic, partition)."""
    return {(row.topic, row.partition): Counter({k: v for k, v in row.counts.items() if v})
            for row in report.per_partition}


def assert_matches_reference(report: Report, producer_logs: list[Path], consumer_logs: list[Path],
                             audit_logs: list[Path], run: str) -> dict[str, int]:
    """The report's counts per partition, its keys out of order and its failed sends by reason are the
    reference's; returns the reference's bad lines per kind."""
    expected, bad = reference(producer_logs, consumer_logs, audit_logs, run)
    expected = {k: Counter({n: v for n, v in c.items() if v}) for k, c in expected.items()}
    got = {k: v for k, v in spark_counts(report).items() if v or k in expected}
    assert got == expected
    assert report.key_reordered_keys == len(key_order_reference(consumer_logs, run)[1])
    assert report.failed_by_reason == dict(failed_reference(producer_logs))
    return bad
