"""`kafkalab fetch`: Kafka's jars into the versioned cache dir, by Maven or by kafkalab's own downloader.

With mvn on PATH, mvn resolves the closure (as before); without it, or with ``--no-maven`` / ``--maven-repo``,
kafkalab downloads the jars of its checksum list over HTTPS and verifies each. Either way the jars land in a
staging dir, the broker class must load from them, and only then does the dir become ``kafka-VERSION/`` with
its marker, so a half-done fetch never looks complete.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kafkalab import KAFKA_VERSION
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.artifacts import load_artifacts
from kafkalab.kafka_install.config_defs import cache_config_defs
from kafkalab.kafka_install.distribution import MARKER, Distribution, locate, verify
from kafkalab.kafka_install.download import CENTRAL, QUIET, Progress, download_all
from kafkalab.kafka_install.java_helpers import compile_clients, compile_helpers
from kafkalab.kafka_install.maven import copy_dependencies
from kafkalab.paths import dist_dir


@dataclass(frozen=True)
class FetchOptions:
    """What `kafkalab fetch` was asked for."""

    version: str = KAFKA_VERSION
    cache: Path | None = None
    force: bool = False
    maven: bool = True  # False: --no-maven
    repo: str | None = None  # --maven-repo: download from this repository (implies no mvn)
    checksums: Path | None = None  # --checksums: a list other than the shipped one


DEFAULTS = FetchOptions()


def fetch(options: FetchOptions = DEFAULTS, progress: Progress = QUIET) -> Distribution:
    """Kafka ``options.version`` in its cache dir, fetched unless already complete. Idempotent."""
    version, target = options.version, dist_dir(options.cache, options.version)
    if not options.force and (found := cached(options.cache, version)) is not None:
        progress.line(f"Kafka {version} already in {target}")
        prepare(found, progress)
        return found
    mvn = shutil.which("mvn") if options.maven and options.repo is None else None
    target.parent.mkdir(parents=True, exist_ok=True)
    if mvn:
        staging = Path(tempfile.mkdtemp(prefix=f".kafka-{version}-", dir=target.parent))
        try:
            copy_dependencies(mvn, staging / "libs", version, progress.line)
            install(staging, target, version)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    else:
        artifacts = load_artifacts(version, options.checksums)
        repo = options.repo or CENTRAL
        why = "" if options.repo or not options.maven else "mvn not found: "
        progress.line(f"{why}downloading {len(artifacts)} jars of Kafka {version} from {repo}")
        partial = partial_dir(target)  # kept on failure: the next fetch resumes its .part files
        download_all(artifacts, repo, partial / "libs", progress)
        for stray in set((partial / "libs").iterdir()) - {partial / "libs" / a.filename for a in artifacts}:
            stray.unlink()
        install(partial, target, version)
    progress.line(f"Kafka {version} ready in {target}")
    dist = Distribution(target / "libs", "maven")
    prepare(dist, progress)
    return dist


def prepare(dist: Distribution, progress: Progress) -> None:
    """What a start or a check would otherwise wait for: the Java helpers compiled, the settings' definitions;
    and kafkalab's Java clients built (a lab's foreign client runs them)."""
    compile_helpers(dist, progress.line)
    compile_clients(dist, progress.line)
    cache_config_defs(dist, progress.line)


def cached(cache: Path | None, version: str) -> Distribution | None:
    """The complete cached distribution of ``version``, or None."""
    try:
        return locate(kafka_home="", cache=cache, version=version)
    except KafkalabError:
        return None


def partial_dir(target: Path) -> Path:
    return target.with_name(f".{target.name}.partial")


def install(staging: Path, target: Path, version: str) -> None:
    """Check the staged jars load, mark them complete and move them into place (replacing an older copy)."""
    verify(Distribution(staging / "libs", "maven"))
    (staging / MARKER).write_text(version + "\n")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
