"""``[async](FILE)`` cells: a long-running result that lands in FILE.

Running the cell asks its agent and writes the reply into FILE (atomically); once FILE holds
a result, running the cell again shows it without calling any model. FILE is named by the
file and receives model text, so it must be a ``.md`` file inside the file's own folder, out of
version-control, hidden and ``toolbox/`` folders (``trust.resolve_inside``): never something
that is later imported or run. It is read and written as checked (no link followed along it)
and may not have another hard link.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.masking import mask
from jupyter_percent_agent.runtime.run import Run


def async_file(cell: Mapping[str, Any], base_dir: Path) -> Path | None:
    """The FILE of ``[async](FILE)``, inside the message file's folder (``TrustError``)."""
    link = fmt.cell_link(cell)
    if link is None:
        return None
    return trust.resolve_inside(base_dir, link, what="[async] file", suffix=".md",
                                one_link=True)


def landed(cell: Mapping[str, Any], run: Run, base_dir: Path) -> bool:
    """Show FILE's result when it has landed (True: nothing more to run)."""
    path = async_file(cell, base_dir)
    if path is None:
        return False
    try:
        text = fmt.read_text(path, real=True, one_link=True)
    except FileNotFoundError:
        return False
    if not text.strip():
        return False
    run.answer(text)
    run.emit(fmt.reply_output(text, agent="async", out_id=run.next_output_id(),
                              attrs={"file": fmt.cell_link(cell), "status": "done"}))
    return True


def land(cell: Mapping[str, Any], run: Run, base_dir: Path) -> None:
    """Write the reply of an ``[async](FILE)`` cell into FILE (atomically)."""
    path = async_file(cell, base_dir)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt.write_text(path, mask(run.reply), real=True)
