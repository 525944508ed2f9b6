"""Kafka versions side by side: each in its own cache dir, 3.9.2 unless asked, 4.x KRaft only."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab import KAFKA_VERSION, kafka_install
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.artifacts import load_artifacts, matches, shipped_versions, version_key
from kafkalab.kafka_install.distribution import MARKER
from tests.maven_repo import build_repo, serve_repo

KAFKA_4 = max((v for v in shipped_versions() if v.startswith("4.")), key=version_key)


def fake_dist(cache: Path, version: str, zookeeper: bool = True) -> None:
    """A complete-looking cache dir of empty jars with the names a real one has."""
    libs = cache / f"kafka-{version}" / "libs"
    libs.mkdir(parents=True)
    names = [f"kafka_2.13-{version}", f"kafka-clients-{version}", "scala-library-2.13.15", "slf4j-api-1.7.36"]
    for name in [*names, *(["zookeeper-3.8.4"] if zookeeper else [])]:
        (libs / f"{name}.jar").touch()
    (libs.parent / MARKER).write_text(version + "\n")


def test_zookeeper_mode_exists_before_kafka_4_only(tmp_path: Path) -> None:
    fake_dist(tmp_path, KAFKA_VERSION)
    fake_dist(tmp_path, KAFKA_4, zookeeper=False)
    old = kafka_install.locate(kafka_home="", cache=tmp_path)
    new = kafka_install.locate(kafka_home="", cache=tmp_path, version=KAFKA_4)
    assert (old.version(), old.zookeeper_available) == (KAFKA_VERSION, True)
    assert (new.version(), new.zookeeper_available) == (KAFKA_4, False)
    assert not new.missing_jars(), "4.x needs no ZooKeeper jar"
    (old.libs / "zookeeper-3.8.4.jar").unlink()
    assert old.missing_jars() == ["zookeeper-"]


def test_locate_takes_the_default_version_unless_asked(tmp_path: Path) -> None:
    fake_dist(tmp_path, KAFKA_4, zookeeper=False)
    with pytest.raises(KafkalabError, match=re.escape(f"Kafka {KAFKA_VERSION} jars not found")):
        kafka_install.locate(kafka_home="", cache=tmp_path)
    with pytest.raises(KafkalabError, match=re.escape("run `kafkalab fetch --kafka-version 4.0.0` first")):
        kafka_install.locate(kafka_home="", cache=tmp_path, version="4.0.0")
    assert kafka_install.locate(kafka_home="", cache=tmp_path, version=KAFKA_4).libs.parent.name == f"kafka-{KAFKA_4}"


def test_kafka_4_downloads_into_its_own_dir_and_its_broker_loads(tmp_path: Path) -> None:
    artifacts = load_artifacts(KAFKA_4)
    try:
        build_repo(tmp_path / "repo", artifacts, KAFKA_4)
    except FileNotFoundError as exc:
        pytest.skip(f"Kafka {KAFKA_4} jars are not local ({exc}): `kafkalab fetch --kafka-version {KAFKA_4}`")
    with serve_repo(tmp_path / "repo") as repo:
        done = subprocess.run(
            [sys.executable, "-m", "kafkalab", "fetch", "--kafka-version", KAFKA_4, "--maven-repo", repo.url,
             "--cache-dir", str(tmp_path / "cache")],
            capture_output=True, text=True, timeout=600, env={**os.environ, "NO_PROXY": "127.0.0.1"})
    assert done.returncode == 0, done.stderr
    found = kafka_install.locate(kafka_home="", cache=tmp_path / "cache", version=KAFKA_4)
    assert found.libs == tmp_path / "cache" / f"kafka-{KAFKA_4}" / "libs" and not found.zookeeper_available
    assert all(matches(found.libs / a.filename, a) for a in artifacts)
    assert not (tmp_path / "cache" / f"kafka-{KAFKA_VERSION}").exists()
