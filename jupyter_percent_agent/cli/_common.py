"""What the chat commands share: exit codes, one-line failures, resolving ITEM paths.

Imports stay light (click, the format core): ``tce list`` must start fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

EXIT_OK = 0
EXIT_MODEL = 1        # every model (and retry) failed: an [error] output was recorded
EXIT_USAGE = 2        # bad options or selections, --force needed, nothing to read
EXIT_FILE = 3         # the message file (or an included one) is malformed: left untouched
EXIT_TOOLS = 4        # tools did not load, a tool or the sandbox failed
EXIT_AGENT = 5        # unknown agent, or an agent definition that does not parse
EXIT_TRUST = 6        # refused: the file asked for something only a trusted folder may have
EXIT_INTERRUPTED = 130  # Ctrl-C: the file holds whatever was complete (see docs/cli.md)


def fail(message: str, code: int) -> NoReturn:
    """Print one line to stderr and exit with ``code``."""
    click.echo(f"tce: {message}", err=True)
    sys.exit(code)


def resolve_item(item: str) -> Path:
    """A message file path from ITEM: ``.msg.md`` optional."""
    p = Path(item)
    if p.exists() or p.name.endswith(".md"):
        return p
    return p.with_name(p.name + ".msg.md")


def read_or_fail(path: Path) -> dict:
    """Read a message file, or exit naming the line that is wrong."""
    from jupyter_percent_agent import format as fmt

    try:
        nb = fmt.read(path)
        fmt.front_matter(nb)  # broken YAML there is as fatal as a broken cell (as in tce chat)
        return nb
    except FileNotFoundError:
        fail(f"{path}: no such file", EXIT_USAGE)
    except fmt.RefusedFile as exc:
        fail(str(exc), EXIT_TRUST)
    except fmt.FormatError as exc:
        reason = getattr(exc, "reason", None) or str(exc)
        where = f"{path}:{exc.line}: " if getattr(exc, "line", None) else f"{path}: "
        fail(reason if reason.startswith(str(path)) else where + reason, EXIT_FILE)
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        fail(f"{path}: {exc}", EXIT_FILE)
