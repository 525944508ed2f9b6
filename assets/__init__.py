"""Poms and corpora, installed as the data package kafkalab._assets (see setup.py)."""
