"""Offline bundles: the cache (Kafka jars per version, the docker image's root file system if built) in one
tar file an instructor hands out, installed with `kafkalab fetch --from FILE` where there is no network.

Jars are verified against the checksum list kafkalab ships, never against the bundle itself: a jar the list
does not name, or whose bytes differ, is refused. The image tarball, built locally, carries its SHA-256 in the
bundle's manifest, which catches a damaged copy.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from kafkalab import __version__
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.artifacts import file_digests, load_artifacts, matches
from kafkalab.kafka_install.distribution import Distribution
from kafkalab.kafka_install.download import QUIET, Progress
from kafkalab.kafka_install.fetch import cached, install
from kafkalab.paths import cache_root, dist_dir

MANIFEST = "kafkalab-bundle.json"
IMAGES = "images"


def write_bundle(out: Path, versions: list[str], images: list[Path], cache: Path | None = None,
                 progress: Progress = QUIET) -> None:
    """The cached jars of ``versions`` (each checked against its list first) and ``images`` into ``out``."""
    dists = []
    for version in versions:
        found = cached(cache, version)
        if found is None:
            raise KafkalabError(f"Kafka {version} is not in the cache: run `kafkalab fetch --kafka-version {version}`")
        bad = [a.filename for a in load_artifacts(version) if not matches(found.libs / a.filename, a)]
        if bad:
            raise KafkalabError(f"{found.libs} has {len(bad)} jars that fail their checksum ({bad[0]}, ...): "
                                f"run `kafkalab fetch --force --kafka-version {version}`")
        dists.append((version, found))
    manifest = {"kafkalab": __version__, "kafka": versions,
                "images": {p.name: _sha256(p) for p in images}}
    files = [(f, f"kafka-{v}/libs/{f.name}") for v, d in dists for f in sorted(d.libs.glob("*.jar"))]
    files += [(p, f"{IMAGES}/{p.name}") for p in images]
    progress.total(sum(f.stat().st_size for f, _ in files))
    partial = out.with_name(out.name + ".part")
    with tarfile.open(partial, "w") as tar:
        data = json.dumps(manifest, indent=1).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for path, name in files:
            progress.line(f"adding {name}")
            tar.add(path, arcname=name)
            progress.advance(path.stat().st_size)
    partial.replace(out)


def install_bundle(bundle: Path, cache: Path | None = None, progress: Progress = QUIET) -> list[Distribution]:
    """Every Kafka version (verified) and image of the bundle into the cache; the installed distributions."""
    if not bundle.is_file():
        raise KafkalabError(f"bundle {bundle} does not exist: give the file `kafkalab bundle` wrote")
    if not tarfile.is_tarfile(bundle):
        raise KafkalabError(f"{bundle} is not a tar file: give the file `kafkalab bundle` wrote")
    with tarfile.open(bundle, "r:*") as tar:
        manifest = _manifest(tar, bundle)
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        progress.total(sum(m.size for m in members.values()))
        installed = [_install_version(tar, members, v, bundle, cache, progress) for v in manifest["kafka"]]
        for name, sha256 in manifest["images"].items():
            _install_image(tar, members, name, sha256, bundle, (cache or cache_root()) / IMAGES, progress)
    return installed


def _install_version(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], version: str, bundle: Path,
                     cache: Path | None, progress: Progress) -> Distribution:
    artifacts = {a.filename: a for a in load_artifacts(version)}
    prefix = f"kafka-{version}/libs/"
    named = {n.removeprefix(prefix) for n in members if n.startswith(prefix)}
    if unknown := sorted(named - set(artifacts)):
        raise KafkalabError(f"{bundle}: {unknown[0]} is not in kafkalab's checksum list for Kafka {version}: refusing")
    if missing := sorted(set(artifacts) - named):
        raise KafkalabError(f"{bundle} lacks {len(missing)} jars of Kafka {version} ({missing[0]}, ...): "
                            "write the bundle again from a complete cache")
    target = dist_dir(cache, version)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".kafka-{version}-", dir=target.parent))
    try:
        (staging / "libs").mkdir()
        for name, artifact in sorted(artifacts.items()):
            progress.line(f"checking {name}")
            path = _extract(tar, members[prefix + name], staging / "libs" / name)
            progress.advance(artifact.size)
            if not matches(path, artifact):
                raise KafkalabError(f"{bundle}: {name} does not match its SHA-256: the bundle is damaged, copy it anew")
        install(staging, target, version)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress.line(f"Kafka {version} ready in {target}")
    return Distribution(target / "libs", "maven")


def _install_image(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str, sha256: str, bundle: Path,
                   images: Path, progress: Progress) -> None:
    member = members.get(f"{IMAGES}/{name}")
    if member is None or "/" in name:
        raise KafkalabError(f"{bundle} lacks the image {name} its manifest names: write the bundle again")
    images.mkdir(parents=True, exist_ok=True)
    partial = _extract(tar, member, images / (name + ".part"))
    progress.advance(member.size)
    if _sha256(partial) != sha256:
        partial.unlink()
        raise KafkalabError(f"{bundle}: the image {name} does not match its SHA-256: the bundle is damaged")
    partial.replace(images / name)
    progress.line(f"image {name} in {images}")


def _manifest(tar: tarfile.TarFile, bundle: Path) -> dict[str, Any]:
    try:
        source = tar.extractfile(MANIFEST)
        manifest = json.load(source) if source else None
    except (KeyError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("kafka"), list):
        raise KafkalabError(f"{bundle} has no {MANIFEST}: not a kafkalab bundle (write one with `kafkalab bundle`)")
    manifest.setdefault("images", {})
    return manifest


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> Path:
    """One member's bytes to ``dest`` (never a path taken from the archive)."""
    source = tar.extractfile(member)
    assert source is not None
    with source, dest.open("wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)
    return dest


def _sha256(path: Path) -> str:
    return file_digests(path)[0]
