"""Text -> notebook: the reader. One pass of the rules over the text, then the mapping.

The pass runs the scanner the rules compose (``rules.scanner``) over the whole text once and
dispatches on the name of the rule each match is for: a ``cell`` heading closes the body of
the cell before it and opens its own, an ``escape`` marks a body line to unescape, a
``block`` (a closed fence) is skipped whole, an ``open`` fence ends the scan (the rest of the
text is its body: the scan stops there, which keeps it linear). When a cell's end is known,
its heading, footnote and body (the rules of ``rules.py``) make a record (``record.Record``,
the writer's too), handed to the notebook mapping (``notebook.py``); a cell with no valid id
of its own gets one made up, which must not be one the text gives further down.

No I/O here: ``read`` (``__init__.py``) reads the file.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Any, Final

from .attrs import NS, AttrError, parse_meta
from .detect import front_matter_end, is_message_path, messages_setting, where
from .errors import FormatError
from .lines import fence_opens
from .notebook import (
    FRONT_MATTER_ID,
    PREAMBLE_ID,
    Context,
    cell_ref,
    input_cell,
    notebook,
    notebook_language,
    notebook_metadata,
)
from .outputs import add_output
from .record import Record, make_record
from .rules import (
    INPUT_TYPES,
    SKIP_BLANK,
    body,
    heading_pattern,
    inline_meta,
    scanner,
    structure,
    title_ref,
)
from .script import is_script_path

__all__ = ["read_notebook"]

# A metadata footnote with no heading above it (at the top of a ``.msg.md``): an error, not
# text, when it names a cell type.
_STRAY_FOOTNOTE: Final = re.compile(
    r"^\[\^[^\]\s]+\]:[ \t]*\[(?:"
    + "|".join(sorted(INPUT_TYPES | {"output", "error", "tool_result"}))
    + r")[\]:(]", re.M)
_HIDDEN_HEADING: Final = re.compile(r"\n" + heading_pattern(), re.M)  # $: any line end
_END: Final = (None,)  # after the last match: the end of the text closes the last cell
# The cell rule's groups by number (faster than by name): hashes, marker, bare, title and
# ref (or the rest of the heading's line), fid, meta, more. Not m.groups(): that copies the
# whole heading and footnote as group 1.
_CELL_GROUPS: Final = tuple(scanner(None, cells=True).groupindex[name] for name in (
    "hashes", "marker", "bare", "title", "ref", "line", "fid", "meta", "more"))


def read_notebook(text: str, path: str | None = None, ids: set[str] | None = None) -> dict:
    """The notebook (nbformat 4.5, plain dicts) that ``text`` means. Raises FormatError.

    A cell whose footnote id is missing or not a valid nbformat id gets one made up, and so
    do the front matter and the preamble; a made-up id must not be one the text gives a cell
    further down. That is checked at the end, and in the rare case it is, the text is read a
    second time with every footnote id of it known beforehand (``ids``).
    """
    given = text
    crlf = False
    nl = text.find("\n")
    if nl > 0 and text[nl - 1] == "\r":
        crlf = True
        text = text.replace("\r\n", "\n")
    start = front_matter_end(text)
    front = text[:start] if start else None
    section = None
    everything = False  # messages: false, the whole document is its preamble
    if front is not None and not (is_message_path(path) or is_script_path(path)):
        said, messages = messages_setting(front)
        everything = messages is False
        section = where(said, messages)
    source, metadata, minor, fields = notebook_metadata(front, path)
    # The reader's text: a newline before the first line, so that every line is found after
    # one. Positions below are in it; text[i] is src[i + 1].
    src = "\n" + text
    ctx = Context(notebook_language(metadata), 1, section, path, src, ids)
    cells: list[dict] = []
    if source is not None:
        cells.append({"cell_type": "raw", "id": ctx.fresh(FRONT_MATTER_ID), "metadata": {},
                      "source": source})
    scan_from = start
    if section is not None and not everything:
        # the messages are under the last section heading: the text before is preamble
        found = [pos for kind, pos in structure(text, start, section)[0] if kind == "section"]
        scan_from = found[-1] if found else -1
    if everything or scan_from < 0:  # no messages (so far)
        _preamble(src, start + 1, len(src), ctx, cells, document=True)
    else:
        _scan(src, scan_from, start + 1, ctx, cells)
    if ids is None and not ctx.used.isdisjoint(ctx.seen):
        return read_notebook(given, path, set(ctx.seen))
    return notebook(cells, metadata, minor, fields, ctx.level, crlf)


def _preamble(src: str, start: int, end: int, ctx: Context, cells: list[dict],
              document: bool = False) -> None:
    """The text before the first cell (``src[start:end]``): a markdown cell, kept verbatim.
    The document of a plain ``.md`` (all of it, or what is before its messages) is kept even
    when empty."""
    preamble = src[start:end]
    if ctx.section is None and not document:
        if not preamble.strip():
            return
        stray = _STRAY_FOOTNOTE.search(preamble)
        if stray is not None:
            raise FormatError("cell metadata footnote with no cell heading above it",
                              line=ctx.line(start + stray.start()), path=ctx.path)
    ns: dict[str, Any] = {"type": "preamble"}
    if ctx.section is not None:
        ns["section"] = ctx.section
    cells.append({"cell_type": "markdown", "id": ctx.fresh(PREAMBLE_ID),
                  "metadata": {NS: ns}, "source": preamble})


def _scan(src: str, at: int, start: int, ctx: Context, cells: list[dict]) -> None:
    """The pass: every cell from the newline at ``at`` on, mapped into ``cells`` as its end
    is found; the text from ``start`` to the first cell is the preamble.

    Match, make a record (:func:`_record`), hand it to the notebook mapping (``input_cell``,
    ``add_output``)."""
    cell: dict | None = None  # the input cell the outputs read go to
    blocks = 0  # how many output blocks it has so far
    parent = ""  # its footnote id
    out_level = 2  # the heading level of its outputs
    head = None  # the heading whose body is open
    escapes: list[int] = []
    size = len(src)
    for m in chain(scanner(ctx.section, cells=True).finditer(src, at), _END):
        if m is None:
            end = size
        elif m.lastgroup == "cell":
            end = m.start() + 1
        else:
            kind = m.lastgroup
            if kind == "escape":
                # in a body (in the preamble an escaped line stays as it is)
                if head is not None:
                    escapes.append(m.start() + 1)
                continue
            if kind != "open" or not fence_opens(m):
                continue
            # a fence nothing closes: the rest of the text is inside it, and must not hide a
            # cell heading (so no cell follows). The scan ends here, as at the end of the
            # text: going on, it would look for what closes each later fence line, to the end
            # of the text each time (quadratic)
            hide = _HIDDEN_HEADING.search(src, m.end())
            if hide is not None:
                raise FormatError(f"unclosed fence: it hides the cell heading on line "
                                  f"{ctx.line(hide.start() + 1)}",
                                  line=ctx.line(m.start() + 1))
            m = None
            end = size
        if head is None:
            _preamble(src, start, end, ctx, cells)
            head = m
            if m is None:
                break
            continue
        rec = _record(head, end, escapes, ctx)
        if escapes:
            escapes = []
        if rec.out:
            if cell is None:
                raise ctx.error("an output cell (%%%) before any message", rec.pos)
            if cell["cell_type"] != "code":
                raise ctx.error("an output cell (%%%) under a cell that cannot have "
                                f"outputs ({cell['cell_type']})", rec.pos)
            blocks += 1
            add_output(rec, cell, blocks, ctx, parent, out_level)
        else:
            level = rec.level
            if cell is None:  # the document's heading level: the first message's
                ctx.level = level
            cell = input_cell(rec, len(cells), ctx)
            cells.append(cell)
            parent = cell_ref(cell) if NS in cell["metadata"] else cell["id"]
            blocks = 0
            out_level = level + 1 if level < 5 else 5
        if m is None:
            break
        head = m


def _record(head: re.Match[str], end: int, escapes: list[int], ctx: Context) -> Record:
    """The record of the cell whose heading (and footnote) the scanner's ``cell`` rule matched
    in ``head``, its body ending at ``end`` (``escapes``: the escaped lines in it): heading
    level, title, footnote id, ``[TYPE:SUB](LINK)``, ``key=value`` attributes and body."""
    src = ctx.src
    pos = head.start() + 1
    hashes, marker, bare, title, ref, line, fid, meta, more = head.group(*_CELL_GROUPS)
    if line is not None:
        title, ref = title_ref(line)
    if marker is None:  # seed 000's bare '%%% [type]'
        marker = bare
        level = 1
    else:
        level = len(hashes)
    typ = sub = link = attrs = None
    if ref is None and "[" in title:
        found = inline_meta(title, len(marker) == 3)
        if found is not None:
            title, (typ, sub, link, attrs) = found
            fid = None  # the footnote under it is body
    if fid is not None:
        if more:  # continuation lines, joined with one space
            lines = more.split("\n")
            del lines[0]
            for k, piece in enumerate(lines):  # in place: one copy of them at a time
                lines[k] = piece.strip()
            meta += " " + " ".join(lines)
        if ref is None:  # a heading with no reference adopts the footnote's id
            try:
                typ, sub, link, attrs = parse_meta(meta)
            except AttrError:
                fid = None  # an ordinary footnote under it: that is body
            else:
                ref = fid
        elif fid != ref:
            raise FormatError(f"footnote [^{fid}] does not match the heading's [^{ref}]",
                              line=ctx.line(head.start("fid")), path=ctx.path)
        else:
            try:
                typ, sub, link, attrs = parse_meta(meta)
            except AttrError as err:
                raise FormatError(f"bad metadata for [^{ref}]: {err}",
                                  line=ctx.line(head.start("fid")), path=ctx.path) from None
    if fid is not None:
        at = head.end() + 1
        if at > end:
            at = end
    else:  # the body starts after the heading line and one blank line
        at = src.find("\n", pos, end) + 1 or end
        blank = SKIP_BLANK.match(src, at, end)
        if blank is not None:
            at = blank.end()
    seen = ctx.seen
    if ref is not None and seen.setdefault(ref, pos) != pos:
        raise FormatError(f"duplicate id [^{ref}] (first used on line "
                          f"{ctx.line(seen[ref])})", line=ctx.line(pos), path=ctx.path)
    if attrs is None:
        attrs = {}
    return make_record((len(marker) == 3, level, title, ref, typ, sub, link, None, attrs, None,
                        body(src, at, end, escapes, end == len(src)), pos))
