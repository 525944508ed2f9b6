"""An analysis of generated logs run on a fresh session, so the JVM has compiled the job before the first
real run: both shapes of the query (with and without an audit log, whose generated code differs), on
enough rows that the hot loops are compiled too. Measured on 2 cores: after 20k rows in one shape the
first 500k run took 11.6 s (the next 4.8 s); after 100k rows in both shapes, 4.9 s (then 4.2 s).

The rows look like a run's (the corpus's lines as values, some quoted for their commas; the course's message
ids): with one-letter values, the first real 100k-record analysis after the warm-up took 3.75 s, the next
2.26 s, because the CSV parser's quoted-field and long-string paths were still cold. The C2 compiler keeps
improving the job for several passes, so a session that can spare the time runs more than one ``rounds``."""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalab.analysis.job import classify
from kafkalab.clients.corpus import corpus_lines
from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

IDLE_ROUNDS = 3
"""Rounds of a session warming while idle (the console's): after one round the first real 100k-record
analysis took 3.5 s, after three 1.85 s (the warm-up 15 s and 25.5 s), on 2 cores."""


def warm_up(session: SparkSession, rows: int = 100_000, shapes: tuple[bool, ...] = (True, False),
            rounds: int = 1, go_on: Callable[[], bool] = lambda: True) -> None:
    """Classify ``rows`` generated sends (with a loss, a duplicate and a redelivery) and throw it away, once
    per shape in ``shapes`` (True: with an audit log); ``rounds`` times, each pass after the first round only
    while ``go_on()`` says so (the console: while no run needs the cores)."""
    values = corpus_lines()
    with tempfile.TemporaryDirectory(prefix="kafkalab-warmup-") as tmp:
        root = Path(tmp)
        producer, consumer, audit = root / "p.csv", root / "c.csv", root / "a.csv"
        sends = [(f"warm:producer:{i}", i, "test-topic", i % 6, i // 6, str(i % 1000), "acked", "",
                  1_700_000_000_000 + i, values[i % len(values)]) for i in range(rows)]
        held = [(s[0], "audit", *s[2:6], 0, *s[8:10], "") for s in sends[1:]]  # the first send lost
        held.append((sends[2][0], "audit", "test-topic", 0, rows, "2", 0, *sends[2][8:10], ""))  # a duplicate
        processed = [(h[0], "consumer-1", *h[2:9], "test-app") for h in [*held[1:], held[3]]]  # one redelivered
        for path, columns, data in ((producer, PRODUCER_COLUMNS, sends), (consumer, CONSUMER_COLUMNS, processed),
                                    (audit, CONSUMER_COLUMNS, held)):
            with path.open("w", newline="") as fh:
                writer = csv.writer(fh, lineterminator="\n")
                writer.writerow(columns)
                writer.writerows(data)
        for done in range(rounds):
            for with_audit in shapes:
                if done and not go_on():
                    return
                audits = [audit] if with_audit else []
                size = sum(log.stat().st_size for log in (producer, consumer, *audits))
                classify(session, [producer], [consumer], audits, "warm", size)
