# The two commands a newcomer runs: `make setup`, then `make test`.
# While changing code: `make test-fast` after every change, `make test` before pushing.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
UV     := .uv/bin/uv
PYTEST := $(BIN)/python -m pytest

.PHONY: setup test test-fast test-js lint-js test-latest lock lock-acp lint bench bench-peers clean

setup:  ## install everything: Debian Chromium, uv, exactly uv.lock in .venv (package, front end, test extras), fast-agent in .venv-acp
	bash scripts/setup.sh

test-fast:  ## ruff on the whole tree, then tests/unit (no process, server or network): under a minute
	$(BIN)/ruff check .
	$(PYTEST) -q tests/unit

# The integration tier runs on two workers, a file to a worker (a module's fixtures, such as the
# wheel the packaging tests build, are made once); the browser tests share one JupyterLab and
# run alone after it, then the labextension's lint checks and jest tests. Every tier runs even
# when one fails; the target fails if any did.
test:   ## the whole test suite, browser tests included
	$(BIN)/ruff check .
	status=0; \
	$(PYTEST) tests/unit || status=1; \
	$(PYTEST) -n 2 --dist loadfile tests/integration --ignore=tests/integration/browser || status=1; \
	$(PYTEST) tests/integration/browser || status=1; \
	$(MAKE) --no-print-directory test-js || status=1; \
	exit $$status

test-js: lint-js  ## the labextension's checks, then its unit tests (jest: the ATTP reader, agents, URL policy, Jarvis tags, live state)
	cd labextension && PATH=$(CURDIR)/$(BIN):$$PATH jlpm test

lint-js:  ## the labextension's eslint, prettier and stylelint checks, as the extension template configures them
	cd labextension && PATH=$(CURDIR)/$(BIN):$$PATH jlpm lint:check

test-latest:  ## the same suite on the newest packages pyproject.toml allows, in a fresh .venv-latest
	bash scripts/test-latest.sh

lock:   ## refresh uv.lock to the newest allowed packages; then `make setup test`, and commit it alone
	UV_PYTHON_DOWNLOADS=never $(UV) lock --upgrade --python $(PYTHON)

lock-acp:  ## resolve requirements/fast-agent.in (the real ACP agent the tests drive, Python 3.12+) into requirements/fast-agent.txt
	UV_PYTHON_DOWNLOADS=never $(UV) pip compile -q requirements/fast-agent.in --python-version 3.12 \
		--python-platform x86_64-unknown-linux-gnu --no-annotate --custom-compile-command "make lock-acp" \
		-o requirements/fast-agent.txt

lint:  ## ruff on the Python, then eslint, prettier and stylelint on the labextension; each runs even when one fails
	status=0; \
	$(BIN)/ruff check . || status=1; \
	$(BIN)/ruff format --check . || status=1; \
	$(MAKE) --no-print-directory lint-js || status=1; \
	exit $$status

bench:  ## every benchmark, each against its named peer (run `make bench-peers` once first)
	LLM_BIN=$${LLM_BIN:-$(CURDIR)/.venv-llm/bin/llm} $(BIN)/python -m benchmarks

bench-peers:  ## the peers, for benchmarks only: smolagents, LangGraph and bm25s in .venv, llm in its own venv (it needs openai 3)
	VIRTUAL_ENV=$(VENV) $(UV) pip install -q smolagents langgraph bm25s
	[ -x .venv-llm/bin/python ] || $(PYTHON) -m venv .venv-llm
	.venv-llm/bin/python -m pip install -q llm

clean:
	rm -rf $(VENV) .venv-latest .venv-llm .venv-acp .uv build dist jupyter_percent_agent/labextension labextension/lib labextension/node_modules
