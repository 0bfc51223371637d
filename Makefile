# The two commands a newcomer runs: `make setup`, then `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: setup test lint bench clean

setup:  ## install everything: Debian Chromium, a virtualenv, the package with its test extras
	bash scripts/setup.sh

test:   ## the whole test suite, browser tests included
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench:  ## every benchmark, each against its named peer
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build dist jupyter_percent_agent/labextension labextension/lib labextension/node_modules
