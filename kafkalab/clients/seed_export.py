"""Export a run's payload logs in the course's own format, so its ``diff`` recipe works unchanged.

The course's apps log ``topic,partition,key,value`` (value unquoted) for each acknowledged or
processed record; the two files are sorted byte-wise (``LC_ALL=C sort``), merged over instances.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from kafkalab.clients.payload_log import log_files
from kafkalab.errors import KafkalabError
from kafkalab.logformat import AUDIT_CONSUMER


def _rows(paths: list[Path]) -> Iterator[dict[str, str]]:
    for path in paths:
        with open(path, encoding="utf-8", newline="") as f:
            yield from csv.DictReader(f)


def _line(row: dict[str, str]) -> str:
    return f"{row['topic']},{row['partition']},{row['key']},{row['value']}\n"


def export_seed_format(run_dir: Path, out_dir: Path) -> tuple[Path, Path, int, int]:
    """Write ``producer.log`` and ``consumer.log`` into ``out_dir``; returns paths and line counts."""
    producers = log_files(run_dir, "producer")
    consumers = [p for p in log_files(run_dir, "consumer") if not p.name.startswith(AUDIT_CONSUMER)]
    if not producers and not consumers:
        raise KafkalabError(f"no payload logs in {run_dir}: give the run directory the clients wrote to")
    produced = sorted(_line(r) for r in _rows(producers) if r["status"] == "acked")
    consumed = sorted(_line(r) for r in _rows(consumers))
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = out_dir / "producer.log", out_dir / "consumer.log"
    for path, lines in zip(paths, (produced, consumed), strict=True):
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.writelines(lines)
    return paths[0], paths[1], len(produced), len(consumed)
