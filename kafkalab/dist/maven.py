"""Fetch Kafka's runtime closure with Maven into the versioned cache dir."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from kafkalab import KAFKA_VERSION
from kafkalab.dist.distribution import MARKER, Distribution, locate, verify
from kafkalab.errors import KafkalabError
from kafkalab.paths import assets_dir, dist_dir


def fetch(
    cache: Path | None = None,
    force: bool = False,
    progress: Callable[[str], None] = lambda _line: None,
) -> Distribution:
    """Resolve Kafka's runtime closure with mvn into the versioned cache dir. Idempotent."""
    target = dist_dir(cache)
    if not force:
        try:
            dist = locate(cache=cache, kafka_home="") if (target / MARKER).exists() else None
        except KafkalabError:
            dist = None
        if dist is not None:
            progress(f"Kafka {KAFKA_VERSION} already in {target}")
            return dist
    mvn = shutil.which("mvn")
    if not mvn:
        raise KafkalabError("mvn not found on PATH: install Maven (e.g. apt-get install maven) or use --kafka-home")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".kafka-{KAFKA_VERSION}-", dir=target.parent))
    try:
        _run_maven(mvn, staging / "libs", progress)
        (staging / MARKER).write_text(KAFKA_VERSION + "\n")
        dist = Distribution(staging / "libs", "maven")
        verify(dist)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    progress(f"Kafka {KAFKA_VERSION} ready in {target}")
    return Distribution(target / "libs", "maven")


def _run_maven(mvn: str, out_dir: Path, progress: Callable[[str], None]) -> None:
    pom = assets_dir() / "pom.xml"
    cmd = [
        mvn, "-B", "-f", str(pom), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={out_dir}", f"-Dkafka.version={KAFKA_VERSION}",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    tail: list[str] = []
    downloaded = 0
    for line in proc.stdout:
        line = line.rstrip()
        tail = [*tail[-20:], line]
        if line.startswith("Downloaded from"):
            downloaded += 1
            progress(f"downloaded {downloaded} artifacts: {line.rsplit('/', 1)[-1]}")
        elif "Copying" in line:
            progress(line.split("]", 1)[-1].strip())
    if proc.wait() != 0:
        errors = [t for t in tail if "ERROR" in t] or tail[-3:]
        raise KafkalabError(f"mvn could not resolve Kafka {KAFKA_VERSION}: {errors[0] if errors else 'see mvn output'}")
