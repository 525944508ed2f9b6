"""Payload log files: CSV with a header row, written while a client runs.

A log is written as ``NAME.csv.partial`` and renamed to ``NAME.csv`` only on a clean close (after an
fsync), so a file named ``.csv`` is complete; a crashed client leaves its ``.partial`` file, whose rows
are nonetheless all valid (rows are flushed to the OS per batch). Readers take both.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from confluent_kafka import Message

from kafkalab.logformat import MSG_ID_HEADER

PARTIAL_SUFFIX = ".partial"
_BUFFER = 1 << 20


def log_files(run_dir: Path, prefix: str) -> list[Path]:
    """Complete and partial logs of ``prefix`` (producer, consumer, audit) in a run directory."""
    found = [*run_dir.glob(f"{prefix}*.csv"), *run_dir.glob(f"{prefix}*.csv{PARTIAL_SUFFIX}")]
    return sorted(found)


def csv_field(text: str) -> str:
    """``text`` as one RFC 4180 field (quoted when it holds a comma, quote or line break)."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


class PayloadLog:
    """One client instance's payload log. Not thread-safe: one thread writes."""

    def __init__(self, path: Path, columns: Sequence[str], truncate: bool = True) -> None:
        self.path = path
        self.partial = path.with_name(path.name + PARTIAL_SUFFIX)
        path.parent.mkdir(parents=True, exist_ok=True)
        if truncate:
            path.unlink(missing_ok=True)
            self.partial.unlink(missing_ok=True)
        elif path.exists():
            # appending, as the course's apps do without payload-trunc: incomplete until closed again
            path.replace(self.partial)
        fresh = not self.partial.exists() or self.partial.stat().st_size == 0
        self._file: io.TextIOWrapper = open(  # noqa: SIM115 - held open for the client's lifetime
            self.partial, "a", encoding="utf-8", newline="", buffering=_BUFFER
        )
        self._writer = csv.writer(self._file, lineterminator="\n")
        self.write = self._file.write  # pre-formatted lines (hot path)
        self.rows = 0
        if fresh:
            self._writer.writerow(columns)
            self.flush()

    def writerow(self, row: Iterable[object]) -> None:
        self._writer.writerow(row)
        self.rows += 1

    def flush(self) -> None:
        self._file.flush()

    def close(self, complete: bool = True) -> Path:
        """Flush and fsync; rename to the final name when ``complete``. Returns the file's path."""
        if self._file.closed:
            return self.path if complete else self.partial
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        if complete:
            self.partial.replace(self.path)
            return self.path
        return self.partial

    def discard(self) -> None:
        """Remove the log altogether (a client that failed before doing anything)."""
        if not self._file.closed:
            self._file.close()
        self.partial.unlink(missing_ok=True)


def max_seq(path: Path) -> int:
    """The highest ``seq`` in an existing producer log (-1 if none), so appended runs keep ids unique."""
    best = -1
    for candidate in (path, path.with_name(path.name + PARTIAL_SUFFIX)):
        if not candidate.exists():
            continue
        with open(candidate, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                try:
                    best = max(best, int(row["seq"]))
                except (KeyError, TypeError, ValueError):
                    continue
    return best


def key_text(key: bytes | None) -> str:
    """A record key as the course logs it: 4 bytes are its IntegerSerializer's int."""
    if key is None:
        return ""
    if len(key) == 4:
        return str(int.from_bytes(key, "big", signed=True))
    return csv_field(key.decode("utf-8", "replace"))


def consumed_row(m: Message, head: str, group_field: str, quoted: dict[bytes, str]) -> str:
    """One consumer-log line (CONSUMER_COLUMNS) for a fetched record. ``head`` is ``",consumer,topic,"``
    and ``quoted`` caches value fields: this runs once per record, so it calls as little as it can."""
    mid = ""
    headers = m.headers()
    if headers:
        name, value = headers[0]
        if name != MSG_ID_HEADER:
            value = next((v for n, v in headers if n == MSG_ID_HEADER), None)
        mid = value.decode() if value else ""
    raw = m.value()
    text = "" if raw is None else quoted.get(raw)
    if text is None:
        text = csv_field(raw.decode("utf-8", "replace"))  # type: ignore[union-attr]
    key = m.key()
    key_field = str(int.from_bytes(key, "big", signed=True)) if key is not None and len(key) == 4 else key_text(key)
    epoch = m.leader_epoch()
    return (f"{mid}{head}{m.partition()},{m.offset()},{key_field},{-1 if epoch is None else epoch},"
            f"{m.timestamp()[1]},{text},{group_field}\n")
