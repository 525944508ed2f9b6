"""The checksum lists of the Kafka versions kafkalab fetches without Maven (see kafkalab/kafka_install/artifacts.py)."""
