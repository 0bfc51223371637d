"""Forks: a new message file holding the front matter and the first N cells of a
conversation, outputs included, whose front matter says where it came from (``forked_from``:
the file, relative to the fork's folder, and the id of the last cell kept). The original is
only read. ``tce fork`` and JupyterLab's "Fork from here" (``contents/fork_api.py``) both call
``fork``; numbers are those of ``tce list`` (``history.conversation_cells``).
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.runtime.history import conversation_cells

FORKED_FROM = "forked_from"
"""The front matter key of a fork: ``{file: NAME, cell: ID}``."""

FORK_MARK = re.compile(r"\.fork-\d+$")
"""What a fork's default name adds to the name of the file it came from."""


class ForkError(PercentAgentError, ValueError):
    """A fork that cannot be made as asked: a cell number out of range, a name taken."""

    error_kind = Kind.USAGE


def _split_name(name: str) -> tuple[str, str]:
    """``talk.msg.md`` -> (``talk``, ``.msg.md``); ``notes.md`` -> (``notes``, ``.md``);
    ``talk.fork-2.msg.md`` -> (``talk``, ``.msg.md``)."""
    lower = name.lower()
    for suffix in (".msg.md", ".md"):
        if lower.endswith(suffix):
            stem, ext = name[: -len(suffix)], name[-len(suffix) :]
            break
    else:
        stem, dot, last = name.rpartition(".")
        stem, ext = (stem, dot + last) if dot else (name, "")
        if stem.lower().endswith(".msg"):  # a script message file: talk.msg.py
            stem, ext = stem[:-4], stem[-4:] + ext
    return FORK_MARK.sub("", stem), ext


def fork_names(path: Path) -> Any:
    """The default names of a fork of ``path``, in order: ``talk.fork-1.msg.md``,
    ``talk.fork-2.msg.md``, ... beside it (a fork of a fork counts on from the same stem)."""
    stem, ext = _split_name(path.name)
    n = 1
    while True:
        yield path.with_name(f"{stem}.fork-{n}{ext}")
        n += 1


def forked_cells(nb: dict[str, Any], count: int, name: str) -> tuple[dict[str, Any], str]:
    """A copy of ``nb`` cut after its ``count``-th conversation cell (1-based, as ``tce list``
    numbers them), and the id of that cell; ``ForkError`` when there is no such cell."""
    cells = conversation_cells(nb)
    if not 1 <= count <= len(cells):
        raise ForkError(
            f"cell {count}: {name} has {len(cells)} cell{'s' if len(cells) != 1 else ''} "
            "(tce list numbers them from 1)"
        )
    last = cells[count - 1]
    end = next(i for i, c in enumerate(nb["cells"]) if c is last) + 1
    new = {k: v for k, v in nb.items() if k != "cells"}
    new = copy.deepcopy(new)
    new["cells"] = copy.deepcopy(nb["cells"][:end])
    return new, fmt.cell_id(last)


def fork(path: Path, count: int, target: Path | None = None) -> Path:
    """Write the fork of ``path`` up to its ``count``-th cell to ``target`` (None: the first
    free default name beside it) and return where it went. Never writes over a file: a
    ``target`` that exists is a ``ForkError``."""
    nb = fmt.read(path)
    fmt.front_matter(nb)  # broken YAML is as fatal here as in every command
    new, last_id = forked_cells(nb, count, path.name)
    names = iter([target]) if target is not None else fork_names(path)
    for candidate in names:
        origin = os.path.relpath(os.path.abspath(path), os.path.dirname(os.path.abspath(candidate)))
        fmt.set_front_matter(new, FORKED_FROM, {"file": origin, "cell": last_id})
        try:
            fmt.write_text(candidate, fmt.writes(new, path=str(candidate)), exclusive=True)
        except FileExistsError:
            if target is not None:
                raise ForkError(
                    f"{target} exists: a fork never writes over a file (name another with -o)"
                ) from None
            continue
        return candidate
    raise AssertionError("unreachable: the default names never end")


def cell_number(nb: dict[str, Any], cell_id: str) -> int:
    """The 1-based number (as ``tce list`` gives it) of the conversation cell whose id is
    ``cell_id``, in the file's short form or JupyterLab's UUID; ``ForkError`` when none."""
    wanted = set(fmt.short_ids(cell_id))
    for n, cell in enumerate(conversation_cells(nb), start=1):
        if fmt.cell_id(cell) in wanted or cell.get("id") in wanted:
            return n
    raise ForkError(f"cell {cell_id}: not a message or output cell of the file (save it first)")
