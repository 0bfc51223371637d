"""The YAML front matter of a message file, read and changed in place: the one place that
knows it is the notebook's first raw cell."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .notebook import FRONT_MATTER_ID, is_front_matter_cell, join_source
from .safe_yaml import load_yaml

__all__ = ["front_matter", "set_front_matter"]


def _front_cell(nb: Mapping) -> Mapping | None:
    cells = nb.get("cells") or []
    if cells and is_front_matter_cell(cells[0]):
        return cells[0]
    return None


def front_matter(nb: Mapping) -> dict:
    """The parsed YAML front matter (``agents``, ``default_agent``, ...), ``{}`` if none.

    YAML that does not parse raises :class:`FormatError` with the file's line number: a
    broken ``agents:`` block must not silently become "no agents".
    """
    cell = _front_cell(nb)
    if cell is None:
        return {}
    text = join_source(cell["source"])
    inner = text.split("\n")[1:-1]
    # line 2: the opening "---" is line 1 of the file
    data = load_yaml("\n".join(inner), line=2, what="the front matter")
    return data if isinstance(data, dict) else {}


def set_front_matter(nb: dict, key: str, value: Any) -> None:
    """Set one top-level key of the front matter, keeping the rest of the YAML as written.

    ``value=None`` removes the key. A front matter cell is created when there is none.
    """
    import yaml

    cell: Any = _front_cell(nb)  # a cell of ``nb``: changed in place
    if cell is None:
        if value is None:
            return
        cell = {"cell_type": "raw", "id": FRONT_MATTER_ID, "metadata": {},
                "source": "---\n---"}
        nb.setdefault("cells", []).insert(0, cell)
    lines = join_source(cell["source"]).split("\n")
    body = lines[1:-1]
    start = None
    for i, line in enumerate(body):
        if re.match(rf"{re.escape(key)}[ \t]*:", line) or re.match(
            rf"[\"']{re.escape(key)}[\"'][ \t]*:", line
        ):
            start = i
            break
    new = []
    if value is not None:
        new = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True,
                             default_flow_style=False, width=1000).rstrip("\n").split("\n")
    if start is None:
        body.extend(new)
    else:
        end = start + 1
        while end < len(body) and (body[end][:1] in (" ", "\t", "-") or not body[end].strip()):
            if body[end][:1] == "-" and not body[end].startswith("- ") and body[end] != "-":
                break
            end += 1
        body[start:end] = new
    cell["source"] = "\n".join([lines[0], *body, lines[-1]])
