"""`kafkalab doctor` on the ways to get the jars: mvn, kafkalab's own download (probed on 127.0.0.1), neither."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import KAFKA_VERSION, doctor, kafka_install
from kafkalab.cluster.ports import free_port
from kafkalab.cluster.spec import DEFAULT_BROKER_PORTS, DEFAULT_ZK_PORT
from kafkalab.kafka_install.artifacts import load_artifacts
from tests.maven_repo import build_repo, serve_repo


def by_name(checks: list[doctor.Check]) -> dict[str, doctor.Check]:
    return {c.name: c for c in checks}


def test_a_reachable_repository_is_a_way_to_fetch(tmp_path: Path) -> None:
    build_repo(tmp_path, load_artifacts(KAFKA_VERSION)[:1], KAFKA_VERSION)
    with serve_repo(tmp_path) as repo:
        checks = by_name(doctor.run_checks(repo=repo.url))
    assert checks["fetch without mvn"].ok and repo.url in checks["fetch without mvn"].detail
    assert [path for path, _ in repo.requests] == ["/" + load_artifacts(KAFKA_VERSION)[0].repo_path]


def test_without_jars_mvn_or_network_doctor_says_what_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with java only
    bin_dir.mkdir()
    (bin_dir / "java").symlink_to(kafka_install.java_binary())
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path / "cache"))
    closed = f"http://127.0.0.1:{free_port()}/"
    checks = by_name(doctor.run_checks(kafka_home="", repo=closed))
    assert checks["java"].ok
    assert not checks["kafka"].ok and "kafkalab fetch" in checks["kafka"].detail
    assert not checks["fetch with mvn"].ok and checks["fetch with mvn"].needed
    way = checks["fetch without mvn"]
    assert not way.ok and way.needed and f"cannot reach {closed}" in way.detail and "--from" in way.detail
    assert checks["cache disk"].ok


def test_with_the_jars_cached_a_failing_way_is_not_a_problem(distribution: kafka_install.Distribution) -> None:
    checks = by_name(doctor.run_checks(kafka_home="", repo=f"http://127.0.0.1:{free_port()}/"))
    assert checks["kafka"].ok and not checks["fetch without mvn"].ok and not checks["fetch without mvn"].needed


def test_kafka_4_needs_no_zookeeper_port() -> None:
    names = {c.name for c in doctor.run_checks(kafka_home="", version="4.4.0", repo="http://127.0.0.1:9/")}
    zk = f"port {DEFAULT_ZK_PORT}"
    assert zk not in names and f"port {DEFAULT_BROKER_PORTS[0]}" in names
    assert zk in {c.name for c in doctor.run_checks(kafka_home="", repo="http://127.0.0.1:9/")}
