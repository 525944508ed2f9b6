"""Resolve Kafka's runtime closure with Maven (`mvn dependency:copy-dependencies` on assets/pom.xml)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from kafkalab.errors import KafkalabError
from kafkalab.paths import assets_dir


def copy_dependencies(mvn: str, out_dir: Path, version: str, progress: Callable[[str], None]) -> None:
    """Every jar of Kafka ``version``'s runtime closure into ``out_dir``, through the local Maven repository."""
    pom = assets_dir() / "pom.xml"
    cmd = [
        mvn, "-B", "-f", str(pom), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={out_dir}", f"-Dkafka.version={version}",
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
        raise KafkalabError(f"mvn could not resolve Kafka {version}: {errors[0] if errors else 'see mvn output'}")
