"""Offline bundles: `kafkalab bundle` and `kafkalab fetch --from`, every jar verified against the shipped list."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kafkalab import KAFKA_VERSION, kafka_install
from kafkalab.kafka_install.artifacts import file_digests, load_artifacts, matches
from kafkalab.kafka_install.bundle import write_bundle

KAFKALAB = [sys.executable, "-m", "kafkalab"]


def kafkalab(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAFKALAB_CACHE": str(cache)}
    return subprocess.run([*KAFKALAB, *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, distribution: kafka_install.Distribution) -> Path:
    """A bundle of the suite's jars and a stand-in image tarball."""
    root = tmp_path_factory.mktemp("bundle")
    image = root / "kafkalab_jre17_bookworm.rootfs.tar"
    image.write_bytes(os.urandom(4096))
    out = root / "offline.tar"
    write_bundle(out, [KAFKA_VERSION], [image], cache=distribution.libs.parents[1])
    return out


def rewrite(bundle: Path, out: Path, change: dict[str, bytes | None]) -> Path:
    """A copy of ``bundle`` with members replaced (bytes), removed (None) or added (a name not in it)."""
    with tarfile.open(bundle) as src, tarfile.open(out, "w") as dst:
        names = src.getnames()
        for member in src.getmembers():
            data = change.get(member.name, src.extractfile(member).read())  # type: ignore[union-attr]
            if data is not None:
                member.size = len(data)
                dst.addfile(member, io.BytesIO(data))
        for name in set(change) - set(names):
            info = tarfile.TarInfo(name)
            info.size = len(change[name] or b"")
            dst.addfile(info, io.BytesIO(change[name] or b""))
    return out


def test_a_bundle_installs_verified_jars_and_the_image(bundle: Path, tmp_path: Path) -> None:
    done = kafkalab("fetch", "--from", str(bundle), cache=tmp_path)
    assert done.returncode == 0, done.stderr
    found = kafka_install.locate(kafka_home="", cache=tmp_path)
    assert all(matches(found.libs / a.filename, a) for a in load_artifacts(KAFKA_VERSION))
    assert len(list(found.libs.iterdir())) == len(load_artifacts(KAFKA_VERSION))
    image = tmp_path / "images" / "kafkalab_jre17_bookworm.rootfs.tar"
    assert file_digests(image) == file_digests(bundle.with_name(image.name))


def test_a_damaged_jar_is_refused_and_nothing_installed(bundle: Path, tmp_path: Path) -> None:
    victim = f"kafka-{KAFKA_VERSION}/libs/kafka-clients-{KAFKA_VERSION}.jar"
    with tarfile.open(bundle) as tar:
        data = bytearray(tar.extractfile(victim).read())  # type: ignore[union-attr]
    data[1000] ^= 0xFF
    damaged = rewrite(bundle, tmp_path / "damaged.tar", {victim: bytes(data)})
    done = kafkalab("fetch", "--from", str(damaged), cache=tmp_path / "cache")
    assert done.returncode == 2
    assert f"kafka-clients-{KAFKA_VERSION}.jar does not match its SHA-256" in done.stderr
    assert not (tmp_path / "cache" / f"kafka-{KAFKA_VERSION}").exists()


@pytest.mark.parametrize("change, message", [
    ({f"kafka-{KAFKA_VERSION}/libs/extra-1.0.jar": b"PK"}, "extra-1.0.jar is not in kafkalab's checksum list"),
    ({f"kafka-{KAFKA_VERSION}/libs/kafka-clients-{KAFKA_VERSION}.jar": None}, "lacks 1 jars"),
    ({"kafkalab-bundle.json": None}, "not a kafkalab bundle"),
])
def test_a_bundle_that_is_not_what_kafkalab_wrote_is_refused(
        bundle: Path, tmp_path: Path, change: dict[str, bytes | None], message: str) -> None:
    done = kafkalab("fetch", "--from", str(rewrite(bundle, tmp_path / "b.tar", change)), cache=tmp_path / "c")
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "c" / f"kafka-{KAFKA_VERSION}").exists()


def test_bundle_refuses_an_empty_cache(tmp_path: Path) -> None:
    done = kafkalab("bundle", str(tmp_path / "out.tar"), cache=tmp_path)
    assert done.returncode == 2 and "run `kafkalab fetch` first" in done.stderr
