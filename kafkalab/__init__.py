"""kafkalab: a terminal lab console for Apache Kafka failover and break-fix workshops."""

__version__ = "0.1.0"
KAFKA_VERSION = "3.9.2"  # the course's Kafka: the last line with ZooKeeper mode
# Every Kafka the labs run on: the course's, and today's (KRaft only, as every 4.x is)
KAFKA_VERSIONS = (KAFKA_VERSION, "4.4.0")
