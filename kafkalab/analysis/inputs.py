"""Checks on the log files before Spark reads them, and line numbers of malformed lines after.

A log is a local path, or a URI (``hdfs://``, ``s3a://``, ``file://``; globs allowed) checked and read
through the session's Hadoop FileSystem (see hadoop_fs.py). Spark counts malformed lines in its one
pass; only when it found some does :func:`locate_malformed` re-read the files of that kind (line by
line, as Spark does; a URI's through the driver) to name file and line number.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO
from urllib.parse import urlparse

from kafkalab.analysis.hadoop_fs import GLOB_CHARS, HadoopFiles, fs_error, is_uri
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
_HEADER_READ = 4096  # a first line longer than this is no header: a file without line breaks is not read whole
_NOT_TEXT = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\ufffd]")  # NUL, control bytes, bytes that are not UTF-8
_INTEGER = re.compile(r"-?[0-9]+\Z")
_PRODUCER_MSG_ID = re.compile(MSG_ID_PATTERN)


@dataclass
class InputFile:
    path: Path | str  # a local path, or the qualified URI of a file on a Hadoop FileSystem
    kind: str
    size_bytes: int
    malformed: int = 0
    malformed_lines: list[int] = field(default_factory=list)
    remote: HadoopFiles | None = field(default=None, repr=False, compare=False)  # set for a URI

    def open(self) -> TextIO:
        """The file as text, newlines untranslated (the reader splits lines as Spark does)."""
        if self.remote is not None:
            return self.remote.open_text(str(self.path))
        return Path(self.path).open(encoding="utf-8", errors="replace", newline="")

    def identity(self) -> str:
        """One name per file, however it was given (a relative path, a file:// URI)."""
        if self.remote is None:
            return str(Path(self.path).resolve())
        uri = urlparse(str(self.path))
        return str(Path(uri.path).resolve()) if uri.scheme == "file" else str(self.path)

    def to_json(self) -> dict:
        return {"path": str(self.path), "kind": self.kind, "size_bytes": self.size_bytes,
                "malformed": self.malformed, "malformed_lines": self.malformed_lines}

    @classmethod
    def from_json(cls, d: dict) -> InputFile:
        """A file as ``to_json`` wrote it: its path as written (a report read back opens no file)."""
        return cls(d["path"], d["kind"], d["size_bytes"], d["malformed"], list(d["malformed_lines"]))


def check_inputs(given: Mapping[str, Sequence[Path | str]],
                 remote: Callable[[], HadoopFiles]) -> dict[str, list[InputFile]]:
    """Each kind's logs checked (see :func:`check_file`), in the order given, a glob by its matches.

    Local paths are checked first, so bad local input fails before ``remote`` (which needs the Spark
    session) is called for the URIs.
    """
    checked: dict[tuple[str, int], list[InputFile]] = {}
    for local in (True, False):
        for kind, paths in given.items():
            for index, raw in enumerate(paths):
                if is_uri(str(raw)) != local:
                    checked[kind, index] = (check_uri(kind, str(raw), remote()) if not local
                                            else [check_file(InputFile(Path(raw), kind, 0))])
    return {kind: [f for index in range(len(paths)) for f in checked[kind, index]] for kind, paths in given.items()}


def check_uri(kind: str, uri: str, remote: HadoopFiles) -> list[InputFile]:
    """The files a URI or glob names on its FileSystem, each checked; none or only directories is an error."""
    try:
        found, dirs = remote.glob(uri)
        files = [check_file(InputFile(f.uri, kind, f.size_bytes, remote=remote)) for f in found]
    except KafkalabError:
        raise
    except Exception as exc:  # py4j's Py4JJavaError: whatever the FileSystem raised
        raise fs_error(kind, uri, exc) from exc
    if files:
        return files
    if dirs:
        raise KafkalabError(f"{kind} log {uri} is a directory; give its files, e.g. '{uri.rstrip('/')}/*.csv'")
    if any(c in uri for c in GLOB_CHARS):
        raise KafkalabError(f"{kind} log glob {uri} matches no file; check the pattern and the directory")
    raise KafkalabError(f"{kind} log {uri} does not exist; give the URI of a {kind} log CSV")


def check_file(f: InputFile) -> InputFile:
    """An existing, non-empty file whose first line is the contract's header (sized here if local)."""
    kind = f.kind
    header = ",".join(KINDS[kind])
    if f.remote is None:
        path = Path(f.path)
        if not path.is_file():
            raise KafkalabError(f"{kind} log {path} does not exist; give the path of a {kind} log CSV")
        f.size_bytes = path.stat().st_size
    if f.size_bytes == 0:
        raise KafkalabError(f"{kind} log {f.path} is empty; it needs at least the header line: {header}")
    with f.open() as fh:
        first = fh.readline(_HEADER_READ).rstrip("\r\n").lstrip("\ufeff")
    if _NOT_TEXT.search(first):  # never echo a binary file's bytes to the terminal
        raise KafkalabError(f"{kind} log {f.path} is not a payload log: it is not text (a binary file?); give the "
                            f"{kind} log CSV of a run, whose first line is {header}")
    if first != header:
        raise KafkalabError(f"{kind} log {f.path} does not start with the {kind} header {header!r} "
                            f"(found {first[:120]!r}); is it the right kind of log?")
    return f


def reject_repeats(files: Sequence[InputFile]) -> None:
    seen: dict[str, str] = {}
    for f in files:
        real = f.identity()
        if real in seen:
            raise KafkalabError(f"{f.path} is given twice (as {seen[real]} and {f.kind} log); give each log once")
        seen[real] = f"{f.kind} log"


def detect_run(producer_files: Sequence[InputFile]) -> str | None:
    """The run of the producer logs, from each file's first message id; refuses logs of two runs, and logs that
    hold no record at all (only their headers).

    The job also counts every producer row of another run, so a file mixing runs is refused too.
    """
    runs: dict[str, Path | str] = {}
    rows = False
    for f in producer_files:
        with f.open() as fh:
            reader = csv.reader(fh)
            next(reader, None)
            for row in reader:
                if not row:  # a blank line is no record
                    continue
                rows = True
                try:
                    run = parse_msg_id(row[0]).run
                except (ValueError, IndexError):
                    continue
                runs.setdefault(run, f.path)
                break
    if not rows:  # nothing sent: every record consumed would read as "unexpected", blamed on the topic
        logs = f"log {producer_files[0].path} holds" if len(producer_files) == 1 else \
            f"logs {', '.join(str(f.path) for f in producer_files)} hold"
        raise KafkalabError(f"producer {logs} no record, only the header: nothing was sent, so there is nothing "
                            "to compare; give the producer log of a run that sent records")
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
        with f.open() as fh:
            for number, line in enumerate(fh, start=1):
                if number == 1:
                    continue
                text = line.rstrip("\r\n")
                if text and is_malformed(f.kind, text):
                    f.malformed += 1
                    if len(f.malformed_lines) < MAX_LINES_NAMED:
                        f.malformed_lines.append(number)
