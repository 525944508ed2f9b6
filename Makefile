# Two commands for a fresh machine with Python 3.11+ and JDK 17+ (Maven optional):
#   make lab    set everything up, then open the lab console
#   make test   set everything up, then run the test suite
#   make docs   serve the documentation site at http://127.0.0.1:8000
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup lab test lint docs bench clean

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
	$(BIN)/ruff check kafkalab tests benchmarks docs/hooks
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict  # not --quiet: it hides the warnings --strict counts; the variable hides Material's end-of-life banner
	$(BIN)/mypy
	$(BIN)/lint-imports
	KAFKALAB=$(BIN)/kafkalab bash scripts/with-docker-engine.sh $(BIN)/python -m pytest -q -p no:cacheprovider

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a 127.0.0.1:8000

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) kafkalab-runs site
