"""The checksum lists kafkalab ships: per Kafka version, every jar of the runtime closure mvn resolves, with its
size, SHA-256 and SHA-1 (written by scripts/resolve_artifacts.py). The downloader fetches exactly these and
refuses anything it cannot verify.

One line per artifact: ``group:artifact:version[:classifier] size sha256 sha1``; ``#`` starts a comment.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import KafkalabError
from kafkalab.paths import package_file

LISTS_PACKAGE = "kafkalab.kafka_install.checksums"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SHA1 = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Artifact:
    """One jar of the closure: its Maven coordinates and what its bytes must hash to."""

    group: str
    artifact: str
    version: str
    classifier: str
    size: int
    sha256: str
    sha1: str

    @property
    def coordinates(self) -> str:
        return ":".join(filter(None, (self.group, self.artifact, self.version, self.classifier)))

    @property
    def filename(self) -> str:
        """The name mvn's copy-dependencies gives the jar (so both fetch paths fill libs/ alike)."""
        suffix = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{suffix}.jar"

    @property
    def repo_path(self) -> str:
        """The jar's path below a Maven repository's root."""
        return f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.filename}"

    def line(self) -> str:
        return f"{self.coordinates} {self.size} {self.sha256} {self.sha1}"


def file_digests(path: Path) -> tuple[str, str]:
    """SHA-256 and SHA-1 of a file, read once."""
    sha256, sha1 = hashlib.sha256(), hashlib.sha1()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            sha256.update(chunk)
            sha1.update(chunk)
    return sha256.hexdigest(), sha1.hexdigest()


def matches(path: Path, artifact: Artifact) -> bool:
    """Whether the file has the artifact's size and both checksums."""
    if not path.is_file() or path.stat().st_size != artifact.size:
        return False
    return file_digests(path) == (artifact.sha256, artifact.sha1)


def list_path(version: str) -> Path:
    return package_file(LISTS_PACKAGE) / f"kafka-{version}.txt"


def shipped_versions() -> list[str]:
    """The Kafka versions kafkalab has a checksum list for."""
    lists = package_file(LISTS_PACKAGE).glob("kafka-*.txt")
    return sorted((p.stem.removeprefix("kafka-") for p in lists), key=version_key)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def load_artifacts(version: str, path: Path | None = None) -> list[Artifact]:
    """The checksum list of ``version`` (or the file ``path``); refuses a line without both checksums."""
    if path is None:
        path = list_path(version)
        if not path.is_file():
            have = ", ".join(shipped_versions()) or "none"
            raise KafkalabError(
                f"kafkalab ships no checksum list for Kafka {version} (it has: {have}): install Maven, "
                "or give --checksums FILE written by scripts/resolve_artifacts.py"
            )
    elif not path.is_file():
        raise KafkalabError(f"checksum list {path} does not exist: give a file written by scripts/resolve_artifacts.py")
    artifacts = [_parse(line, path, n) for n, line in enumerate(path.read_text().splitlines(), start=1)
                 if line.split("#", 1)[0].strip()]
    if not artifacts:
        raise KafkalabError(f"checksum list {path} names no artifact: regenerate it with scripts/resolve_artifacts.py")
    return artifacts


def _parse(line: str, path: Path, number: int) -> Artifact:
    fields = line.split("#", 1)[0].split()
    where = f"{path.name} line {number}"
    coords = fields[0].split(":")
    if len(coords) not in (3, 4):
        raise KafkalabError(f"{where}: {fields[0]!r} is not group:artifact:version[:classifier]")
    if len(fields) != 4 or not fields[1].isdigit() or not _SHA256.fullmatch(fields[2]) or not _SHA1.fullmatch(
            fields[3]):
        raise KafkalabError(
            f"{where}: {fields[0]} lacks its size, SHA-256 or SHA-1: refusing to download a jar kafkalab cannot "
            "verify (regenerate the list with scripts/resolve_artifacts.py)"
        )
    group, artifact, version = coords[:3]
    classifier = coords[3] if len(coords) == 4 else ""
    return Artifact(group, artifact, version, classifier, int(fields[1]), fields[2], fields[3])


def write_list(path: Path, version: str, artifacts: list[Artifact], header: str) -> None:
    lines = [f"# {line}" for line in header.splitlines()]
    lines.append("# group:artifact:version[:classifier] size sha256 sha1")
    lines += [a.line() for a in sorted(artifacts, key=lambda a: a.coordinates)]
    path.write_text("\n".join(lines) + "\n")
