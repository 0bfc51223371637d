# The two commands a newcomer runs: `make setup`, then `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: setup test lint bench bench-peers clean

setup:  ## install everything: Debian Chromium, a virtualenv, the package with its test extras
	bash scripts/setup.sh

test:   ## the whole test suite, browser tests included
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench:  ## every benchmark, each against its named peer (run `make bench-peers` once first)
	LLM_BIN=$${LLM_BIN:-$(CURDIR)/.venv-llm/bin/llm} $(BIN)/python -m benchmarks

bench-peers:  ## the peers, for benchmarks only: smolagents, LangGraph and bm25s in .venv, llm in its own venv (it needs openai 3)
	$(BIN)/python -m pip install -q smolagents langgraph bm25s
	[ -x .venv-llm/bin/python ] || $(PYTHON) -m venv .venv-llm
	.venv-llm/bin/python -m pip install -q llm

clean:
	rm -rf $(VENV) .venv-llm build dist jupyter_percent_agent/labextension labextension/lib labextension/node_modules
