"""Checks on the log files before Spark reads them, and line numbers of malformed lines after.

Spark counts malformed lines in its one pass; only when it found some does :func:`locate_malformed`
re-read the files of that kind (line by line, as Spark does) to name file and line number.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.errors import KafkalabError
from kafkalab.logformat import (
    CONSUMER_COLUMNS,
    MSG_ID_PATTERN,
    PRODUCER_COLUMNS,
    PRODUCER_STATUSES,
    parse_msg_id,
)

KINDS = {"producer": PRODUCER_COLUMNS, "consumer": CONSUMER_COLUMNS, "audit": CONSUMER_COLUMNS}
_INT_COLUMNS = ("seq", "partition", "offset", "ts_ms", "leader_epoch")
MAX_LINES_NAMED = 20
_INTEGER = re.compile(r"-?[0-9]+\Z")
_PRODUCER_MSG_ID = re.compile(MSG_ID_PATTERN)


@dataclass
class InputFile:
    path: Path
    kind: str
    size_bytes: int
    malformed: int = 0
    malformed_lines: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"path": str(self.path), "kind": self.kind, "size_bytes": self.size_bytes,
                "malformed": self.malformed, "malformed_lines": self.malformed_lines}


def check_files(kind: str, paths: Iterable[Path | str]) -> list[InputFile]:
    """Existing, non-empty files whose first line is the contract's header; else KafkalabError."""
    header = ",".join(KINDS[kind])
    files = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise KafkalabError(f"{kind} log {path} does not exist; give the path of a {kind} log CSV")
        size = path.stat().st_size
        if size == 0:
            raise KafkalabError(f"{kind} log {path} is empty; it needs at least the header line: {header}")
        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            first = fh.readline().rstrip("\r\n").lstrip("\ufeff")
        if first != header:
            raise KafkalabError(f"{kind} log {path} does not start with the {kind} header {header!r} "
                                f"(found {first[:120]!r}); is it the right kind of log?")
        files.append(InputFile(path, kind, size))
    return files


def reject_repeats(files: Sequence[InputFile]) -> None:
    seen: dict[Path, str] = {}
    for f in files:
        real = f.path.resolve()
        if real in seen:
            raise KafkalabError(f"{f.path} is given twice (as {seen[real]} and {f.kind} log); give each log once")
        seen[real] = f"{f.kind} log"


def detect_run(producer_files: Sequence[InputFile]) -> str | None:
    """The run of the producer logs, from each file's first message id; refuses logs of two runs.

    The job also counts every producer row of another run, so a file mixing runs is refused too.
    """
    runs: dict[str, Path] = {}
    for f in producer_files:
        with f.path.open(encoding="utf-8", errors="replace", newline="") as fh:
            reader = csv.reader(fh)
            next(reader, None)
            for row in reader:
                try:
                    run = parse_msg_id(row[0]).run
                except (ValueError, IndexError):
                    continue
                runs.setdefault(run, f.path)
                break
    if len(runs) > 1:
        raise mixed_runs_error(sorted(runs), {run: str(path) for run, path in runs.items()})
    return next(iter(runs), None)


def mixed_runs_error(runs: Sequence[str], where: dict[str, str] | None = None) -> KafkalabError:
    named = ", ".join(f"{r} ({where[r]})" if where and r in where else r for r in runs)
    return KafkalabError(f"producer logs of different runs are mixed: {named}; analyse one run at a time")


def is_malformed(kind: str, line: str) -> bool:
    """The job's rule for a bad line, for one physical line (Spark reads line by line too)."""
    columns = KINDS[kind]
    try:
        row = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return True
    if len(row) != len(columns):
        return True
    values = dict(zip(columns, row, strict=True))
    if any(values.get(name) and not _INTEGER.match(values[name]) for name in _INT_COLUMNS):
        return True
    if not values["topic"] or not values["partition"]:
        return True
    if kind == "producer":
        return values["status"] not in PRODUCER_STATUSES or not _PRODUCER_MSG_ID.match(values["msg_id"])
    return not values["offset"]


def locate_malformed(files: Sequence[InputFile]) -> None:
    """Fill each file's malformed count and first line numbers (1-based, the header is line 1)."""
    for f in files:
        with f.path.open(encoding="utf-8", errors="replace", newline="") as fh:
            for number, line in enumerate(fh, start=1):
                if number == 1:
                    continue
                text = line.rstrip("\r\n")
                if text and is_malformed(f.kind, text):
                    f.malformed += 1
                    if len(f.malformed_lines) < MAX_LINES_NAMED:
                        f.malformed_lines.append(number)
