"""`kafkalab doctor` on the ways to get the jars: mvn, kafkalab's own download (probed on 127.0.0.1), neither;
and on every Kafka kafkalab runs: the course's needed, a 4.x optional (with the labs that run on it alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import KAFKA_VERSION, KAFKA_VERSIONS, doctor, kafka_install
from kafkalab.cluster.ports import free_port
from kafkalab.cluster.spec import DEFAULT_BROKER_PORTS, DEFAULT_ZK_PORT
from kafkalab.kafka_install.artifacts import load_artifacts
from tests.maven_repo import build_repo, serve_repo
from tests.test_cli_cluster import kafkalab

KAFKA_4 = KAFKA_VERSIONS[1]
KAFKA_4_ONLY = ["new-rebalance-protocol", "static-membership-kip848"]  # the catalog labs with no 3.x platform


def by_name(checks: list[doctor.Check]) -> dict[str, doctor.Check]:
    return {c.name: c for c in checks}


def test_a_reachable_repository_is_a_way_to_fetch(tmp_path: Path) -> None:
    build_repo(tmp_path, load_artifacts(KAFKA_VERSION)[:1], KAFKA_VERSION)
    with serve_repo(tmp_path) as repo:
        checks = by_name(doctor.run_checks(versions=[KAFKA_VERSION], repo=repo.url))
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
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    closed = f"http://127.0.0.1:{free_port()}/"
    checks = by_name(doctor.run_checks(kafka_home="", repo=closed, only_on={KAFKA_4: ["lab-a"]}))
    assert checks["java"].ok
    course, newer = checks[f"kafka {KAFKA_VERSION}"], checks[f"kafka {KAFKA_4}"]
    assert not course.ok and course.needed and course.detail == "not fetched: run `kafkalab fetch`"
    assert not newer.ok and not newer.needed
    assert newer.detail.startswith(f"not fetched: run `kafkalab fetch --kafka-version {KAFKA_4}` (optional: ")
    assert "lab-a" in newer.detail
    assert not checks["fetch with mvn"].ok and checks["fetch with mvn"].needed
    way = checks["fetch without mvn"]
    assert not way.ok and way.needed and f"cannot reach {closed}" in way.detail and "--from" in way.detail
    assert checks["cache disk"].ok


def test_with_the_jars_cached_a_failing_way_is_not_a_problem(distribution: kafka_install.Distribution) -> None:
    checks = by_name(doctor.run_checks(kafka_home="", repo=f"http://127.0.0.1:{free_port()}/"))
    assert checks[f"kafka {KAFKA_VERSION}"].ok
    assert not checks["fetch without mvn"].ok and not checks["fetch without mvn"].needed


def test_every_kafka_is_reported_and_a_missing_optional_one_names_its_fetch_and_labs_without_failing(
        tmp_path: Path, distribution: kafka_install.Distribution) -> None:
    cache = tmp_path / "cache"  # the course's Kafka only
    cache.mkdir()
    (cache / distribution.libs.parent.name).symlink_to(distribution.libs.parent)
    env = {"KAFKALAB_CACHE": str(cache), "KAFKA_HOME": "", "COLUMNS": "400"}
    closed = f"http://127.0.0.1:{free_port()}/"  # whether or not mvn is here: no way to fetch is needed
    result = kafkalab("doctor", "--maven-repo", closed, env=env)
    # a default port another cluster on this machine holds fails doctor too: not what this test is about
    failing = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert all(line.startswith("FAIL port ") for line in failing), result.stdout
    assert result.returncode == (1 if failing else 0), result.stdout + result.stderr
    lines = {line.split(":")[0]: line for line in result.stdout.splitlines()}
    assert lines[f"ok   kafka {KAFKA_VERSION}"].endswith(f"in {cache / distribution.libs.parent.name / 'libs'} (maven)")
    assert lines[f"--   kafka {KAFKA_4}"] == (
        f"--   kafka {KAFKA_4}: not fetched: run `kafkalab fetch --kafka-version {KAFKA_4}` (optional: needed only by "
        f"the labs that run only on Kafka 4.x: {', '.join(KAFKA_4_ONLY)}; the others run on it with "
        f"--kafka-version {KAFKA_4})")
    asked = kafkalab("doctor", "--kafka-version", KAFKA_4, "--maven-repo", closed, env=env)  # asked for: needed
    assert asked.returncode == 1 and f"FAIL kafka {KAFKA_4}: not fetched" in asked.stdout, asked.stdout
    assert f"kafka {KAFKA_VERSION}" not in asked.stdout


def test_a_kafka_home_stands_in_for_the_course_s_kafka_not_for_another_version(
        distribution: kafka_install.Distribution) -> None:
    home = str(distribution.libs.parent)
    checks = by_name(doctor.run_checks(kafka_home=home, repo="http://127.0.0.1:9/"))
    assert checks[f"kafka {KAFKA_VERSION}"].ok and "(kafka-home)" in checks[f"kafka {KAFKA_VERSION}"].detail
    newer = checks[f"kafka {KAFKA_4}"]
    assert not newer.ok and not newer.needed
    assert newer.detail.startswith(f"the Kafka in {home} is {KAFKA_VERSION}: for the labs on {KAFKA_4}, "
                                   "unset KAFKA_HOME")


def test_kafka_4_needs_no_zookeeper_port() -> None:
    names = {c.name for c in doctor.run_checks(kafka_home="", versions=[KAFKA_4], repo="http://127.0.0.1:9/")}
    zk = f"port {DEFAULT_ZK_PORT}"
    assert zk not in names and f"port {DEFAULT_BROKER_PORTS[0]}" in names
    assert zk in {c.name for c in doctor.run_checks(kafka_home="", repo="http://127.0.0.1:9/")}


def test_at_80_columns_a_long_detail_wraps_under_its_own_start(
        tmp_path: Path, distribution: kafka_install.Distribution) -> None:
    closed = f"http://127.0.0.1:{free_port()}/"
    result = kafkalab("doctor", "--maven-repo", closed, env={"COLUMNS": "80", "KAFKA_HOME": ""})
    lines = result.stdout.splitlines()
    assert lines and all(len(line) <= 80 for line in lines), result.stdout
    continued = [line for line in lines if not line[:4].strip()]
    assert continued, "some check's detail is longer than a line at 80 columns"
    assert all(line.startswith("     ") and line[5] != " " for line in continued), result.stdout
