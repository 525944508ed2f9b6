"""The lab catalog, installed as the data package kafkalab._labs (see setup.py)."""
