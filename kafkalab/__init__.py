"""kafkalab: a terminal lab console for Apache Kafka failover and break-fix workshops."""

__version__ = "0.1.0"
# Every Kafka the labs run on: the course's (3.9, the last line with ZooKeeper mode), and today's (KRaft
# only, as every 4.x is). The first is the default.
KAFKA_VERSIONS = ("3.9.2", "4.4.0")
KAFKA_VERSION = KAFKA_VERSIONS[0]
