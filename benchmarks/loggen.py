"""Fast bulk generator of payload logs with injected anomalies, for the analysis benchmark.

Writes, for ``n`` attempted sends spread over two producers and six partitions: one producer log per
producer, one consumer log per consumer (one group, three partitions each), an audit log, and the
course's seed format (``topic,partition,key,value``) of what the producers had acknowledged and what
the consumers processed, for the sort + diff baseline.

Anomalies are injected at fixed per-mille rates, deterministically from ``seed``; the expected totals
are returned so the benchmark can check the job's answer.
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS

TOPIC = "bench"
PARTITIONS = 6
PRODUCERS = ("p1", "p2")
CONSUMERS = ("c1", "c2")
GROUP = "bench-group"
QUOTES = (
    "The only way to do great work is to love what you do.",
    "Simplicity is prerequisite for reliability.",
    "Premature optimization is the root of all evil, or at least most of it.",
    "Talk is cheap. Show me the code.",
    "Any sufficiently advanced technology is indistinguishable from magic.",
    "Measure twice, cut once; then measure again, \"just in case\".",
)
# per-mille rates of each injected fate; every other send is written once and processed once
RATES = {
    "missed": 1.0,       # acked, in the topic, never processed
    "broker_lost": 1.0,  # acked, not in the topic
    "duplicated": 0.5,   # written at two offsets, both processed
    "recovered": 0.5,    # delivery failed, yet in the topic and processed
    "failed": 0.5,       # delivery failed, not in the topic
    "unknown": 0.2,      # no delivery report, not in the topic
    "redelivered": 1.0,  # processed twice by the group
    "reordered": 0.5,    # written before the producer's previous send in its partition
}
UNEXPECTED_PER_MILLE = 0.1
AUDIT_ONLY = ("lost_by_brokers", "missed_by_consumers")  # classes that need the audit log
TIMEOUT_ERROR = 'KafkaError{code=_MSG_TIMED_OUT,val=-192,str="Local: Message timed out"}'

# a record in the topic: [msg_id, key, value, times processed, seq, producer index, swappable, offset]
MSG, KEY, VALUE, TIMES, SEQ, PROD, SWAPPABLE, OFFSET = range(8)


@dataclass
class Generated:
    producer_logs: list[Path]
    consumer_logs: list[Path]
    audit_log: Path
    seed_producer: Path
    seed_consumer: Path
    expected: dict[str, int] = field(default_factory=dict)


def generate(out: Path, n: int, seed: int = 7) -> Generated:
    """Write the logs for ``n`` sends into ``out`` (created) and return their paths and expected totals."""
    out.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    run = f"bench{seed}"
    cumulative = []
    acc = 0.0
    for name, per_mille in RATES.items():
        acc += per_mille / 1000.0
        cumulative.append((acc, name))
    expected = dict.fromkeys(
        ("lost", "lost_by_brokers", "missed_by_consumers", "duplicated", "redelivered", "reordered",
         "recovered", "unexpected"), 0)
    topic: list[list[list]] = [[] for _ in range(PARTITIONS)]
    # per producer: (msg_id, seq, partition, key, status, error, value, last record written or None)
    sends: list[list[tuple]] = [[] for _ in PRODUCERS]
    for i in range(n):
        pi = i % len(PRODUCERS)
        seq = i // len(PRODUCERS)
        part = rnd.randrange(PARTITIONS)
        msg_id = f"{run}:{PRODUCERS[pi]}:{seq}"
        key = f"k{rnd.randrange(1000)}"
        value = QUOTES[rnd.randrange(len(QUOTES))]
        r = rnd.random()
        fate = next((name for limit, name in cumulative if r < limit), "ok")
        status, error = "acked", ""
        if fate in ("failed", "recovered"):
            status, error = "failed", TIMEOUT_ERROR
        elif fate == "unknown":
            status = "unknown"
        record = None
        if fate not in ("broker_lost", "failed", "unknown"):
            rows = topic[part]
            record = [msg_id, key, value, 0 if fate == "missed" else 1, seq, pi, fate == "ok", -1]
            prev = rows[-1] if rows else None
            if fate == "reordered" and prev is not None and prev[PROD] == pi and prev[SWAPPABLE]:
                prev[SWAPPABLE] = False
                record[SWAPPABLE] = False
                rows.insert(len(rows) - 1, record)
                expected["reordered"] += 1
            else:
                rows.append(record)
            if fate == "duplicated":
                # the first attempt was written but its response lost; the retry is the one acknowledged
                first = list(record)
                first[SWAPPABLE] = False
                rows.insert(len(rows) - 1, first)
                record[SWAPPABLE] = False
                expected["duplicated"] += 1
            elif fate == "redelivered":
                record[TIMES] = 2
                record[SWAPPABLE] = False
                expected["redelivered"] += 1
            elif fate == "recovered":
                expected["recovered"] += 1
        if fate == "missed":
            expected["lost"] += 1
            expected["missed_by_consumers"] += 1
        elif fate == "broker_lost":
            expected["lost"] += 1
            expected["lost_by_brokers"] += 1
        sends[pi].append((msg_id, seq, part, key, status, error, value, record))

    for rows in topic:
        for offset, record in enumerate(rows):
            record[OFFSET] = offset

    gen = Generated([], [], out / "audit.csv", out / "producer.seed", out / "consumer.seed", expected)
    with gen.seed_producer.open("w") as seed_p:
        for name, rows in zip(PRODUCERS, sends, strict=True):
            path = out / f"producer-{name}.csv"
            _write(path, PRODUCER_COLUMNS, (
                (msg_id, seq, TOPIC, part, rec[OFFSET] if rec is not None and status == "acked" else -1, key,
                 status, error, 1_700_000_000_000 + seq, value)
                for msg_id, seq, part, key, status, error, value, rec in rows))
            gen.producer_logs.append(path)
            seed_p.writelines(f"{TOPIC},{part},{key},{value}\n"
                              for _m, _s, part, key, status, _e, value, _r in rows if status == "acked")
    del sends

    audit = [(rec[MSG], "audit", TOPIC, part, rec[OFFSET], rec[KEY], 0, 0, rec[VALUE], "")
             for part, rows in enumerate(topic) for rec in rows]
    _write(gen.audit_log, CONSUMER_COLUMNS, audit)
    del audit
    with gen.seed_consumer.open("w") as seed_c:
        for ci, name in enumerate(CONSUMERS):
            consumed = []
            for part in range(ci * PARTITIONS // len(CONSUMERS), (ci + 1) * PARTITIONS // len(CONSUMERS)):
                for rec in topic[part]:
                    consumed.extend([(rec[MSG], name, TOPIC, part, rec[OFFSET], rec[KEY], 0, 0, rec[VALUE],
                                      GROUP)] * rec[TIMES])
                    if rnd.random() < UNEXPECTED_PER_MILLE / 1000.0:
                        # a leftover of an earlier run, at an offset beyond this run's records
                        consumed.append((f"old{seed}:p9:{rec[OFFSET]}", name, TOPIC, part,
                                         10**12 + rec[OFFSET], rec[KEY], 0, 0, rec[VALUE], GROUP))
                        expected["unexpected"] += 1
            path = out / f"consumer-{name}.csv"
            _write(path, CONSUMER_COLUMNS, consumed)
            gen.consumer_logs.append(path)
            seed_c.writelines(f"{TOPIC},{row[3]},{row[5]},{row[8]}\n" for row in consumed)
    return gen


def _write(path: Path, header: tuple[str, ...], rows) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
