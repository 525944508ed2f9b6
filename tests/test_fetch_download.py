"""`kafkalab fetch` without Maven: every jar downloaded from a Maven repository on 127.0.0.1 and verified
against the shipped checksum list; corrupted bytes refetched, a list without checksums refused, and the
same jar set as mvn resolves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab import KAFKA_VERSION, kafka_install
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.artifacts import Artifact, file_digests, load_artifacts, matches
from kafkalab.kafka_install.download import Progress, download_all
from tests.maven_repo import RepoServer, serve_artifacts

KAFKALAB = [sys.executable, "-m", "kafkalab"]
ARTIFACTS = load_artifacts(KAFKA_VERSION)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RepoServer]:
    with serve_artifacts(tmp_path_factory.mktemp("maven-repo"), ARTIFACTS, KAFKA_VERSION) as server:
        yield server


@pytest.fixture
def repo(served: RepoServer) -> RepoServer:
    """The module's server with a fresh request log and nothing to corrupt."""
    with served.lock:
        served.requests.clear()
        served.corrupt.clear()
        served.cut.clear()
    return served


def fetch_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_PROXY": "127.0.0.1"}
    return subprocess.run([*KAFKALAB, "fetch", *args], capture_output=True, text=True, timeout=600, env=env)


def smallest(n: int) -> list[Artifact]:
    return sorted(ARTIFACTS, key=lambda a: a.size)[:n]


def test_no_maven_fetch_verifies_every_jar_and_gives_the_mvn_set(repo: RepoServer, tmp_path: Path) -> None:
    done = fetch_cli("--no-maven", "--maven-repo", repo.url, "--cache-dir", str(tmp_path / "http"))
    assert done.returncode == 0, done.stderr
    libs = tmp_path / "http" / f"kafka-{KAFKA_VERSION}" / "libs"
    assert sorted(p.name for p in libs.iterdir()) == sorted(a.filename for a in ARTIFACTS)
    assert all(matches(libs / a.filename, a) for a in ARTIFACTS)
    assert all(repo.gets(a) == [None] for a in ARTIFACTS), "each jar fetched exactly once"
    assert kafka_install.locate(kafka_home="", cache=tmp_path / "http").version() == KAFKA_VERSION
    if shutil.which("mvn") is None:
        pytest.skip("mvn not on PATH: the comparison with the mvn-resolved set needs it")
    by_mvn = kafka_install.fetch(kafka_install.FetchOptions(cache=tmp_path / "mvn")).libs
    assert {p.name: file_digests(p) for p in by_mvn.iterdir()} == {p.name: file_digests(p) for p in libs.iterdir()}


def test_a_corrupted_download_is_detected_and_fetched_again(repo: RepoServer, tmp_path: Path) -> None:
    target = smallest(2)
    repo.corrupt["/" + target[0].repo_path] = 1
    messages: list[str] = []
    download_all(target, repo.url, tmp_path, Progress(line=messages.append))
    assert all(matches(tmp_path / a.filename, a) for a in target)
    assert repo.gets(target[0]) == [None, None] and repo.gets(target[1]) == [None]
    assert any("checksum mismatch" in m for m in messages)
    assert not list(tmp_path.glob("*.part"))


def test_a_repository_that_keeps_serving_other_bytes_is_refused(repo: RepoServer, tmp_path: Path) -> None:
    target = smallest(3)[2:]
    repo.corrupt["/" + target[0].repo_path] = 99
    with pytest.raises(KafkalabError, match="does not match the SHA-256"):
        download_all(target, repo.url, tmp_path, Progress())
    assert not (tmp_path / target[0].filename).exists()


def test_a_part_file_resumes_with_range_and_a_bad_one_is_replaced(repo: RepoServer, tmp_path: Path) -> None:
    good, bad = sorted(ARTIFACTS, key=lambda a: a.size)[3:5]
    source = Path(repo.root / good.repo_path).read_bytes()
    (tmp_path / (good.filename + ".part")).write_bytes(source[: len(source) // 2])
    (tmp_path / (bad.filename + ".part")).write_bytes(b"\0" * (bad.size // 2))
    advanced: list[int] = []
    download_all([good, bad], repo.url, tmp_path, Progress(advance=advanced.append))
    assert matches(tmp_path / good.filename, good) and matches(tmp_path / bad.filename, bad)
    assert repo.gets(good) == [f"bytes={len(source) // 2}-"]
    assert repo.gets(bad) == [f"bytes={bad.size // 2}-", None], "resumed, found corrupt, fetched whole"
    assert sum(advanced) == good.size + bad.size, "the progress bar ends at the total size"


def test_a_dropped_connection_resumes_where_it_stopped(repo: RepoServer, tmp_path: Path) -> None:
    artifact = smallest(6)[5]
    repo.cut["/" + artifact.repo_path] = 1
    download_all([artifact], repo.url, tmp_path, Progress())
    assert matches(tmp_path / artifact.filename, artifact)
    assert repo.gets(artifact) == [None, f"bytes={artifact.size // 2}-"]


def test_a_list_without_a_checksum_is_refused(repo: RepoServer, tmp_path: Path) -> None:
    lines = [a.line() for a in smallest(2)]
    lines[1] = " ".join(lines[1].split()[:2])  # coordinates and size, no SHA-256 or SHA-1
    checksums = tmp_path / "list.txt"
    checksums.write_text("\n".join(lines) + "\n")
    done = fetch_cli("--no-maven", "--maven-repo", repo.url, "--cache-dir", str(tmp_path / "c"),
                     "--checksums", str(checksums))
    assert done.returncode == 2
    assert "lacks its size, SHA-256 or SHA-1: refusing" in done.stderr and "Traceback" not in done.stderr
    assert not repo.requests, "nothing downloaded"


def test_a_version_without_a_list_names_what_to_do(tmp_path: Path) -> None:
    done = fetch_cli("--no-maven", "--kafka-version", "3.0.0", "--cache-dir", str(tmp_path))
    assert done.returncode == 2 and "no checksum list for Kafka 3.0.0" in done.stderr
    assert KAFKA_VERSION in done.stderr
