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
    LogFormat,
    parse_course_line,
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
    format: LogFormat = LogFormat.KAFKALAB
    # a course log's last line when no line break ends it (a crashed client's half-written line): malformed
    tail: bytes | None = field(default=None, repr=False, compare=False)

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
        # the format only when not kafkalab's, so a report reads back as it was written before formats
        fmt = {} if self.format is LogFormat.KAFKALAB else {"format": str(self.format)}
        return {"path": str(self.path), "kind": self.kind, **fmt, "size_bytes": self.size_bytes,
                "malformed": self.malformed, "malformed_lines": self.malformed_lines}

    @classmethod
    def from_json(cls, d: dict) -> InputFile:
        """A file as ``to_json`` wrote it: its path as written (a report read back opens no file)."""
        return cls(d["path"], d["kind"], d["size_bytes"], d["malformed"], list(d["malformed_lines"]),
                   format=LogFormat(d.get("format", LogFormat.KAFKALAB)))


def check_inputs(given: Mapping[str, Sequence[Path | str]], remote: Callable[[], HadoopFiles],
                 forced: LogFormat | None = None) -> dict[str, list[InputFile]]:
    """Each kind's logs checked (see :func:`check_file`), in the order given, a glob by its matches.

    Local paths are checked first, so bad local input fails before ``remote`` (which needs the Spark
    session) is called for the URIs. ``forced``: the producer and consumer logs' format, else detected.
    """
    checked: dict[tuple[str, int], list[InputFile]] = {}
    for local in (True, False):
        for kind, paths in given.items():
            for index, raw in enumerate(paths):
                if is_uri(str(raw)) != local:
                    checked[kind, index] = (check_uri(kind, str(raw), remote(), forced) if not local
                                            else [check_file(InputFile(Path(raw), kind, 0), forced)])
    return {kind: [f for index in range(len(paths)) for f in checked[kind, index]] for kind, paths in given.items()}


def check_uri(kind: str, uri: str, remote: HadoopFiles, forced: LogFormat | None = None) -> list[InputFile]:
    """The files a URI or glob names on its FileSystem, each checked; none or only directories is an error."""
    try:
        found, dirs = remote.glob(uri)
        files = [check_file(InputFile(f.uri, kind, f.size_bytes, remote=remote), forced) for f in found]
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


def check_file(f: InputFile, forced: LogFormat | None = None) -> InputFile:
    """An existing, non-empty payload log (sized here if local), its format set: kafkalab's when its first
    line is the contract's header, the course's when it is a course record (see logformat.py), unless
    ``forced`` (producer and consumer logs only: an audit is always kafkalab's)."""
    kind = f.kind
    header = ",".join(KINDS[kind])
    if f.remote is None:
        path = Path(f.path)
        if not path.is_file():
            raise KafkalabError(f"{kind} log {path} does not exist; give the path of a {kind} log "
                                "(kafkalab's CSV, or the course's payload.log)")
        f.size_bytes = path.stat().st_size
    if f.size_bytes == 0:
        raise KafkalabError(f"{kind} log {f.path} is empty: it holds no record (a kafkalab log has at least its "
                            f"header line {header}); give the {kind} log of a run that ran")
    with f.open() as fh:
        first = fh.readline(_HEADER_READ).rstrip("\r\n").lstrip("\ufeff")
    if _NOT_TEXT.search(first):  # never echo a binary file's bytes to the terminal
        raise KafkalabError(f"{kind} log {f.path} is not a payload log: it is not text (a binary file?); give the "
                            f"{kind} log of a run: kafkalab's CSV, whose first line is {header}, or the course's "
                            "payload.log")
    fmt = LogFormat.KAFKALAB if kind == "audit" else forced or detect_format(first, header)
    if fmt is None:
        raise KafkalabError(f"{kind} log {f.path} does not start with the {kind} header {header!r}, nor with a "
                            f"course record topic,partition,key,value (found {first[:120]!r}); is it the right "
                            "kind of log? (--format kafkalab|course reads it as that format)")
    if fmt is LogFormat.KAFKALAB and first != header:
        raise KafkalabError(f"{kind} log {f.path} does not start with the {kind} header {header!r} "
                            f"(found {first[:120]!r}); is it the right kind of log?")
    f.format = fmt
    if fmt is LogFormat.COURSE:
        f.tail = unterminated_tail(f)
    return f


def detect_format(first: str, header: str) -> LogFormat | None:
    """A log's format from its first line: kafkalab's header, else a course record; None for neither."""
    if first == header:
        return LogFormat.KAFKALAB
    return LogFormat.COURSE if parse_course_line(first) is not None else None


_TAIL_READ = 1 << 20


def unterminated_tail(f: InputFile) -> bytes | None:
    """The bytes of the file's last line when no line break ends it, else None. A course client writes its
    line and the line break in two calls, so a crash between them leaves a line that may look whole but is
    not known to be: the analysis takes it as malformed (its value may be cut short)."""
    start = max(f.size_bytes - _TAIL_READ, 0)
    if f.remote is not None:
        chunk = f.remote.read_bytes(str(f.path), start)
    else:
        with Path(f.path).open("rb") as fh:
            fh.seek(start)
            chunk = fh.read()
    if not chunk or chunk.endswith((b"\n", b"\r")):
        return None
    cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
    if cut < 0 and start > 0:
        raise KafkalabError(f"{f.kind} log {f.path} ends in a line longer than {_TAIL_READ >> 20} MiB; a course log's "
                            "lines are one record each: is it a payload log?")
    return chunk[cut + 1:]


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
    rows = any(f.format is LogFormat.COURSE for f in producer_files)  # not empty, so it holds a line
    for f in producer_files:
        if f.format is not LogFormat.KAFKALAB:
            continue  # a course log names no run
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


def is_malformed(kind: str, line: str, fmt: LogFormat = LogFormat.KAFKALAB) -> bool:
    """The job's rule for a bad line, for one physical line (Spark reads line by line too)."""
    if fmt is LogFormat.COURSE:
        return parse_course_line(line) is None
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
    """Fill each file's malformed count and first line numbers (1-based; a kafkalab log's header is line 1).
    A course log's last line without a line break (see :func:`unterminated_tail`) counts as malformed."""
    for f in files:
        header = f.format is LogFormat.KAFKALAB
        with f.open() as fh:
            for number, line in enumerate(fh, start=1):
                if number == 1 and header:
                    continue
                text = line.rstrip("\r\n")
                cut = f.tail is not None and text == line  # only the last line can lack its line break
                if text and (cut or is_malformed(f.kind, text, f.format)):
                    f.malformed += 1
                    if len(f.malformed_lines) < MAX_LINES_NAMED:
                        f.malformed_lines.append(number)
