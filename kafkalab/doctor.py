"""`kafkalab doctor`: everything a lab needs on this machine, one line per problem with what to do.

The jars come one of three ways (mvn, kafkalab's own download, an offline bundle); doctor checks the first
two and says which would work. A way that fails is a problem only while the jars are missing and no other
way works.
"""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from kafkalab import KAFKA_VERSION, __version__, kafka_install
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
    kafka_home: str | None = None, brokers: int = 3, version: str = KAFKA_VERSION, repo: str | None = None
) -> list[Check]:
    have = _distribution(kafka_home, version)
    ways = [_maven(), _repository(version, repo or CENTRAL)]
    if have.ok or any(w.ok for w in ways):
        ways = [replace(w, needed=False) for w in ways]
    checks = [_java(), have, *ways]
    ports = [] if has_kraft_only(version) else [("ZooKeeper", DEFAULT_ZK_PORT)]
    ports += [(f"broker {i + 1}", p) for i, p in enumerate(DEFAULT_BROKER_PORTS[:brokers])]
    for who, port in ports:
        port_free = port_is_free(port)
        checks.append(Check(f"port {port}", port_free, f"free for {who}" if port_free else
                            f"taken by {port_holder(port)}: stop it, or start with --free-ports"))
    root = _existing_parent(state_root())
    disk = shutil.disk_usage(root).free
    checks.append(Check("disk", disk >= MIN_DISK_BYTES, f"{disk / 1024**3:.1f} GB free in {root}"
                        + ("" if disk >= MIN_DISK_BYTES else ": free at least 2 GB, or set KAFKALAB_STATE elsewhere")))
    if not have.ok:
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


def _distribution(kafka_home: str | None, version: str) -> Check:
    try:
        found = kafka_install.locate(kafka_home, version=version)
    except KafkalabError as exc:
        return Check("kafka", False, str(exc))
    return Check("kafka", True, f"Kafka {found.version()} in {found.libs} ({found.source})")


def _existing_parent(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path
