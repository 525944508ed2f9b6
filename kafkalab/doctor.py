"""`kafkalab doctor`: everything a lab needs on this machine, one line per problem with what to do."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import psutil

from kafkalab import dist
from kafkalab.cluster.ports import port_holder, port_is_free
from kafkalab.cluster.spec import DEFAULT_BROKER_PORTS, DEFAULT_ZK_PORT
from kafkalab.errors import KafkalabError
from kafkalab.paths import state_root

MIN_JAVA = 17
MIN_DISK_BYTES = 2 * 1024**3
MIN_MEMORY_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def run_checks(kafka_home: str | None = None, brokers: int = 3) -> list[Check]:
    checks = [_java(), _maven(), _distribution(kafka_home)]
    ports = [("ZooKeeper", DEFAULT_ZK_PORT)]
    ports += [(f"broker {i + 1}", p) for i, p in enumerate(DEFAULT_BROKER_PORTS[:brokers])]
    for who, port in ports:
        free = port_is_free(port)
        checks.append(Check(f"port {port}", free, f"free for {who}" if free else
                            f"taken by {port_holder(port)}: stop it, or start with --free-ports"))
    root = _existing_parent(state_root())
    disk = shutil.disk_usage(root).free
    checks.append(Check("disk", disk >= MIN_DISK_BYTES, f"{disk / 1024**3:.1f} GB free in {root}"
                        + ("" if disk >= MIN_DISK_BYTES else ": free at least 2 GB, or set KAFKALAB_STATE elsewhere")))
    mem = psutil.virtual_memory().available
    checks.append(Check("memory", mem >= MIN_MEMORY_BYTES, f"{mem / 1024**3:.1f} GB available"
                        + ("" if mem >= MIN_MEMORY_BYTES else ": close programs; a 3-broker lab needs about 2 GB")))
    return checks


def _java() -> Check:
    try:
        java = dist.java_binary()
    except KafkalabError as exc:
        return Check("java", False, str(exc))
    major = dist.java_major_version(java)
    if major < MIN_JAVA:
        return Check("java", False, f"{java} is Java {major}: install JDK {MIN_JAVA}+ and put it first on PATH")
    return Check("java", True, f"{java} (Java {major})")


def _maven() -> Check:
    mvn = shutil.which("mvn")
    return Check("mvn", bool(mvn), mvn or "mvn not found: install Maven (apt-get install maven), or use --kafka-home")


def _distribution(kafka_home: str | None) -> Check:
    try:
        found = dist.locate(kafka_home)
    except KafkalabError as exc:
        return Check("kafka", False, str(exc))
    return Check("kafka", True, f"Kafka {found.version()} in {found.libs} ({found.source})")


def _existing_parent(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path
