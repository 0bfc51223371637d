"""Records -> text: the writer. Canonical form only (docs/format.md, "Canonical form").

A cell is written as::

    #{level} %%[%] Title[^ID]
    [^ID]: [TYPE](LINK) key=value ...

    body

with one blank line between metadata, body and the next heading, body lines that would read
as a heading escaped with one backslash, and an unclosed fence closed (the reader is told so
by the caller's ``close_fence`` attribute).
"""

from __future__ import annotations

from .attrs import emit_meta
from .lines import escape_body
from .parse import Document

__all__ = ["emit"]


def emit(doc: Document) -> str:
    """The whole text of ``doc``."""
    parts = []
    if doc.front_matter is not None:
        parts.append(doc.front_matter)
    preamble = doc.preamble
    if preamble:
        if doc.records and not preamble.endswith("\n"):
            preamble += "\n\n"
        parts.append(preamble)
    elif doc.front_matter is not None and doc.records:
        parts.append("\n")
    section = doc.section
    out: list[str] = []
    append = out.append
    for rec in doc.records:
        # one cell (or output), ending with a newline; this loop runs once per record
        head = "#" * rec.level + (" %%%" if rec.out else " %%")
        if rec.title:
            head += " " + rec.title
        ref = rec.ref
        meta = emit_meta(rec.type, rec.sub, rec.link, rec.attrs)
        body = rec.body
        if body:
            if section is not None or "%%" in body:
                body = escape_body(body, section)[0]
            append(f"{head}[^{ref}]\n[^{ref}]: {meta}\n\n{body}\n" if meta else
                   f"{head}[^{ref}]\n[^{ref}]:\n\n{body}\n")
        else:
            append(f"{head}[^{ref}]\n[^{ref}]: {meta}\n" if meta else
                   f"{head}[^{ref}]\n[^{ref}]:\n")
    parts.append("\n".join(out))
    text = "".join(parts)
    if doc.crlf:
        text = text.replace("\n", "\r\n")
    return text
