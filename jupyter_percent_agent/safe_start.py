"""How our own Python processes start: never importing from the folder they run in.

``python -m X`` puts the working folder first on ``sys.path``, and so does an empty or relative
entry of ``PYTHONPATH`` (``PYTHONPATH=":/x"`` names the working folder, even under ``-P``). A
folder that ships a file named like any module the process imports (the standard library and
our dependencies included, ``sitecustomize``, the jupytext start-up hook that a ``.pth`` file
imports before any of our code) would then run it in our process, with the user's keys.

So each of our Python processes runs with ``-P`` (the working folder is not put on
``sys.path``) and an environment whose ``PYTHONPATH`` keeps only its absolute entries: the
user's own folders and user site-packages are trusted and stay. A process we spawn gets both
from the start (:func:`python_command`, :func:`safe_env`). A process someone else starts in a
folder we do not choose (the Agent kernel: JupyterLab or any jupyter_client starts it in the
notebook's folder, with the server's environment) is started isolated by its kernelspec::

    python -I -m jupyter_percent_agent.safe_start jupyter_percent_agent.kernel -f FILE

``-I`` reads nothing from the environment or the working folder, so only installed code runs;
:func:`main` then replaces that interpreter (same process id, so signals and the kernel
manager's bookkeeping still hold) by ``python -P -m jupyter_percent_agent.kernel -f FILE``
with :func:`safe_env`, which brings back everything of the user's environment but the entries
that would name the folder.

Standard library only; nothing else of the package is imported here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import NoReturn

SAFE_PATH_FLAG = "-P"
OUR_MODULES = "jupyter_percent_agent."


def clean_pythonpath(value: str) -> str:
    """``PYTHONPATH`` without its empty and relative entries (they name the working folder)."""
    return os.pathsep.join(p for p in value.split(os.pathsep) if os.path.isabs(p))


def safe_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: this process's) for one of our Python processes: its
    ``PYTHONPATH`` cleaned, and dropped when nothing is left of it."""
    env = dict(os.environ if env is None else env)
    if "PYTHONPATH" in env:
        kept = clean_pythonpath(env["PYTHONPATH"])
        if kept:
            env["PYTHONPATH"] = kept
        else:
            del env["PYTHONPATH"]
    return env


def python_command(module: str, *args: str) -> list[str]:
    """The command line that runs ``module`` in this interpreter, the working folder left
    off ``sys.path`` (to be started with :func:`safe_env`)."""
    return [sys.executable, SAFE_PATH_FLAG, "-m", module, *args]


def imports_from_working_folder() -> bool:
    """Whether this process may have imported from the folder it runs in: it was started
    without ``-P`` (or ``PYTHONSAFEPATH``), or with an empty or relative entry in the
    ``PYTHONPATH`` it read. (An absolute entry naming the folder is the user's choice, as is
    an editable install of a project started in its own folder.)"""
    if not sys.flags.safe_path:
        return True
    if sys.flags.ignore_environment:
        return False
    pythonpath = os.environ.get("PYTHONPATH", "")
    return clean_pythonpath(pythonpath) != pythonpath


def main(argv: list[str] | None = None) -> NoReturn:
    """``python -I -m jupyter_percent_agent.safe_start MODULE [ARGS...]``: become
    ``python -P -m MODULE ARGS`` in the user's environment, cleaned (:func:`safe_env`)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or not args[0].startswith(OUR_MODULES):
        sys.exit("usage: python -I -m jupyter_percent_agent.safe_start "
                 "jupyter_percent_agent.MODULE [ARGS...]")
    command = python_command(args[0], *args[1:])
    os.execve(command[0], command, safe_env())


if __name__ == "__main__":
    main()
