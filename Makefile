# The two commands a newcomer runs: `make setup`, then `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
UV     := .uv/bin/uv

.PHONY: setup test test-js test-latest lock lint bench bench-peers clean

setup:  ## install everything: Debian Chromium, uv, then exactly uv.lock in .venv (package, front end, test extras)
	bash scripts/setup.sh

test:   ## the whole test suite, browser tests included
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

test-js:  ## the labextension's unit tests (jest: the ATTP reader, the agents menu)
	cd labextension && PATH=$(CURDIR)/$(BIN):$$PATH jlpm test

test-latest:  ## the same suite on the newest packages pyproject.toml allows, in a fresh .venv-latest
	bash scripts/test-latest.sh

lock:   ## refresh uv.lock to the newest allowed packages; then `make setup test`, and commit it alone
	UV_PYTHON_DOWNLOADS=never $(UV) lock --upgrade --python $(PYTHON)

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench:  ## every benchmark, each against its named peer (run `make bench-peers` once first)
	LLM_BIN=$${LLM_BIN:-$(CURDIR)/.venv-llm/bin/llm} $(BIN)/python -m benchmarks

bench-peers:  ## the peers, for benchmarks only: smolagents, LangGraph and bm25s in .venv, llm in its own venv (it needs openai 3)
	VIRTUAL_ENV=$(VENV) $(UV) pip install -q smolagents langgraph bm25s
	[ -x .venv-llm/bin/python ] || $(PYTHON) -m venv .venv-llm
	.venv-llm/bin/python -m pip install -q llm

clean:
	rm -rf $(VENV) .venv-latest .venv-llm .uv build dist jupyter_percent_agent/labextension labextension/lib labextension/node_modules
