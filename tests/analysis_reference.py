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

from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS, TYPED_MSG_ID

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
        if p["status"] != "acked" and positions[msg]:
            c["recovered"] += 1
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
    return dict(counts), bad
