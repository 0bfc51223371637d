#!/usr/bin/env bash
# Set-up for a fresh machine: Debian's Chromium for the browser tests, a virtualenv in
# .venv, and the package (editable, front end built) with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    else
        echo "setup: Chromium is missing (browser tests will be skipped): sudo apt-get install chromium" >&2
    fi
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# Playwright drives Debian's Chromium; it must never try to download a browser.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
.venv/bin/python -m pip install -q -e ".[test]"
# Byte-compile the package, as a wheel install would: an editable install leaves that to the
# first import, which never writes it where PYTHONDONTWRITEBYTECODE is set (as on these
# machines), and then every `tce` run and kernel start compiles the sources again (~40 ms).
.venv/bin/python -m compileall -q jupyter_percent_agent >/dev/null
echo "setup: done. Activate with: source .venv/bin/activate"
