"""The container image of the docker backend: a plain Java 17 runtime, built from Debian packages.

Where no image registry is reachable, the image is built locally: mmdebstrap writes a Debian bookworm
minbase root file system with openjdk-17-jre-headless as a tarball (kept in the cache dir), and the engine
imports it under a tag. Any image with `java` 17+ on PATH works as well (``--image``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import docker
from docker.errors import DockerException, ImageNotFound
from docker.utils import parse_repository_tag
from requests.exceptions import RequestException

from kafkalab.errors import KafkalabError
from kafkalab.paths import cache_root

DEFAULT_IMAGE = "kafkalab/jre17:bookworm"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("openjdk-17-jre-headless",)
IMAGE_CONFIG = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["java", "-version"]',
]
Progress = Callable[[str], None]


def rootfs_path(tag: str = DEFAULT_IMAGE) -> Path:
    slug = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in tag)
    return cache_root() / "images" / f"{slug}.rootfs.tar"


def mmdebstrap_command(out: Path) -> list[str]:
    return [
        "mmdebstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
        # the mirror may serve a dated snapshot whose Release file is past its Valid-Until
        "--aptopt=Acquire::Check-Valid-Until \"false\"",
        "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/locale/*",
        SUITE, str(out), MIRROR,
    ]


def build_rootfs(out: Path, progress: Progress) -> None:
    """Run mmdebstrap into ``out`` (atomically), reporting its progress lines."""
    if shutil.which("mmdebstrap") is None:
        raise KafkalabError("mmdebstrap not found: install it (apt-get install mmdebstrap), or pass --image")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial.tar")
    cmd = mmdebstrap_command(partial)
    tail: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "LC_ALL": "C"}) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = [*tail[-19:], line.rstrip()]
            if line.startswith(("I: ", "E: ", "W: ")):
                progress(f"mmdebstrap: {line[3:].strip()[:100]}")
    if proc.returncode != 0:
        partial.unlink(missing_ok=True)
        last = next((ln for ln in reversed(tail) if ln.startswith("E: ")), tail[-1] if tail else "")
        raise KafkalabError(f"mmdebstrap failed ({last[:200]}): check network access to {MIRROR}")
    partial.replace(out)


def import_rootfs(client: docker.DockerClient, rootfs: Path, tag: str, progress: Progress) -> None:
    repository, version = parse_repository_tag(tag)
    progress(f"importing {rootfs.stat().st_size / 2**20:.0f} MB into the engine as {tag}")
    try:
        client.api.import_image_from_file(
            str(rootfs), repository=repository, tag=version or "latest", changes=IMAGE_CONFIG)
        client.images.get(tag)
    except (DockerException, RequestException) as exc:
        raise KafkalabError(f"the Docker engine could not import {rootfs} as {tag}: {exc}") from exc


def image_present(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    return True


def ensure_image(client: docker.DockerClient, tag: str = DEFAULT_IMAGE, rebuild: bool = False,
                 progress: Progress = lambda _m: None) -> str:
    """Make ``tag`` present in the engine: as it is, from the cached root file system, or built anew.

    Returns what was done: "present", "imported" or "built".
    """
    if not rebuild and image_present(client, tag):
        return "present"
    rootfs = rootfs_path(tag)
    done = "imported"
    if rebuild or not rootfs.exists():
        started = time.monotonic()
        progress(f"building a Debian {SUITE} root file system with {', '.join(PACKAGES)}")
        build_rootfs(rootfs, progress)
        progress(f"root file system built in {time.monotonic() - started:.0f}s: {rootfs}")
        done = "built"
    import_rootfs(client, rootfs, tag, progress)
    return done
