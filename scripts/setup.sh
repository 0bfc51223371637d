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
echo "setup: done. Activate with: source .venv/bin/activate"
