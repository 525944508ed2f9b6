"""`kafkalab doctor`: everything a lab needs on this machine, one line per problem with what to do.

Every Kafka kafkalab runs is reported, fetched or not with the command that fetches it. The first (the
course's Kafka) is needed; the others are optional: missing, they are shown, not counted as a problem, with
the labs that run on nothing else. The jars come one of three ways (mvn, kafkalab's own download, an
offline bundle); doctor checks the first two and says which would work. A way that fails is a problem only
while a needed Kafka is missing and no other way works.
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from kafkalab import KAFKA_VERSION, KAFKA_VERSIONS, __version__, kafka_install
from kafkalab.cluster.ports import port_holder, port_is_free
from kafkalab.cluster.spec import DEFAULT_BROKER_PORTS, DEFAULT_ZK_PORT
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.artifacts import load_artifacts
from kafkalab.kafka_install.distribution import has_kraft_only
from kafkalab.kafka_install.download import CENTRAL
from kafkalab.paths import cache_root, state_root

MIN_JAVA = 17
MIN_DISK_BYTES = 2 * 1024**3
MIN_MEMORY_BYTES = 2 * 1024**3
MIN_CACHE_BYTES = 100 * 1024**2


NETWORK_TIMEOUT_S = 10


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    needed: bool = True  # False: a failure here does not matter (shown, not counted)


def run_checks(
    kafka_home: str | None = None, brokers: int = 3, versions: Sequence[str] = KAFKA_VERSIONS,
    repo: str | None = None, only_on: Mapping[str, Sequence[str]] | None = None,
) -> list[Check]:
    """The checks, in the order shown. ``versions``: the Kafkas to report, the first needed, the others
    optional; ``only_on``: by version, the labs that run on no needed one (named when it is missing)."""
    releases = [_release(kafka_home, v, needed=i == 0, only_labs=(only_on or {}).get(v, ()))
                for i, v in enumerate(versions)]
    missing = [v for v, r in zip(versions, releases, strict=True) if not r.ok]
    ways = [_maven(), _repository(missing[0] if missing else versions[0], repo or CENTRAL)]
    if all(r.ok for r in releases if r.needed) or any(w.ok for w in ways):
        ways = [replace(w, needed=False) for w in ways]
    checks = [_java(), *releases, *ways]
    ports = [] if has_kraft_only(versions[0]) else [("ZooKeeper", DEFAULT_ZK_PORT)]
    ports += [(f"broker {i + 1}", p) for i, p in enumerate(DEFAULT_BROKER_PORTS[:brokers])]
    for who, port in ports:
        port_free = port_is_free(port)
        checks.append(Check(f"port {port}", port_free, f"free for {who}" if port_free else
                            f"taken by {port_holder(port)}: stop it, or start with --free-ports"))
    root = _existing_parent(state_root())
    disk = shutil.disk_usage(root).free
    checks.append(Check("disk", disk >= MIN_DISK_BYTES, f"{disk / 1024**3:.1f} GB free in {root}"
                        + ("" if disk >= MIN_DISK_BYTES else ": free at least 2 GB, or set KAFKALAB_STATE elsewhere")))
    if missing:
        cache = _existing_parent(cache_root())
        free = shutil.disk_usage(cache).free
        checks.append(Check("cache disk", free >= MIN_CACHE_BYTES, f"{free / 1024**3:.1f} GB free in {cache}" + (
            "" if free >= MIN_CACHE_BYTES else ": the jars need 100 MB: free space, or set KAFKALAB_CACHE elsewhere")))
    mem = psutil.virtual_memory().available
    checks.append(Check("memory", mem >= MIN_MEMORY_BYTES, f"{mem / 1024**3:.1f} GB available"
                        + ("" if mem >= MIN_MEMORY_BYTES else ": close programs; a 3-broker lab needs about 2 GB")))
    return checks


def _java() -> Check:
    try:
        java = kafka_install.java_binary()
    except KafkalabError as exc:
        return Check("java", False, str(exc))
    major = kafka_install.java_major_version(java)
    if major < MIN_JAVA:
        return Check("java", False, f"{java} is Java {major}: install JDK {MIN_JAVA}+ and put it first on PATH")
    return Check("java", True, f"{java} (Java {major})")


def _maven() -> Check:
    mvn = shutil.which("mvn")
    if mvn:
        return Check("fetch with mvn", True, f"{mvn} resolves the jars")
    return Check("fetch with mvn", False, "mvn not found: install Maven (apt-get install maven), or fetch without it")


def _repository(version: str, repo: str) -> Check:
    """Whether kafkalab's own download would work: a checksum list for the version and a reachable repository."""
    name = "fetch without mvn"
    try:
        first = load_artifacts(version)[0]
    except KafkalabError as exc:
        return Check(name, False, str(exc))
    url = repo.rstrip("/") + "/" + first.repo_path
    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": f"kafkalab/{__version__}"})
    try:
        with urllib.request.urlopen(request, timeout=NETWORK_TIMEOUT_S):
            pass
    except urllib.error.HTTPError as exc:
        return Check(name, False, f"{repo} answers HTTP {exc.code} for {first.coordinates}: name another --maven-repo")
    except (OSError, urllib.error.URLError) as exc:
        reason = getattr(exc, "reason", exc)
        return Check(name, False, f"cannot reach {repo} ({reason}): check the network or HTTPS_PROXY, name a mirror "
                                  "with --maven-repo, or install an offline bundle (kafkalab fetch --from FILE)")
    return Check(name, True, f"{repo} serves Kafka {version}'s jars")


def fetch_command(version: str) -> str:
    return "kafkalab fetch" + ("" if version == KAFKA_VERSION else f" --kafka-version {version}")


def _release(kafka_home: str | None, version: str, needed: bool, only_labs: Sequence[str]) -> Check:
    """Kafka ``version``: fetched (or the --kafka-home/KAFKA_HOME install), or the command that fetches it.

    A Kafka install named by --kafka-home/KAFKA_HOME stands in for the needed Kafka, as `cluster up` takes it
    whatever its version; a lab refuses it when it runs on another version, so an optional one it is not.
    """
    name = f"kafka {version}"
    why = "" if needed else _optional_because(version, only_labs)
    home = kafka_home or os.environ.get("KAFKA_HOME")
    try:
        found = kafka_install.locate(kafka_home, version=version)
    except KafkalabError as exc:
        detail = f"not fetched: run `{fetch_command(version)}`" if not home else str(exc)
        return Check(name, False, detail + why, needed)
    if home and not needed and found.version() != version:
        return Check(name, False, f"the Kafka in {home} is {found.version()}: for the labs on {version}, unset "
                                  f"KAFKA_HOME and run `{fetch_command(version)}`{why}", needed)
    return Check(name, True, f"Kafka {found.version()} in {found.libs} ({found.source})", needed)


def _optional_because(version: str, only_labs: Sequence[str]) -> str:
    major = f"{version.split('.')[0]}.x"
    if only_labs:
        return (f" (optional: needed only by the labs that run only on Kafka {major}: {', '.join(only_labs)}; "
                f"the others run on it with --kafka-version {version})")
    return f" (optional: a lab that runs on it takes --kafka-version {version})"


def _existing_parent(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path
