"""The Kafka distribution: find it (a cached, versioned dir of jars or a KAFKA_HOME) or fetch it."""

from kafkalab.kafka_install.distribution import (
    BROKER_MAIN,
    ZOOKEEPER_MAIN,
    Distribution,
    java_binary,
    java_major_version,
    locate,
    verify,
)
from kafkalab.kafka_install.download import Progress
from kafkalab.kafka_install.fetch import FetchOptions, fetch
from kafkalab.kafka_install.java_helpers import java_helper_argv

__all__ = [
    "BROKER_MAIN", "ZOOKEEPER_MAIN", "Distribution", "FetchOptions", "Progress", "fetch", "java_binary",
    "java_helper_argv", "java_major_version", "locate", "verify",
]
