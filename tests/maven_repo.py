"""A Maven-layout repository served on 127.0.0.1: the jars of a checksum list, linked from the local Maven
repository (~/.m2) or the mvn-fetched cache, behind an HTTP server that honours Range and can be told to
serve a corrupted copy of a file."""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO

from kafkalab.kafka_install.artifacts import Artifact
from kafkalab.paths import dist_dir

M2 = Path.home() / ".m2" / "repository"


class RepoServer(ThreadingHTTPServer):
    """Records every GET (path, Range header); ``corrupt[path] = n`` flips a byte in the next n responses,
    ``cut[path] = n`` ends the next n responses halfway (the connection drops)."""

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), _handler(root))
        self.root = root
        self.requests: list[tuple[str, str | None]] = []
        self.corrupt: dict[str, int] = {}
        self.cut: dict[str, int] = {}
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def gets(self, artifact: Artifact) -> list[str | None]:
        """The Range header of every GET of the artifact's jar (None: a whole-file GET)."""
        with self.lock:
            return [rng for path, rng in self.requests if path == "/" + artifact.repo_path]


def _handler(root: Path) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        server: RepoServer

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def send_head(self) -> BinaryIO | None:  # type: ignore[override]
            rng = self.headers.get("Range")
            with self.server.lock:
                self.server.requests.append((self.path, rng))
                corrupt, cut = self.server.corrupt.get(self.path, 0), self.server.cut.get(self.path, 0)
                self.server.corrupt[self.path], self.server.cut[self.path] = max(corrupt - 1, 0), max(cut - 1, 0)
            path = Path(self.translate_path(self.path))
            if not path.is_file() or not (rng or corrupt or cut):
                return super().send_head()
            data = path.read_bytes()
            if corrupt:
                data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
            start = int(rng.removeprefix("bytes=").split("-")[0]) if rng else 0
            if start >= len(data):
                self.send_error(416)
                return None
            self.send_response(206 if rng else 200)
            if rng:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Type", "application/java-archive")
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if cut:
                self.close_connection = True
                return io.BytesIO(data[start:start + (len(data) - start) // 2])
            return io.BytesIO(data[start:])

    return Handler


def build_repo(root: Path, artifacts: list[Artifact], version: str) -> None:
    """Link each jar into Maven layout under ``root``, from ~/.m2 or else the mvn-fetched cache."""
    cached = dist_dir(version=version) / "libs"
    for a in artifacts:
        source = next((p for p in (M2 / a.repo_path, cached / a.filename) if p.is_file()), None)
        if source is None:
            raise FileNotFoundError(f"{a.coordinates}: neither in {M2} nor in {cached} (run `kafkalab fetch`)")
        target = root / a.repo_path
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(source, target)


@contextlib.contextmanager
def serve_artifacts(root: Path, artifacts: list[Artifact], version: str) -> Iterator[RepoServer]:
    """The artifacts' repository built under ``root`` and served until the block ends."""
    build_repo(root, artifacts, version)
    with serve_repo(root) as server:
        yield server


@contextlib.contextmanager
def serve_repo(root: Path) -> Iterator[RepoServer]:
    server = RepoServer(root)
    thread = threading.Thread(target=server.serve_forever, name="maven-repo", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
