"""Where a processor's two payload logs go: named so the analysis reads them with the consumers' and the
producers' (``consumer*.csv``, ``producer*.csv``).

What it consumed is a consumer log of its input topic (``consumer-processor[-N].csv``); what it produced, a
producer log of its output topic (``producer-processor[-N].csv``), which a consumer of that topic is analysed
against. That log has one row per message id, as every producer log has: a record sent again (read again after
a crash, at-least-once) is the same message, which a consumer then reads at two offsets.

An instance started while an earlier one still runs (paused: a zombie that will wake) cannot share its files: it
writes logs of its own (``consumer-processor.2.csv``, ``producer-processor.2.csv``), and :func:`settle` restores
the one row per message id once both have ended.
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
    for candidate in _complete_and_partial(path):
        with open(candidate, encoding="utf-8", newline="") as f:
            ids.update(row["msg_id"] for row in csv.DictReader(f) if row.get("msg_id"))
    return ids


def instance_log_name(name: str, instance: int) -> str:
    """The logs' stem of instance ``instance`` (2, 3, ...) of processor ``name`` started while an earlier one still
    runs (paused: a zombie), which holds ``name``'s logs: ``processor.2``. An instance started after the one before
    it ended appends to that one's logs instead."""
    return f"{name}.{instance}"


def sent_again_path(log_dir: Path, log_name: str) -> Path:
    """Where :func:`settle` keeps an instance's rows of messages an earlier instance had logged (not analysed)."""
    return log_dir / f"{log_name}-sent-again.csv"


def settle(log_dir: Path, name: str) -> int:
    """Once every instance of processor ``name`` has ended: the rows of an instance that ran beside an earlier one
    (``producer-NAME.N.csv``) whose message an earlier instance had logged move to ``NAME.N-sent-again.csv``, kept
    for the record and not analysed. Every producer log has one row per message id, and the analysis holds the
    logs to that; the consumers of the output read such a message at two offsets, a duplicate. Returns the rows
    moved."""
    seen = logged_ids(produced_log_path(log_dir, name))
    moved = 0
    for stem in _instance_stems(log_dir, name):
        for path in _complete_and_partial(produced_log_path(log_dir, stem)):
            with open(path, encoding="utf-8", newline="") as f:
                header, *rows = list(csv.reader(f))
            column = header.index("msg_id")
            again = [r for r in rows if r[column] in seen]
            if again:
                _write_rows(path, header, [r for r in rows if r[column] not in seen])
                target = sent_again_path(log_dir, stem)
                _write_rows(target, header, again, append=target.exists())
                moved += len(again)
            seen.update(r[column] for r in rows)
    return moved


def _instance_stems(log_dir: Path, name: str) -> list[str]:
    """Every instance log stem of ``name`` in ``log_dir`` (``NAME.N``), in the order the instances started."""
    numbers = {path.name.removeprefix(f"producer-{name}.").split(".", 1)[0]
               for path in log_dir.glob(f"producer-{name}.*.csv*")}
    return [instance_log_name(name, n) for n in sorted(int(x) for x in numbers if x.isdigit())]


def _complete_and_partial(path: Path) -> list[Path]:
    return [p for p in (path, path.with_name(path.name + PARTIAL_SUFFIX)) if p.exists()]


def _write_rows(path: Path, header: list[str], rows: list[list[str]], append: bool = False) -> None:
    """``rows`` under ``header`` (``append``: after the file's own rows); replaced whole, never half written."""
    if append:
        with open(path, "a", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
        return
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    tmp.replace(path)
