"""Log files given as URIs (hdfs://, s3a://, file://, ...), seen through the session's Hadoop FileSystem.

The driver lists and opens them with the same FileSystem classes and Hadoop configuration (credentials,
``--spark-conf spark.hadoop.*``) the executors use to read them, through the py4j gateway: a check
passes exactly when Spark can read the file. Reads stream through the driver in blocks.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalab.errors import KafkalabError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")
GLOB_CHARS = "*?[{"
BLOCK_BYTES = 1 << 20


def is_uri(location: str) -> bool:
    """``scheme:/...`` (file:///x, hdfs://nn/x, s3a://bucket/x); anything else is a local path."""
    return bool(_URI.match(location))


@dataclass(frozen=True, order=True)
class RemoteFile:
    uri: str  # fully qualified, as the FileSystem names it
    size_bytes: int


class HadoopFiles:
    """Glob, size and open files on the FileSystem a URI's scheme selects, as the session configures it."""

    def __init__(self, session: SparkSession) -> None:
        self._jvm: Any = session._jvm
        self._conf = session._jsc.hadoopConfiguration()

    def _path_and_fs(self, uri: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        return path, path.getFileSystem(self._conf)

    def glob(self, uri: str) -> tuple[list[RemoteFile], list[str]]:
        """The files a URI (or glob) names, sorted, and the directories it names (not read)."""
        path, fs = self._path_and_fs(uri)
        statuses = fs.globStatus(path) or []  # null when a plain path does not exist
        files = sorted(RemoteFile(s.getPath().toString(), s.getLen()) for s in statuses if s.isFile())
        dirs = sorted(s.getPath().toString() for s in statuses if s.isDirectory())
        return files, dirs

    def open_text(self, uri: str) -> io.TextIOWrapper:
        """The file as text (UTF-8, bad bytes replaced, newlines untranslated), read in 1 MiB blocks."""
        path, fs = self._path_and_fs(uri)
        raw = _JavaStream(fs.open(path))
        return io.TextIOWrapper(io.BufferedReader(raw, BLOCK_BYTES), encoding="utf-8", errors="replace", newline="")


    def read_bytes(self, uri: str, start: int) -> bytes:
        """The file's bytes from ``start`` to its end (its tail: the caller keeps ``start`` near the end)."""
        path, fs = self._path_and_fs(uri)
        stream = fs.open(path)
        try:
            stream.seek(start)
            return bytes(stream.readAllBytes())
        finally:
            stream.close()


class _JavaStream(io.RawIOBase):
    """A Java InputStream as a Python raw stream: each read is one ``readNBytes`` over the gateway."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = bytes(self._stream.readNBytes(len(buffer)))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
        super().close()


def fs_error(kind: str, uri: str, exc: Exception) -> KafkalabError:
    """A FileSystem failure (no connector for the scheme, unreachable namenode, denied) in one line."""
    java = getattr(exc, "java_exception", None)
    text = (java.toString() if java is not None else str(exc)).splitlines()[0]
    hint = ("add the connector's jars (e.g. --spark-conf spark.jars.packages=org.apache.hadoop:hadoop-aws:VERSION)"
            if "No FileSystem for scheme" in text else
            "check the URI, that its storage is reachable, and its credentials (--spark-conf spark.hadoop.*)")
    return KafkalabError(f"cannot read {kind} log {uri}: {text}; {hint}")
