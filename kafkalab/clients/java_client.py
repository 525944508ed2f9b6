"""kafkalab's own Java producer and consumer: their command lines, for a lab's foreign clients.

The sources (kafkalab/clients/java/) are kafkalab's, written for it; ``kafkalab fetch`` compiles them against
the fetched kafka-clients jar (``kafka_install.java_helpers.client_classes``, cached per Kafka release and
source). They take the course's option names as ``-Dname=value``, as the course's apps do, and write the
course's payload log (``payload.log``, ``payload-LOCALID.log`` with a local id) in their working directory.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

from kafkalab.errors import KafkalabError
from kafkalab.kafka_install import Distribution, java_binary
from kafkalab.kafka_install.java_helpers import CLIENTS_PACKAGE, client_classes
from kafkalab.paths import assets_dir, package_file

PRODUCER_MAIN = "kafkalab.JavaProducer"
CONSUMER_MAIN = "kafkalab.JavaConsumer"
MAINS = {"producer": PRODUCER_MAIN, "consumer": CONSUMER_MAIN}
# a small JVM that starts fast: the clients do little work, and share two cores with the brokers
JVM_OPTIONS = ("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")


def java_client_argv(dist: Distribution, role: str, settings: Mapping[str, str] | None = None) -> list[str]:
    """The command line of ``role``'s ("producer" or "consumer") Java client with ``settings`` (course option
    names) as ``-Dname=value`` items; a KafkalabError when it cannot be built (no javac)."""
    defines = [f"-D{name}={value}" for name, value in (settings or {}).items()]
    return [*_launcher(dist), *defines, "-cp", _classpath(dist), _main(role)]


def java_command_templates(dist: Distribution) -> tuple[str, str]:
    """The producer's and the consumer's command templates, shell-ready: ``{options}`` (``-Dname=value``
    items), then ``{bootstrap}`` and ``{topic}``, which win over the same options in ``{options}`` (the JVM
    keeps a property's last value). The caller quotes what it substitutes."""
    head = " ".join(shlex.quote(part) for part in _launcher(dist))
    classpath = shlex.quote(_classpath(dist))
    producer, consumer = (f"{head} {{options}} -Dbootstrap.server={{bootstrap}} -D{role}.topic={{topic}} "
                          f"-cp {classpath} {_main(role)}" for role in ("producer", "consumer"))
    return producer, consumer


def _main(role: str) -> str:
    if role not in MAINS:
        raise KafkalabError(f"no Java client for {role!r}: producer or consumer")
    return MAINS[role]


def _launcher(dist: Distribution) -> list[str]:
    """java, its options, kafka-clients' logging (warnings to stderr) and the values' corpus."""
    log4j = package_file(CLIENTS_PACKAGE, "log4j.properties")
    return [java_binary(), *JVM_OPTIONS, f"-Dlog4j.configuration=file:{log4j}",
            f"-Dkafkalab.corpus={assets_dir() / 'corpus.txt'}"]


def _classpath(dist: Distribution) -> str:
    classes = client_classes(dist)
    if classes is None:
        raise KafkalabError("javac not found: kafkalab's Java clients are compiled with it: install a JDK 17+ "
                            "(e.g. apt-get install openjdk-17-jdk-headless), then run kafkalab fetch")
    return f"{classes}{os.pathsep}{dist.classpath}"
