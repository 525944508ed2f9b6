"""Where a processor's two payload logs go: named so the analysis reads them with the consumers' and the
producers' (``consumer*.csv``, ``producer*.csv``).

What it consumed is a consumer log of its input topic (``consumer-processor[-N].csv``); what it produced, a
producer log of its output topic (``producer-processor[-N].csv``), which a consumer of that topic is analysed
against. That log has one row per message id, as every producer log has: a record sent again (read again after
a crash, at-least-once) is the same message, which a consumer then reads at two offsets.
"""

from __future__ import annotations

import csv
from pathlib import Path

from kafkalab.clients.payload_log import PARTIAL_SUFFIX


def consumed_log_path(log_dir: Path, name: str) -> Path:
    return log_dir / f"consumer-{name}.csv"


def produced_log_path(log_dir: Path, name: str) -> Path:
    return log_dir / f"producer-{name}.csv"


def logged_ids(path: Path) -> set[str]:
    """The message ids an earlier instance's produced log (complete or partial) already has a row of."""
    ids: set[str] = set()
    for candidate in (path, path.with_name(path.name + PARTIAL_SUFFIX)):
        if candidate.exists():
            with open(candidate, encoding="utf-8", newline="") as f:
                ids.update(row["msg_id"] for row in csv.DictReader(f) if row.get("msg_id"))
    return ids
