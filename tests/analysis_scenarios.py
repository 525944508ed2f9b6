"""Generated runs with every anomaly class injected, written as payload logs, for the analysis tests.

A scenario is a list of sends, each with a fate; :func:`write_scenario` turns it into the producer,
consumer and audit logs a real run would leave, and says how many of each class it injected.
"""

from __future__ import annotations

import csv
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from kafkalab.logformat import ABORTED, CONSUMER_COLUMNS, PRODUCER_COLUMNS, TYPED_MSG_ID

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
    # a transaction that did not commit: its records are in the topic, failed ABORTED; read_uncommitted reads them
    "aborted_read": ("failed", False, 1, 1),
    "aborted_unread": ("failed", False, 1, 0),
}
ABORTED_FATES = ("aborted_read", "aborted_unread")
GARBAGE = ("garbage", "a,b,c", "r1:p1:1,x,t1,notanint,0,k,acked,,0,v")


@dataclass
class Send:
    producer: str
    topic: str
    partition: int
    fate: str
    key: str | None = None  # the record's key; None: one of its own (k{seq}), "": no key


# keys of the generated sends: a few shared ones (on several partitions, so a consumer reading its partitions one
# after the other processes some out of their key's order), none, or each send's own
KEYS = (None, None, "a", "b", "")


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
                     st.integers(0, partitions - 1), st.sampled_from(sorted(FATES)), st.sampled_from(KEYS))
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
    logs: dict[tuple[str, int], list[list]] = {}  # (topic, partition) -> records [msg_id, times, key]
    producer_rows: dict[str, list[list]] = {"p1": [], "p2": []}
    injected: Counter = Counter()
    for s in scenario.sends:
        status, offset_known, copies, times = FATES[s.fate]
        seq = seqs[s.producer]
        seqs[s.producer] += 1
        msg_id = f"{RUN}:{s.producer}:{seq}"
        partition = -1 if s.fate == "failed_no_partition" else s.partition
        log = logs.setdefault((s.topic, s.partition), [])
        key = f"k{seq}" if s.key is None else s.key
        error = "" if status == "acked" else ABORTED if s.fate in ABORTED_FATES else "timed out"
        row = [msg_id, seq, s.topic, partition, -1, key, status, error,
               1_700_000_000_000 + seq, "a value, \"quoted\""]
        records = []
        for _ in range(copies):
            records.append([msg_id, times, key])
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
        # c1 reads partitions 0 and 1 one after the other: a shared key's records on both are out of its order
        consumer = "c1" if partition < 2 else "c2"
        for offset, (msg_id, times, key) in enumerate(log):
            audit_rows.append((msg_id, "audit", topic, partition, offset, key, 0, 0, "v", ""))
            row = (msg_id, consumer, topic, partition, offset, key, 0, 0, "v", "g1")
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


# ---- a topic that grows mid-stream: keys move to the new partitions --------------------------------------------

TIMED_OUT = "_MSG_TIMED_OUT"
OTHER_FAILURE = "_PURGE_QUEUE"
# a send's fate in a grown topic, drawn with these weights: acked, or failed for a reason (not written, or, for a
# timeout during a failover, written anyway: recovered); "" is a failed send whose producer logged no error
GROWTH_FATES = {"acked": 80, "timed_out": 8, "timed_out_written": 6, "other_failure": 4, "no_error": 2}


@dataclass
class Record:
    msg_id: str
    key: str
    seq: int
    partition: int
    offset: int = -1
    grown: bool = False  # sent after the partitions were added


@dataclass
class KeyMoves:
    """A run whose topic grew from ``old`` to ``new`` partitions mid-stream, and what it holds by construction."""

    written: Written
    old: int
    new: int
    moved: set[str]  # the keys that moved to a new partition
    key_reordered: int  # records of a moved key processed after its newer records on the new partition
    keys: set[str]  # the keys of those records
    failed_by_reason: Counter
    redelivered: int
    recovered: int
    producer_rows: dict[str, tuple]  # message id -> its producer row


def write_key_moves(seed: int, out: Path) -> KeyMoves:
    """Producer p1 sends rolls of keys 0..n-1; after roll ``grown_after`` the topic has new partitions and some keys
    move to one of them. p2 sent one record each of a few keys in the first roll, with seqs far above p1's.

    Group g1's one consumer (c1) was behind: it had processed the old partitions up to roll ``lag``, then got the new
    partitions and processed them all, then the backlog of the old ones. So every record of a moved key in that
    backlog (rolls ``lag``..``grown_after - 1``) was processed after the key's newer records: key_reordered, by
    construction, where the key has a newer record in the topic at all. c1 then processed a few records of the first
    rolls again (a rewind: redeliveries, no key_reordered) and one record of the backlog twice in a row. Group g3's e1
    processed as c1 did, without the redeliveries (the same records: counted once). Group g2's d1 read the old
    partitions to the end first (in key order); group g4's f1 the old partitions and f2 the new ones (two consumers:
    their rows are not ordered against each other). The audit lists the new partitions first: it is no processing.
    """
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    old = rng.randint(2, 3)
    new = old + rng.randint(1, 3)
    keys = rng.randint(6, 12)
    rolls = rng.randint(4, 6)
    grown_after = rng.randint(2, rolls - 1)
    lag = rng.randint(1, grown_after - 1)
    moved_to = {str(k): rng.randrange(old, new) for k in rng.sample(range(keys), rng.randint(2, keys // 2))}
    topic: dict[int, list[Record]] = {p: [] for p in range(new)}
    producer_rows: dict[str, tuple] = {}
    failed: Counter = Counter()
    roll_of: dict[str, int] = {}
    recovered = 0

    def send(producer: str, seq: int, key: str, roll: int, fate: str) -> None:
        nonlocal recovered
        grown = roll >= grown_after
        partition = moved_to[key] if grown and key in moved_to else int(key) % old
        record = Record(f"{RUN}:{producer}:{seq}", key, seq, partition, grown=grown)
        written = fate in ("acked", "timed_out_written")
        if written:
            record.offset = len(topic[partition])
            topic[partition].append(record)
            roll_of[record.msg_id] = roll
        error = {"acked": "", "timed_out": TIMED_OUT, "timed_out_written": TIMED_OUT, "other_failure": OTHER_FAILURE,
                 "no_error": ""}[fate]
        if fate != "acked":
            failed[error or "(no error logged)"] += 1
            recovered += int(written)
        producer_rows[record.msg_id] = (record.msg_id, seq, "t1", partition, record.offset if fate == "acked" else -1,
                                        key, "acked" if fate == "acked" else "failed", error,
                                        1_700_000_000_000 + seq, "v")

    fates, weights = list(GROWTH_FATES), list(GROWTH_FATES.values())
    for roll in range(rolls):
        for k in range(keys):
            send("p1", roll * keys + k, str(k), roll, rng.choices(fates, weights)[0])
        if roll == 0:
            for i, k in enumerate(rng.sample(range(keys), 3)):
                send("p2", 1000 + i, str(k), 0, "acked")

    def interleaved(partitions: list[int], keep: Callable[[Record], bool]) -> list[Record]:
        """The kept records of ``partitions``, each partition's in offset order, the partitions taken in turns."""
        queues = [[r for r in topic[p] if keep(r)] for p in partitions]
        merged: list[Record] = []
        while any(queues):
            merged.append(rng.choice([q for q in queues if q]).pop(0))
        return merged

    olds, news = list(range(old)), list(range(old, new))
    caught_up = interleaved(olds, lambda r: roll_of[r.msg_id] < lag)
    on_new = interleaved(news, lambda r: True)
    backlog = interleaved(olds, lambda r: roll_of[r.msg_id] >= lag)
    newer_keys = {r.key for r in on_new}
    late = [r for r in backlog if r.key in newer_keys and r.msg_id.startswith(f"{RUN}:p1:")]
    again = [r for r in caught_up if r.key in newer_keys] or caught_up
    rewound = rng.sample(again, min(3, len(again)))
    twice = late[:1]

    def rows(consumer: str, group: str, records: list[Record]) -> list[tuple]:
        return [(r.msg_id, consumer, "t1", r.partition, r.offset, r.key, 0, 0, "v", group) for r in records]

    c1 = [*caught_up, *on_new, *[r for b in backlog for r in ([b, b] if b in twice else [b])], *rewound]
    consumers = {
        "c1": rows("c1", "g1", c1),
        "e1": rows("e1", "g3", [*caught_up, *on_new, *backlog]),
        "d1": rows("d1", "g2", [*caught_up, *backlog, *on_new]),
        "f1": rows("f1", "g4", [*caught_up, *backlog]),
        "f2": rows("f2", "g4", on_new),
    }
    written = Written([], [], [])
    for producer in ("p1", "p2"):
        path = out / f"producer-{producer}.csv"
        _write(path, PRODUCER_COLUMNS, [row for row in producer_rows.values() if row[0].split(":")[1] == producer],
               0, written)
        written.producer_logs.append(path)
    for name, consumed in consumers.items():
        path = out / f"consumer-{name}.csv"
        _write(path, CONSUMER_COLUMNS, consumed, 0, written)
        written.consumer_logs.append(path)
    path = out / "audit.csv"
    _write(path, CONSUMER_COLUMNS, rows("audit", "", [r for p in (*news, *olds) for r in topic[p]]), 0, written)
    written.audit_logs.append(path)
    return KeyMoves(written, old, new, set(moved_to), len(late), {r.key for r in late}, failed,
                    len({r.msg_id for r in [*rewound, *twice]}), recovered, producer_rows)


# ---- transactions: aborted ones read by read_uncommitted consumers ---------------------------------------------

@dataclass
class Transactions:
    """A run of a transactional producer, and what it holds by construction."""

    written: Written
    committed_log: Path  # the read_committed consumer's log
    aborted_read: int  # aborted records the read_uncommitted consumer processed (each once)
    aborted: int  # records of aborted transactions, written or not
    recovered: int  # p2's timed-out sends that were in the topic anyway
    timed_out: int


def write_transactions(seed: int, out: Path) -> Transactions:
    """Producer p1 sends transactions of a few records to t1's partitions; some abort (their records written to the
    topic, or some not: an abort before they were sent), each logged failed ``ABORTED`` at its offset (-1 when not
    written). Each transaction's end is a marker taking an offset, as Kafka's do. p2, not transactional, has a few
    sends time out, some of them written anyway (recovered). Group g1's c1 reads read_uncommitted: every record in
    the topic, aborted ones too; group g2's d1 reads read_committed: the committed ones only. The audit reads
    everything, as kafkalab's does (read_uncommitted)."""
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    partitions = rng.randint(1, 3)
    offsets = [0] * partitions
    in_topic: list[tuple[str, int, int, str, bool]] = []  # (msg_id, partition, offset, key, committed)
    rows: dict[str, list[tuple]] = {"p1": [], "p2": []}
    aborted = aborted_written = recovered = timed_out = 0

    def write(msg_id: str, key: str, committed: bool) -> tuple[int, int]:
        partition = int(key) % partitions
        offsets[partition] += 1
        in_topic.append((msg_id, partition, offsets[partition] - 1, key, committed))
        return partition, offsets[partition] - 1

    seq = 0
    for _ in range(rng.randint(6, 12)):
        commits = rng.random() < 0.6
        for _ in range(rng.randint(2, 6)):
            msg_id, key = f"{RUN}:p1:{seq}", str(rng.randrange(9))
            written = commits or rng.random() < 0.8
            partition, offset = write(msg_id, key, commits) if written else (int(key) % partitions, -1)
            status, error = ("acked", "") if commits else ("failed", ABORTED)
            rows["p1"].append((msg_id, seq, "t1", partition, offset, key, status, error, 1_700_000_000_000 + seq, "v"))
            aborted += not commits
            aborted_written += written and not commits
            seq += 1
        for p in range(partitions):  # the transaction's marker, on each partition it wrote to (here: all)
            offsets[p] += 1
    for seq2 in range(rng.randint(5, 15)):
        msg_id, key = f"{RUN}:p2:{seq2}", str(rng.randrange(9))
        fate = rng.choice(["acked", "acked", "timed_out", "timed_out_written"])
        partition, offset = write(msg_id, key, True) if fate != "timed_out" else (int(key) % partitions, -1)
        status, error = ("acked", "") if fate == "acked" else ("failed", TIMED_OUT)
        rows["p2"].append((msg_id, seq2, "t1", partition, offset if fate == "acked" else -1, key, status, error,
                           1_700_000_000_000 + seq2, "v"))
        timed_out += fate != "acked"
        recovered += fate == "timed_out_written"

    def consumed(consumer: str, group: str, committed_only: bool) -> list[tuple]:
        return [(m, consumer, "t1", p, o, k, 0, 0, "v", group) for m, p, o, k, committed in in_topic
                if committed or not committed_only]

    written_logs = Written([], [], [])
    for producer, produced in rows.items():
        path = out / f"producer-{producer}.csv"
        _write(path, PRODUCER_COLUMNS, produced, 0, written_logs)
        written_logs.producer_logs.append(path)
    for consumer, group, committed_only in (("c1", "g1", False), ("d1", "g2", True)):
        path = out / f"consumer-{consumer}.csv"
        _write(path, CONSUMER_COLUMNS, consumed(consumer, group, committed_only), 0, written_logs)
        written_logs.consumer_logs.append(path)
    path = out / "audit.csv"
    _write(path, CONSUMER_COLUMNS, consumed("audit", "", False), 0, written_logs)
    written_logs.audit_logs.append(path)
    return Transactions(written_logs, out / "consumer-d1.csv", aborted_written, aborted, recovered, timed_out)
