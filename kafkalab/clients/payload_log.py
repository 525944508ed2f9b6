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
from typing import TYPE_CHECKING

from kafkalab.clients.corpus import corpus_lines
from kafkalab.logformat import MSG_ID_HEADER

if TYPE_CHECKING:  # the console imports this module; only the clients' child processes load librdkafka
    from confluent_kafka import Message

PARTIAL_SUFFIX = ".partial"
TOMBSTONE = ""  # a tombstone's (a null value's) value column: empty, as no corpus line is
_BUFFER = 1 << 20
# a record's headers as confluent_kafka types them for produce(): (name, value) pairs
Headers = list[tuple[str, str | bytes | None]]


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


class ConsumedRows:
    """Consumer-log lines (CONSUMER_COLUMNS) of fetched records, for one consumer (or the audit).

    This runs once per record, so it calls as little as it can: corpus values are quoted once, an int key
    is converted inline, and one pass yields both the lines and the offsets. Keys are not cached: with
    fresh key objects hashing and a large cache cost more than the conversion (1.1 against 1.7 us a
    record, unique keys).
    """

    def __init__(self, consumer: str, topic: str, group: str) -> None:
        self._head = f",{csv_field(consumer)},{topic},"
        self._group = csv_field(group)
        # looked up with a record's value, which may be None (a key never is)
        self._quoted: dict[bytes | None, str] = {line.encode("utf-8"): csv_field(line) for line in corpus_lines()}

    def format(self, batch: Iterable[Message],
               stop_at: frozenset[bytes] = frozenset()) -> tuple[str, dict[int, int]] | None:
        """The lines of ``batch`` and, per partition, the offset after its last record; None as soon as a
        record's value is in ``stop_at`` (control words: the caller then goes record by record)."""
        lines: list[str] = []
        append = lines.append
        ends: dict[int, int] = {}
        head, group, quoted = self._head, self._group, self._quoted
        from_bytes = int.from_bytes
        for m in batch:
            raw = m.value()
            text = quoted.get(raw)
            if text is None:
                if raw in stop_at:
                    return None
                text = TOMBSTONE if raw is None else csv_field(raw.decode("utf-8", "replace"))
            key = m.key()
            key_field = str(from_bytes(key, "big", signed=True)) if key and len(key) == 4 else key_text(key)
            headers = m.headers()
            pairs = headers if isinstance(headers, list) else ()  # a fetched record's are a list, never a dict
            first = pairs[0] if pairs else None  # kafkalab's producers put the id first
            raw_id = first[1] if first and first[0] == MSG_ID_HEADER and first[1] else _msg_id(pairs)
            msg_id = raw_id.decode() if isinstance(raw_id, bytes) else ""
            partition, offset, epoch = m.partition(), m.offset(), m.leader_epoch()
            assert partition is not None and offset is not None  # a fetched record has both
            ends[partition] = offset + 1
            append(f"{msg_id}{head}{partition},{offset},{key_field},{-1 if epoch is None else epoch},"
                   f"{m.timestamp()[1]},{text},{group}\n")
        return "".join(lines), ends

    def line(self, m: Message) -> str:
        """The line of one record."""
        formatted = self.format((m,))
        assert formatted is not None  # nothing stops a batch without stop words
        return formatted[0]


def _msg_id(headers: Sequence[tuple[str, str | bytes | None]]) -> str | bytes | None:
    """The message id's header value among a record's headers (None when it has none)."""
    return next((v for n, v in headers if n == MSG_ID_HEADER), None)
