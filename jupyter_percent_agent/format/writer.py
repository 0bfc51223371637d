"""Notebook -> text: the writer. Canonical form only (docs/format.md, "Canonical form").

The notebook mapping (``notebook.py``) gives the record of each cell and output; one f-string
(:func:`record_text`) writes a record as::

    #{level} %%[%] Title[^ID]
    [^ID]: [TYPE](LINK) key=value ...

    body

with one blank line between metadata, body and the next heading, the attributes in their
one order (``attrs.emit_meta``), and body lines that would read as a heading escaped with one
backslash (``rules.escape_body``: the reader's own scanner says which).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .attrs import NS, emit_meta
from .notebook import (
    NOTEBOOK_FIELDS,
    Context,
    extra_fields,
    front_matter_block,
    input_record,
    is_front_matter_cell,
    is_preamble_cell,
    join_source,
    notebook_language,
    output_records,
)
from .rules import escape_body, structure

__all__ = ["record_text", "write_notebook"]

# "#" * level, then the input's or the output's marker: _HEADS[out][level]
_HEADS = tuple(tuple("#" * level + marker for level in range(6)) for marker in (" %%", " %%%"))


def record_text(rec: tuple, section: str | None) -> str:
    """One cell or output (a record of ``notebook.py``), ending with a newline."""
    out, level, title, ref, typ, sub, link, struct, attrs, ns, body = rec
    meta = emit_meta(typ, sub, link, struct, attrs, ns)
    head = _HEADS[out][level]
    if title:
        head = f"{head} {title}"
    if not body:
        return f"{head}[^{ref}]\n[^{ref}]: {meta}\n" if meta else f"{head}[^{ref}]\n[^{ref}]:\n"
    if section is not None or "%%" in body:
        body = escape_body(body, section)
    if meta:
        return f"{head}[^{ref}]\n[^{ref}]: {meta}\n\n{body}\n"
    return f"{head}[^{ref}]\n[^{ref}]:\n\n{body}\n"


def write_notebook(nb: Mapping, path: str | None = None, section: str | None = None) -> str:
    """The text of ``nb``; ``section``: the section a plain ``.md``'s messages go under."""
    metadata = dict(nb.get("metadata") or {})
    nbns = metadata.pop(NS, None) or {}
    cells = list(nb.get("cells") or [])
    kept: dict[str, Any] = {}
    minor = nb.get("nbformat_minor")
    if type(minor) is int and minor > 5:  # a notebook from a later nbformat (4.6, ...)
        kept["nbformat_minor"] = minor
    fields = extra_fields(nb, NOTEBOOK_FIELDS)
    if fields:
        kept["fields"] = fields
    if kept:
        metadata[NS] = kept
    fm_source = None
    if cells and is_front_matter_cell(cells[0]):
        fm_source = join_source(cells[0]["source"])
        cells = cells[1:]
    front = front_matter_block(fm_source, metadata)
    preamble = None
    if cells and is_preamble_cell(cells[0]):
        preamble = join_source(cells[0]["source"])
        section = cells[0]["metadata"][NS].get("section") or section
        cells = cells[1:]
    elif section is not None:
        preamble = ""
    level = nbns.get("level", 1)
    if type(level) is not int or not 1 <= level <= 5:
        level = 1
    ctx = Context(notebook_language(metadata), level, section, path)
    ctx.used = used = set()
    for cell in cells:
        md = cell.get("metadata")
        ns = md.get(NS) if md else None
        ref = (ns.get("id") if ns else None) or cell.get("id")
        if ref:
            used.add(ref)
    seen: set[str] = set()
    texts = []
    for cell in cells:
        rec = input_record(cell, ctx, seen)
        texts.append(record_text(rec, section))
        if cell.get("outputs") and cell.get("cell_type") == "code":
            for out in output_records(cell, rec, ctx, seen):
                texts.append(record_text(out, section))
    if section is not None and texts and not any(
            kind == "section" for kind, _pos in structure(preamble or "", 0, section)[0]):
        pre = preamble or ""
        if pre and not pre.endswith("\n"):
            pre += "\n"
        preamble = pre + ("\n" if pre else "") + f"# {section}\n\n"
    parts = []
    if front is not None:
        parts.append(front)
    if preamble:
        if texts and not preamble.endswith("\n"):
            preamble += "\n\n"
        parts.append(preamble)
    elif front is not None and texts:
        parts.append("\n")
    parts.append("\n".join(texts))
    text = "".join(parts)
    if nbns.get("crlf"):
        text = text.replace("\n", "\r\n")
    return text
