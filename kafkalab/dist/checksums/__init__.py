"""The checksum lists of the Kafka versions kafkalab fetches without Maven (see kafkalab/dist/artifacts.py)."""
