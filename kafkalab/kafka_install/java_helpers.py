"""kafkalab's own Java helpers (FormatStorage, QuorumWatch, Reassign, ConfigDefs) and Java clients
(kafkalab.JavaProducer, kafkalab.JavaConsumer), compiled once per Kafka version.

Run as a .java file (the JDK's source launcher), a helper is compiled inside its JVM at every start: about
1.5 s of CPU, paid at every KRaft cluster start while six node JVMs compete for two cores. Compiled once
into the cache (keyed by the source, the Kafka version and the JDK; `kafkalab fetch` does it), it starts
in a tenth of that. Without javac (a JRE only) the source launcher is used as before. The Java clients are
three sources of one package (``kafkalab``): they need javac, and are compiled together into one classes dir.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.distribution import Distribution, java_binary
from kafkalab.paths import cache_root, package_file

COMPILE_TIMEOUT_S = 180.0
HELPERS = (("kafkalab.cluster", "FormatStorage.java"), ("kafkalab.cluster", "QuorumWatch.java"),
           ("kafkalab.admin", "Reassign.java"), ("kafkalab.kafka_install", "ConfigDefs.java"))
CLIENTS_PACKAGE = "kafkalab.clients.java"
CLIENT_SOURCES = ("ClientOptions.java", "JavaProducer.java", "JavaConsumer.java")
CLIENT_MAINS = ("kafkalab.JavaProducer", "kafkalab.JavaConsumer")


def compile_helpers(dist: Distribution, say: Callable[[str], None]) -> None:
    """Compile every helper for ``dist`` now (at fetch), so no cluster start pays for it."""
    if _javac() is None:
        say("javac not found: kafkalab's Java helpers will compile at each start (install a JDK to avoid it)")
        return
    for package, name in HELPERS:  # found at call time: those packages import this one
        compiled_classes(dist, package_file(package, name))
    say(f"Java helpers ready for Kafka {dist.version()} ({', '.join(n for _p, n in HELPERS)})")


def compile_clients(dist: Distribution, say: Callable[[str], None]) -> None:
    """Build kafkalab's Java producer and consumer for ``dist`` now (at fetch)."""
    if _javac() is None:
        say("javac not found: kafkalab's Java clients are not built (install a JDK to use them)")
        return
    client_classes(dist)
    say(f"Java clients ready for Kafka {dist.version()} ({', '.join(CLIENT_MAINS)})")


def client_classes(dist: Distribution) -> Path | None:
    """The directory holding the Java clients' classes (``kafkalab/JavaProducer.class`` ...), compiled against
    ``dist``'s kafka-clients on first use; None without javac."""
    sources = [package_file(CLIENTS_PACKAGE, name) for name in CLIENT_SOURCES]  # found at call time, as above
    return _compiled(dist, sources, "java-clients", "kafkalab/JavaConsumer.class")


def java_helper_argv(dist: Distribution, source: Path) -> list[str]:
    """What follows the JVM options to run ``source``: its compiled class on the classpath, else the source."""
    classes = compiled_classes(dist, source)
    if classes is None:
        return ["-cp", dist.classpath, str(source)]
    return ["-cp", f"{dist.classpath}{os.pathsep}{classes}", source.stem]


def compiled_classes(dist: Distribution, source: Path) -> Path | None:
    """The directory holding ``source``'s compiled classes, compiling them on first use; None without javac."""
    return _compiled(dist, [source], source.stem, f"{source.stem}.class")


def _compiled(dist: Distribution, sources: list[Path], stem: str, marker: str) -> Path | None:
    """``sources`` compiled together into ``java-helpers/STEM-KEY`` (the key: the sources, the Kafka version
    and the JDK), unless ``marker`` (a class file) shows they are; None without javac."""
    javac = _javac()
    if javac is None:
        return None
    key = hashlib.sha256(b"\0".join([*(s.read_bytes() for s in sources), dist.version().encode(),
                                     javac.encode()])).hexdigest()[:16]
    target = cache_root() / "java-helpers" / f"{stem}-{key}"
    if (target / marker).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    names = ", ".join(s.name for s in sources)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{stem}-",
                                     ignore_cleanup_errors=True) as tmp:
        try:
            done = subprocess.run([javac, "-nowarn", "-cp", dist.classpath, "-d", tmp, *map(str, sources)],
                                  capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise KafkalabError(f"compiling {names} took over {COMPILE_TIMEOUT_S:.0f}s: is the machine "
                                "overloaded?") from None
        if done.returncode != 0:
            errors = [ln for ln in done.stderr.splitlines() if "error" in ln] or [f"exit code {done.returncode}"]
            raise KafkalabError(f"compiling {names} against {dist.libs} failed: {errors[0][:300]}")
        try:
            os.rename(tmp, target)  # atomic: a concurrent start that compiled it first wins, same classes
        except OSError:
            if not (target / marker).exists():
                raise
    return target


def _javac() -> str | None:
    beside = Path(java_binary()).with_name("javac")
    return str(beside) if beside.exists() else shutil.which("javac")
