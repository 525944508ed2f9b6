"""kafkalab: a terminal lab console for Apache Kafka failover and break-fix workshops."""

__version__ = "0.1.0"
KAFKA_VERSION = "3.9.2"
