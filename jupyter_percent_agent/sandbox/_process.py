"""Starting, killing and reaping sandbox worker processes (parent side).

Workers are spawned (``subprocess`` uses vfork/exec, never a bare fork of a threaded
parent) as ``python -I -S -B``: isolated mode, no site processing, no bytecode writes. They get
a minimal environment with no secrets, no inherited descriptors beyond their three pipes, the
root directory as working directory, and a session (so a process group) of their own that the
parent kills as a whole.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)

# Runs the child without executing the package __init__ files (they may grow heavy imports);
# from tools it imports only the pure result rules (results.py).
_BOOT = """\
import sys, types
root, extra = sys.argv[1], sys.argv[2:]
sys.path[:0] = [root, *extra]
for name, sub in (("jupyter_percent_agent", ""), ("jupyter_percent_agent.sandbox", "/sandbox"),
                  ("jupyter_percent_agent.tools", "/tools")):
    mod = types.ModuleType(name)
    mod.__path__ = [root + "/jupyter_percent_agent" + sub]
    sys.modules[name] = mod
from jupyter_percent_agent.sandbox._child import main
main()
"""

CHILD_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
"""The whole environment of a worker: nothing inherited from the host process."""


def _library_paths() -> list[str]:
    # RestrictedPython's directory, found without importing it in the parent.
    spec = importlib.util.find_spec("RestrictedPython")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("RestrictedPython is not installed")
    return [str(Path(next(iter(spec.submodule_search_locations))).parent)]


_COMMAND: list[str] | None = None


def command() -> list[str]:
    """The worker command line."""
    global _COMMAND
    if _COMMAND is None:
        _COMMAND = [sys.executable, "-I", "-S", "-B", "-c", _BOOT, _PACKAGE_ROOT,
                    *_library_paths()]  # fmt: skip
    return _COMMAND


def spawn() -> subprocess.Popen[bytes]:
    """Start one worker; it reports ``ready`` on its stdout once it can take a job."""
    return subprocess.Popen(
        command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
        close_fds=True,
        start_new_session=True,
        env=CHILD_ENV,
        cwd="/",
    )


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker's whole process group (it leads its own session)."""
    if proc.returncode is not None:
        return  # reaped: its pid (and group id) may belong to someone else now
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


def reap_later(proc: subprocess.Popen[bytes]) -> None:
    """Wait for a killed worker without blocking the caller."""
    threading.Thread(target=proc.wait, name="sandbox-reaper", daemon=True).start()


def discard(proc: subprocess.Popen[bytes], *, wait: float = 0.5) -> None:
    """Kill, close and reap a worker (reaping handed to a thread if it is slow)."""
    kill_group(proc)
    close_pipes(proc)
    deadline = time.monotonic() + wait
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            reap_later(proc)
            return
        time.sleep(0.0005)
