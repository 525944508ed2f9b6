from kafkalab.cli import run

run()
