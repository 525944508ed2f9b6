"""Find the Kafka distribution: Maven-resolved jars in a versioned cache dir, or a KAFKA_HOME.

Either way a distribution is just a ``libs/`` directory of jars; the same code starts the nodes from it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kafkalab import KAFKA_VERSION
from kafkalab.errors import KafkalabError
from kafkalab.paths import dist_dir

BROKER_MAIN = "kafka.Kafka"
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_REQUIRED_JARS = ("kafka_2.13-", "kafka-clients-", "scala-library-", "slf4j-api-")
ZOOKEEPER_JAR = "zookeeper-"
MARKER = ".complete"
FIRST_KRAFT_ONLY = 4  # Kafka 4.0 removed ZooKeeper mode


@dataclass(frozen=True)
class Distribution:
    """A directory of Kafka jars, and where it came from."""

    libs: Path
    source: str  # "maven" or "kafka-home"

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    def missing_jars(self) -> list[str]:
        names = [p.name for p in self.libs.glob("*.jar")] if self.libs.is_dir() else []
        required = (*_REQUIRED_JARS, ZOOKEEPER_JAR) if self.zookeeper_available else _REQUIRED_JARS
        return [prefix for prefix in required if not any(n.startswith(prefix) for n in names)]

    def version(self) -> str:
        for jar in self.libs.glob("kafka-clients-*.jar"):
            return jar.name.removeprefix("kafka-clients-").removesuffix(".jar")
        return "unknown"

    @property
    def zookeeper_available(self) -> bool:
        """Whether this Kafka still has ZooKeeper mode: 3.x does, 4.x and later are KRaft only."""
        return not has_kraft_only(self.version())


def has_kraft_only(version: str) -> bool:
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) >= FIRST_KRAFT_ONLY


def java_binary() -> str:
    """The java launcher: $JAVA_HOME/bin/java, else java on PATH."""
    if home := os.environ.get("JAVA_HOME"):
        candidate = Path(home) / "bin" / "java"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("java")
    if not found:
        raise KafkalabError("java not found on PATH: install a JDK 17+ (e.g. apt-get install openjdk-17-jdk)")
    return found


def java_major_version(java: str | None = None) -> int:
    out = subprocess.run([java or java_binary(), "-version"], capture_output=True, text=True, timeout=30)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return 0
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def locate(
    kafka_home: str | os.PathLike[str] | None = None, cache: Path | None = None, version: str = KAFKA_VERSION
) -> Distribution:
    """The distribution to use: --kafka-home, else $KAFKA_HOME, else the cached ``version``. Raises if absent."""
    home = kafka_home or os.environ.get("KAFKA_HOME")
    if home:
        libs = Path(home).expanduser() / "libs"
        dist = Distribution(libs, "kafka-home")
        if not libs.is_dir() or dist.missing_jars():
            raise KafkalabError(
                f"{home} is not a Kafka install (no complete libs/ directory): "
                "point --kafka-home/KAFKA_HOME at the directory holding bin/ and libs/"
            )
        return dist
    libs = dist_dir(cache, version) / "libs"
    dist = Distribution(libs, "maven")
    if not (libs.parent / MARKER).exists() or dist.missing_jars():
        again = "" if version == KAFKA_VERSION else f" --kafka-version {version}"
        raise KafkalabError(f"Kafka {version} jars not found in {libs.parent}: run `kafkalab fetch{again}` first")
    return dist


def verify(dist: Distribution) -> None:
    """Check that the broker (and, before Kafka 4, ZooKeeper) main classes load from the distribution."""
    if missing := dist.missing_jars():
        raise KafkalabError(f"{dist.libs} lacks {', '.join(missing)}*.jar: run `kafkalab fetch --force`")
    java = java_binary()
    out = subprocess.run(
        [java, "-cp", dist.classpath, BROKER_MAIN, "--version"], capture_output=True, text=True, timeout=60
    )
    if out.returncode != 0 or not re.search(r"\d+\.\d+", out.stdout + out.stderr):
        raise KafkalabError(
            f"the broker class {BROKER_MAIN} does not load from {dist.libs}: run `kafkalab fetch --force`"
        )
    if not dist.zookeeper_available:
        return
    out = subprocess.run([java, "-cp", dist.classpath, ZOOKEEPER_MAIN], capture_output=True, text=True, timeout=60)
    if "Usage" not in out.stdout + out.stderr:
        raise KafkalabError(f"the ZooKeeper class {ZOOKEEPER_MAIN} does not load from {dist.libs}")
