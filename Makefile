# Two commands for a fresh machine with Python 3.11+ and JDK 17+ (Maven optional):
#   make lab    set everything up, then open the lab console
#   make test   set everything up, then run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup lab test lint bench clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

setup: $(STAMP)
	$(BIN)/kafkalab fetch
	$(BIN)/kafkalab fetch --kafka-version 4.4.0  # the new-rebalance-protocol lab and the 4.x tests

lab: setup
	$(BIN)/kafkalab

test: setup
	$(BIN)/ruff check kafkalab tests benchmarks
	$(BIN)/mypy
	KAFKALAB=$(BIN)/kafkalab bash scripts/with-docker-engine.sh $(BIN)/python -m pytest -q -p no:cacheprovider

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) kafkalab-runs
