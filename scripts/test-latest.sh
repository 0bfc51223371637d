#!/usr/bin/env bash
# The whole suite on the newest packages pyproject.toml's ranges allow (not the lock): what a
# user who runs `pip install jupyter-percent-agent` today gets. A fresh .venv-latest every
# time, so that nothing of an earlier run hides a new release's change. Not part of CI (it
# needs the registry at its newest); run it before refreshing the lock (`make lock`).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
UV=.uv/bin/uv
[ -x "$UV" ] || { echo "test-latest: run make setup first (it installs uv)" >&2; exit 2; }
export UV_PYTHON_DOWNLOADS=never UV_COMPILE_BYTECODE=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

rm -rf .venv-latest
"$UV" venv -q --python "$PYTHON" .venv-latest
# --resolution highest: the newest release of every package, direct or not, in its range;
# the build requirements too (no build constraints here).
VIRTUAL_ENV=.venv-latest "$UV" pip install -q --resolution highest --no-config -e ".[test]"
VIRTUAL_ENV=.venv-latest "$UV" pip list --format freeze > .venv-latest/versions.txt
echo "test-latest: $(wc -l < .venv-latest/versions.txt) packages, versions in .venv-latest/versions.txt"
.venv-latest/bin/python -m compileall -q jupyter_percent_agent >/dev/null
PATH="$PWD/.venv-latest/bin:$PATH" .venv-latest/bin/ruff check .
PATH="$PWD/.venv-latest/bin:$PATH" .venv-latest/bin/python -m pytest "$@"
