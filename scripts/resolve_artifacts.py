"""Regenerate the checksum list of a Kafka version from what mvn resolves, so the list stays honest.

    .venv/bin/python scripts/resolve_artifacts.py            # every version kafkalab ships a list for
    .venv/bin/python scripts/resolve_artifacts.py 4.4.0      # one version (a new one: adds its list)

mvn resolves the runtime closure of assets/pom.xml (the same command `kafkalab fetch` runs) into the local
Maven repository, which checks each download against Central's .sha1; this script hashes the resolved jars,
cross-checks the .sha1 files Maven kept beside them, and writes kafkalab/kafka_install/checksums/kafka-VERSION.txt.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kafkalab.kafka_install.artifacts import Artifact, file_digests, list_path, shipped_versions, write_list
from kafkalab.paths import assets_dir


def resolve(version: str) -> list[Artifact]:
    mvn = shutil.which("mvn")
    if not mvn:
        sys.exit("resolve_artifacts: mvn not found on PATH: install Maven")
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "deps.txt"
        cmd = [mvn, "-B", "-q", "-f", str(assets_dir() / "pom.xml"), "dependency:list", "-DincludeScope=runtime",
               f"-DoutputFile={listing}", "-DoutputAbsoluteArtifactFilename=true", f"-Dkafka.version={version}"]
        subprocess.run(cmd, check=True)
        lines = [ln.strip() for ln in listing.read_text().splitlines() if ln.startswith("   ")]
    return [_artifact(line) for line in lines]


def _artifact(line: str) -> Artifact:
    """``group:artifact:jar[:classifier]:version:scope:/abs/path.jar`` -> Artifact with the jar's digests."""
    head, _, jar_path = line.partition(":/")
    fields = head.split(":")
    group, artifact, kind = fields[:3]
    classifier, version = (fields[3], fields[4]) if len(fields) == 6 else ("", fields[3])
    if kind != "jar":
        sys.exit(f"resolve_artifacts: {line}: only jars are fetched, not {kind}")
    jar = Path("/" + jar_path)
    sha256, sha1 = file_digests(jar)
    remote = jar.with_name(jar.name + ".sha1")
    if remote.is_file() and remote.read_text().split()[0].lower() != sha1:
        sys.exit(f"resolve_artifacts: {jar} does not match Central's {remote.name}: delete it and run again")
    return Artifact(group, artifact, version, classifier, jar.stat().st_size, sha256, sha1)


def main(argv: list[str]) -> int:
    for version in argv or shipped_versions():
        artifacts = resolve(version)
        out = list_path(version)
        header = (f"Kafka {version}: the runtime closure of assets/pom.xml as mvn resolves it "
                  f"({len(artifacts)} jars, {sum(a.size for a in artifacts) / 2**20:.1f} MB).\n"
                  "Written by scripts/resolve_artifacts.py: do not edit by hand.")
        write_list(out, version, artifacts, header)
        print(f"{out}: {len(artifacts)} artifacts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
