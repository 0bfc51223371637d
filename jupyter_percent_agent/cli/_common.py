"""What the commands share: exit codes (from the package's one table), one-line failures,
resolving ITEM paths.

Imports stay light (click, the format core): ``tce list`` must start fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from jupyter_percent_agent.errors import (
    EXIT_OK,
    TABLE,
    Kind,
    PercentAgentError,
    exit_code,
    report,
)
from jupyter_percent_agent.outcome import RunStatus

# The exit codes are those of the package's one table (jupyter_percent_agent.errors.TABLE).
EXIT_MODEL = exit_code(Kind.MODEL)              # 1: every model (and retry) failed
EXIT_FAILED = exit_code(Kind.FAILED)            # 1: a workflow failed past its error handling
EXIT_USAGE = exit_code(Kind.USAGE)              # 2: bad options or selections, nothing to read
EXIT_FILE = exit_code(Kind.BAD_FILE)            # 3: a malformed file: left untouched
EXIT_TOOLS = exit_code(Kind.TOOL)               # 4: a tool did not load or failed, or the sandbox
EXIT_AGENT = exit_code(Kind.AGENT)              # 5: unknown agent, or a definition that is wrong
EXIT_TRUST = exit_code(Kind.REFUSED)            # 6: refused: only a trusted folder may have it
EXIT_INTERRUPTED = exit_code(Kind.INTERRUPTED)  # 130: Ctrl-C, what was complete is kept

__all__ = [
    "EXIT_AGENT",
    "EXIT_FAILED",
    "EXIT_FILE",
    "EXIT_FOR",
    "EXIT_INTERRUPTED",
    "EXIT_MODEL",
    "EXIT_OK",
    "EXIT_TOOLS",
    "EXIT_TRUST",
    "EXIT_USAGE",
    "ask",
    "fail",
    "fail_for",
    "failed_run_exit",
    "read_or_fail",
    "resolve_item",
    "run_exit_code",
]

# How a task run's status ends the command.
EXIT_FOR: dict[RunStatus, int] = {RunStatus.OK: EXIT_OK, RunStatus.ERROR: EXIT_FAILED,
                                  RunStatus.INTERRUPTED: EXIT_INTERRUPTED}


def run_exit_code(result: Any) -> int:
    """How one task run ends the command: its status's code, but a run a trust rule refused
    exits as every refusal does (6), so a script tells "trust the folder" from "failed"."""
    error_type = (result.error or {}).get("error_type")
    if result.status is RunStatus.ERROR and error_type == TABLE[Kind.REFUSED].error_type:
        return EXIT_TRUST
    return EXIT_FOR[result.status]


def failed_run_exit(agent: str | None) -> int:
    """The exit code of a turn that ended in error: a model's failure when an agent ran, else
    a tool's (a ``[tool_call]`` cell, which calls no model)."""
    return EXIT_MODEL if agent else EXIT_TOOLS


def ask(question: str, *, default: bool = False, err: bool = False,
        interrupted: str = "interrupted") -> bool | None:
    """The user's yes or no to ``question`` (an empty answer is ``default``); None when
    standard input has no more answers (``< /dev/null``, a short pipe, Ctrl-D), which the
    caller says in its own words. Ctrl-C exits 130 with ``tce: INTERRUPTED``. (click's
    confirm turns both into "Aborted!" and exit 1.)"""
    click.echo(f"{question} {'[Y/n]' if default else '[y/N]'}: ", nl=False, err=err)
    try:
        line = sys.stdin.readline()
    except KeyboardInterrupt:
        click.echo(err=err)
        fail(interrupted, EXIT_INTERRUPTED)
    if not line:
        click.echo(err=err)
        return None
    answer = line.strip().lower()
    return default if not answer else answer in ("y", "yes")


def fail(message: str, code: int) -> NoReturn:
    """Print one line to stderr and exit with ``code``."""
    click.echo(f"tce: {message}", err=True)
    sys.exit(code)


def fail_for(exc: BaseException, *, path: Path | str | None = None) -> NoReturn:
    """Exit the way the package's table says for ``exc`` (one line naming where, its
    kind's exit code); an error no kind describes is a bug, raised again."""
    shown = report(exc, path=None if path is None else str(path))
    if shown is None:
        raise exc
    fail(shown.message, shown.exit_code)


def resolve_item(item: str) -> Path:
    """A message file path from ITEM: ``.msg.md`` optional (a script ``NAME.msg.py`` as is)."""
    from jupyter_percent_agent import format as fmt

    p = Path(item)
    if p.exists() or p.name.endswith(".md") or fmt.is_script_path(p.name):
        return p
    return p.with_name(p.name + ".msg.md")


def read_or_fail(path: Path) -> dict:
    """Read a message file, or exit naming the line that is wrong (or saying that it is a
    notebook, or no Markdown at all)."""
    from jupyter_percent_agent import format as fmt
    try:
        fmt.check_markdown(path)
        nb = fmt.read(path)
        fmt.front_matter(nb)  # broken YAML there is as fatal as a broken cell (as in tce chat)
        return nb
    except (PercentAgentError, OSError, UnicodeDecodeError) as exc:
        fail_for(exc, path=path)
