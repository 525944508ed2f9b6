"""Generated runs with every anomaly class injected, written as payload logs, for the analysis tests.

A scenario is a list of sends, each with a fate; :func:`write_scenario` turns it into the producer,
consumer and audit logs a real run would leave, and says how many of each class it injected.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS, TYPED_MSG_ID

RUN = "r1"
# fate -> (status, offset known to the producer, copies written, times processed by the main group)
FATES = {
    "ok": ("acked", True, 1, 1),
    "missed": ("acked", True, 1, 0),
    "broker_lost": ("acked", True, 0, 0),
    "acks0_ok": ("acked", False, 1, 1),
    "acks0_lost": ("acked", False, 0, 0),
    "duplicated": ("acked", True, 2, 1),
    "redelivered": ("acked", True, 1, 2),
    "recovered_failed": ("failed", False, 1, 1),
    "recovered_unknown": ("unknown", False, 1, 0),
    "failed": ("failed", False, 0, 0),
    "unknown": ("unknown", False, 0, 0),
    "failed_no_partition": ("failed", False, 0, 0),
    "reordered": ("acked", True, 1, 1),
}
GARBAGE = ("garbage", "a,b,c", "r1:p1:1,x,t1,notanint,0,k,acked,,0,v")


@dataclass
class Send:
    producer: str
    topic: str
    partition: int
    fate: str


@dataclass
class Scenario:
    sends: list[Send]
    second_group: bool = False
    foreign_rows: int = 0
    no_id_rows: int = 0
    typed_rows: int = 0  # records typed by hand, read by group g1 (and g2 with second_group)
    audit: bool = True
    garbage_in_consumer: int = 0
    garbage_in_producer: int = 0


@dataclass
class Written:
    producer_logs: list[Path]
    consumer_logs: list[Path]
    audit_logs: list[Path]
    injected: Counter = field(default_factory=Counter)
    garbage_lines: dict[Path, list[int]] = field(default_factory=dict)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    topics = draw(st.sampled_from([("t1",), ("t1", "t2")]))
    partitions = draw(st.integers(1, 3))
    send = st.builds(Send, st.sampled_from(["p1", "p2"]), st.sampled_from(topics),
                     st.integers(0, partitions - 1), st.sampled_from(sorted(FATES)))
    return Scenario(
        sends=draw(st.lists(send, min_size=10, max_size=80)),
        second_group=draw(st.booleans()),
        foreign_rows=draw(st.integers(0, 3)),
        no_id_rows=draw(st.integers(0, 2)),
        typed_rows=draw(st.integers(0, 2)),
        audit=draw(st.booleans()),
        garbage_in_consumer=draw(st.integers(0, 2)),
        garbage_in_producer=draw(st.integers(0, 1)),
    )


def write_scenario(scenario: Scenario, out: Path) -> Written:
    out.mkdir(parents=True, exist_ok=True)
    seqs: Counter = Counter()
    logs: dict[tuple[str, int], list[list]] = {}  # (topic, partition) -> records [msg_id, times]
    producer_rows: dict[str, list[list]] = {"p1": [], "p2": []}
    injected: Counter = Counter()
    for s in scenario.sends:
        status, offset_known, copies, times = FATES[s.fate]
        seq = seqs[s.producer]
        seqs[s.producer] += 1
        msg_id = f"{RUN}:{s.producer}:{seq}"
        partition = -1 if s.fate == "failed_no_partition" else s.partition
        log = logs.setdefault((s.topic, s.partition), [])
        row = [msg_id, seq, s.topic, partition, -1, f"k{seq}", status, "" if status == "acked" else "timed out",
               1_700_000_000_000 + seq, "a value, \"quoted\""]
        records = []
        for _ in range(copies):
            records.append([msg_id, times])
            log.append(records[-1])
        if s.fate == "reordered" and len(log) >= 2 and log[-2][0].split(":")[1] == s.producer:
            log[-1], log[-2] = log[-2], log[-1]
        if offset_known and records:
            row[4] = records  # resolved to the last copy's offset below
        producer_rows[s.producer].append(row)
        injected[s.fate] += 1

    offsets = {}
    for (topic, partition), log in logs.items():
        for offset, record in enumerate(log):
            offsets[id(record)] = (topic, partition, offset)
    consumers: dict[str, list[tuple]] = {"c1": [], "c2": [], "d1": []}
    audit_rows = []
    for (topic, partition), log in sorted(logs.items()):
        consumer = "c1" if partition % 2 == 0 else "c2"
        for offset, (msg_id, times) in enumerate(log):
            audit_rows.append((msg_id, "audit", topic, partition, offset, "k", 0, 0, "v", ""))
            row = (msg_id, consumer, topic, partition, offset, "k", 0, 0, "v", "g1")
            consumers[consumer].extend([row] * times)
            if scenario.second_group and times:
                consumers["d1"].append((msg_id, "d1", *row[2:9], "g2"))
    for i in range(scenario.foreign_rows):
        consumers["c1"].append((f"r0:p1:{i}", "c1", "t1", 0, 10_000 + i, "k", 0, 0, "v", "g1"))
    for i in range(scenario.no_id_rows):
        consumers["c2"].append(("", "c2", "t1", 0, 20_000 + i, "k", 0, 0, "v", "g1"))
    for i in range(scenario.typed_rows):
        typed = (TYPED_MSG_ID, "c1", "t1", 0, 30_000 + i, "k", 0, 0, "v", "g1")
        consumers["c1"].append(typed)
        if scenario.second_group:
            consumers["d1"].append((TYPED_MSG_ID, "d1", *typed[2:9], "g2"))

    written = Written([], [], [], injected)
    for name, rows in producer_rows.items():
        resolved = [(*r[:4], offsets[id(r[4][-1])][2] if isinstance(r[4], list) else r[4], *r[5:]) for r in rows]
        path = out / f"producer-{name}.csv"
        _write(path, PRODUCER_COLUMNS, resolved, scenario.garbage_in_producer if name == "p1" else 0, written)
        written.producer_logs.append(path)
    for name, rows in consumers.items():
        path = out / f"consumer-{name}.csv"
        _write(path, CONSUMER_COLUMNS, rows, scenario.garbage_in_consumer if name == "c1" else 0, written)
        written.consumer_logs.append(path)
    if scenario.audit:
        path = out / "audit.csv"
        _write(path, CONSUMER_COLUMNS, audit_rows, 0, written)
        written.audit_logs.append(path)
    return written


def _write(path: Path, columns: tuple[str, ...], rows: list, garbage: int, written: Written) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        for i in range(garbage):
            fh.write(GARBAGE[i % len(GARBAGE)] + "\n")
            written.garbage_lines.setdefault(path, []).append(len(rows) + 2 + i)
