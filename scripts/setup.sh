#!/usr/bin/env bash
# Set-up for a fresh machine: Debian's Chromium for the browser tests, uv (from the package
# registry), then exactly the locked set (uv.lock) in .venv: the package, editable, with its
# front end built, and its test extras; then a real ACP agent for the tests in its own
# .venv-acp (scripts/setup-acp.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
# uv itself, pinned: it reads the lock, so a newer uv could read it differently.
UV_VERSION=${UV_VERSION:-0.13.9}
UV=.uv/bin/uv

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    else
        echo "setup: Chromium is missing (browser tests will be skipped): sudo apt-get install chromium" >&2
    fi
fi

if ! { [ -x "$UV" ] && [ "$("$UV" --version | cut -d' ' -f2)" = "$UV_VERSION" ]; }; then
    rm -rf .uv
    "$PYTHON" -m venv .uv
    .uv/bin/python -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
fi

# The machine's Python (never a downloaded one), the lock as it is (--locked: a lock that no
# longer matches pyproject.toml is an error, not a silent re-resolve), byte-compiled as pip
# does (these machines set PYTHONDONTWRITEBYTECODE: without it every kernel start compiles
# ipykernel's sources again, seconds). Playwright drives Debian's Chromium; it must never
# try to download a browser.
export UV_PYTHON_DOWNLOADS=never UV_COMPILE_BYTECODE=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
"$UV" sync --locked --extra test --python "$PYTHON"
# Byte-compile the package, as a wheel install would: an editable install leaves that to the
# first import, which never writes it where PYTHONDONTWRITEBYTECODE is set (as on these
# machines), and then every `tce` run and kernel start compiles the sources again (~40 ms).
.venv/bin/python -m compileall -q jupyter_percent_agent >/dev/null
bash scripts/setup-acp.sh
echo "setup: done. Activate with: source .venv/bin/activate"
