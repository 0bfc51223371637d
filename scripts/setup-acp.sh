#!/usr/bin/env bash
# A real third-party ACP agent for the tests: fast-agent, exactly requirements/fast-agent.txt,
# in its own .venv-acp. It needs Python 3.12 or newer while the package supports 3.11, so it
# is never in .venv: this finds a 3.12+ on the machine (never downloads one) and says clearly
# when there is none. The tests that need it skip without it, and fail under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

UV=${UV:-.uv/bin/uv}
VENV=.venv-acp
LOCK=requirements/fast-agent.txt

# The first interpreter that runs and is 3.12+: $ACP_PYTHON, the usual names on PATH, then
# pyenv's and the system's installs directly (a pyenv shim for a version that is installed
# but not selected fails to run, so the shims alone are not enough).
find_python() {
    local candidate
    for candidate in ${ACP_PYTHON:-} python3.13 python3.12 python3 \
            "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 \
            /usr/bin/python3.1[2-9] /usr/local/bin/python3.1[2-9]; do
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            "$candidate" -c 'import sys; print(sys.executable)'
            return 0
        fi
    done
    return 1
}

stamp="$VENV/.installed-from"
want="$(sha256sum "$LOCK" | cut -d' ' -f1)"
if [ -x "$VENV/bin/fast-agent-acp" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    exit 0
fi
if ! python=$(find_python); then
    echo "setup: no Python 3.12 or newer found (tried \$ACP_PYTHON, python3.13, python3.12," \
         "python3, pyenv's and /usr/bin's): the tests with a real ACP agent (fast-agent) will" \
         "be skipped, and fail under CI=true; install one (apt-get install python3.12, or" \
         "pyenv install 3.12) or point ACP_PYTHON at it, then make setup again" >&2
    exit 0
fi
start=$SECONDS
rm -rf "$VENV"
UV_PYTHON_DOWNLOADS=never "$UV" venv -q "$VENV" --python "$python"
UV_PYTHON_DOWNLOADS=never UV_COMPILE_BYTECODE=1 "$UV" pip sync -q --python "$VENV/bin/python" "$LOCK"
echo "$want" >"$stamp"
echo "setup: fast-agent for the ACP tests in $VENV ($("$VENV/bin/python" --version)," \
     "$((SECONDS - start)) s)"
