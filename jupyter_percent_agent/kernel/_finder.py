"""Which conversation a cell belongs to, when the client does not say (nbclient).

JupyterLab names the notebook (``JPY_SESSION_NAME``). nbclient, and so ``jupytext
--execute``, papermill and ``jupyter nbconvert --execute``, sends only a cell's source, with
the kernel started in the notebook's folder. The kernel then looks for the cell by its text in
the conversations of its working folder: message files (``NAME.msg.md``, ``NAME.msg.py``..., a
``.md`` with messages), and, only when none has it, notebooks on the agent kernel (an
``.ipynb`` converted from one, executed where its message file is not). A file must also hold
every cell this session ran before (the cells of one run come from one notebook). One file
(or paired twins, ``x.msg.md`` and ``x.msg.py``, or copies, such as the ``out.ipynb`` papermill
writes before it runs a cell, with the same cells): that one. None: the
cell is a conversation of its own (``jupyter console``). Several: one line saying so, and
nothing runs.

Which match confirms the file, and so lets its folder's trust apply (``confirms_trust``): a
message file of the working folder itself, the one found (twins count as one). A notebook
(``.ipynb``) never confirms: it is what runners write (papermill writes its output copy into
its working folder before it runs the first cell; nbconvert and ``jupytext --to ipynb`` leave
theirs there for the next run), and a cloned notebook's copy in a trusted project must not
borrow the project's trust. Nor does a file outside the folder: only the working folder is
looked through, and a link to a file in another folder is never read. No match confirms
nothing. An unconfirmed conversation still runs, untrusted (``trust.withholding``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.errors import PercentAgentError
from jupyter_percent_agent.kernel._notebook import joined
from jupyter_percent_agent.trust.withholding import Withheld

MAX_BYTES = 20_000_000
"""Files larger than this are not read while looking (no conversation is that large)."""


class AmbiguousCell(PercentAgentError):
    """The cell's text is in several conversations of the folder: the kernel cannot tell
    which one is running (nothing runs)."""


def _is_candidate_name(name: str) -> bool:
    low = name.lower()
    return low.endswith((".md", ".ipynb")) or fmt.is_script_path(name)


_SEEN: dict[Path, tuple[tuple[int, int], list[dict[str, Any]] | None]] = {}
"""What ``_cells`` found in a file, by its modification time and size: a folder is looked
through for every cell nbclient runs, and its files seldom change meanwhile."""


def _cells(path: Path) -> list[dict[str, Any]] | None:
    """The input cells of ``path`` when it is a conversation, else None."""
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    seen = _SEEN.get(path)
    if seen is not None and seen[0] == stamp:
        return seen[1]
    cells = _read_cells(path, st.st_size)
    _SEEN[path] = (stamp, cells)
    return cells


def _read_cells(path: Path, size: int) -> list[dict[str, Any]] | None:
    try:
        if not path.is_file() or size > MAX_BYTES:
            return None
        text = fmt.read_text(path)
    except (OSError, PercentAgentError, UnicodeDecodeError):
        return None
    name = path.name
    try:
        if name.lower().endswith(".ipynb"):
            nb = joined(json.loads(text))
            spec = (nb.get("metadata") or {}).get("kernelspec") or {}
            if not isinstance(spec, dict) or spec.get("name") != fmt.DEFAULT_KERNELSPEC["name"]:
                return None
        elif fmt.is_message_path(name) or fmt.is_script_path(name) or fmt.is_message_text(text):
            nb = fmt.reads(text, path=str(path))
        else:
            return None
    except (ValueError, PercentAgentError, RecursionError):
        return None
    cells = nb.get("cells")
    return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else None


def _texts(cells: list[dict[str, Any]]) -> set[str]:
    return {fmt.message_text(c) for c in cells if c.get("cell_type") == "code"}


def confirms_trust(found: Path | None) -> bool:
    """Whether ``found`` (what ``find_conversation`` returned) confirms the conversation's
    file, so that its folder's trust applies: a message file, never a notebook a runner may
    have written, never no file."""
    return found is not None and not found.name.lower().endswith(".ipynb")


def find_conversation(folder: Path, source: str, ran: Iterable[str] = ()) -> Path | None:
    """The conversation of ``folder`` that holds a cell whose text is ``source`` (and every
    text of ``ran``); None when none does. ``AmbiguousCell`` when several do."""
    try:
        names = sorted(n for n in os.listdir(folder) if _is_candidate_name(n))
    except OSError:
        return None
    wanted = {source, *ran}
    # twins (x.msg.md, x.msg.py) and copies (papermill's out.ipynb, written before it runs
    # the first cell) are one conversation
    forms: dict[tuple[tuple[Any, str], ...], Path] = {}
    notebooks: dict[tuple[tuple[Any, str], ...], Path] = {}
    for name in names:
        cells = _cells(folder / name)
        if cells is not None and wanted <= _texts(cells):
            form = tuple((c.get("id"), fmt.message_text(c)) for c in cells)
            kept = notebooks if name.lower().endswith(".ipynb") else forms
            kept.setdefault(form, folder / name)
    # a message file, not the .ipynb paired with it
    found = list(forms.values()) or list(notebooks.values())
    if len(found) > 1:
        shown = ", ".join(p.name for p in found[:4]) + (" ..." if len(found) > 4 else "")
        raise AmbiguousCell(
            f"this cell's text is in {len(found)} conversations of {folder} ({shown}): the "
            f"kernel cannot tell which one runs; run the file with tce exec FILE, or keep one "
            f"copy in the folder"
        )
    return found[0] if found else None


def conversation_by_text(folder: Path, source: str, ran: Iterable[str] = ()
                         ) -> tuple[Path | None, Withheld | None]:
    """``find_conversation``, and why trust is withheld when the match does not confirm the
    file (``confirms_trust``). ``AmbiguousCell`` as it."""
    found = find_conversation(folder, source, ran)
    if confirms_trust(found):
        return found, None
    if found is None:
        return None, Withheld(f"the runner named no file and no message file of {folder} "
                              "holds this cell", "tce exec FILE")
    return found, Withheld(
        f"the runner named no file and only the notebook {found.name} holds this cell, which "
        "may be a copy a runner wrote", f"tce exec on its message file (jupytext --to .msg.md "
        f"{found.name} makes one)")
