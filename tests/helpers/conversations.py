"""Reading back what a test's conversation file holds: its message cells and their replies."""

from __future__ import annotations

from pathlib import Path

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime import history as hist


def cells(path: Path) -> list[dict]:
    """The conversation cells of the message file ``path`` (front matter and preamble left
    out), as the runtime sees them."""
    return hist.conversation_cells(fmt.read(path))


def replies(cell: dict) -> list[dict]:
    """The outputs of ``cell`` that are an agent's replies."""
    return [o for o in cell.get("outputs", []) if fmt.output_kind(o) == "reply"]


def messages(nb: dict) -> list[dict]:
    """The cells of the notebook ``nb`` other than its front matter and preamble."""
    return [c for c in nb["cells"] if c["id"] not in ("front-matter", "preamble")]
