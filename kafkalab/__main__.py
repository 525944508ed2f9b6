"""`python -m kafkalab`: the same command as `kafkalab`."""

from kafkalab.cli import run

run()
