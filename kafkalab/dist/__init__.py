"""The Kafka distribution: find it (a Maven-resolved cache dir or a KAFKA_HOME) or fetch it."""

from kafkalab.dist.distribution import (
    BROKER_MAIN,
    ZOOKEEPER_MAIN,
    Distribution,
    java_binary,
    java_major_version,
    locate,
    verify,
)
from kafkalab.dist.maven import fetch

__all__ = [
    "BROKER_MAIN", "ZOOKEEPER_MAIN", "Distribution", "fetch", "java_binary", "java_major_version", "locate", "verify",
]
