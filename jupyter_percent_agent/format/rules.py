"""The reader's rules: what each kind of line means, each stated once.

In the style of markdown-it-py's rule files, a table of small rules, each a pattern for the
lines it recognises: a cell heading (:func:`heading_pattern`, :data:`TITLE_REF`), the
metadata footnote under it (:data:`FOOTNOTE`), an escaped heading, the section heading of a
plain ``.md`` (:func:`section_pattern`), a closed fenced block and a fence nothing closes
(``lines.py``). :func:`scanner` composes them into one regular expression whose named groups
say which rule matched; it finds, in a whole text at once, the only lines that carry
structure, and every other line is body and costs no Python code. The reader
(``reader.py``) dispatches on the rule's name; :func:`body` is the rule for what lies
between two headings, :func:`inline_meta` the liberal forms with the metadata on the heading.

The writer escapes exactly the lines this scanner would otherwise take for a heading
(:func:`escape_body`), so what one writes the other reads back. A comment prefix (a script
whose messages sit in comments) would be one more piece composed into these patterns.

Every pattern is anchored after the newline that starts its line (the caller prepends one to
the text), never a MULTILINE ``^``, which is much slower in CPython's ``re``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from .attrs import AttrError, Meta, parse_meta
from .lines import CLOSED_BLOCK, OPEN_FENCE, fence_opens
from .record import CELL_TYPE_OF

__all__ = [
    "FOOTNOTE",
    "INPUT_TYPES",
    "SKIP_BLANK",
    "TITLE_REF",
    "body",
    "escape_body",
    "heading_pattern",
    "inline_meta",
    "scanner",
    "section_pattern",
    "structure",
    "title_ref",
]

#: The types of input (``%%``) cells: those the notebook mapping gives a cell type.
INPUT_TYPES: Final = frozenset(CELL_TYPE_OF)


def heading_pattern(named: bool = False) -> str:
    """A cell heading at the start of a line: 1-5 ``#``, a space, ``%%`` (input) or ``%%%``
    (output), then a space, a tab, ``[`` or the end of the line; or seed 000's bare
    ``%%% [type]`` form. ``named``: with groups ``hashes``, ``marker``, ``bare``."""
    def g(name: str, pattern: str) -> str:
        return f"(?P<{name}>{pattern})" if named else pattern

    return (rf"(?:{g('hashes', '#{1,5}')} {g('marker', '%%%?')}(?=[ \t\[]|$)"
            rf"|{g('bare', '%%%?')}(?= \[))")


def section_pattern(title: str) -> str:
    """An ATX heading line (``#`` to ``######``) whose text is ``title``."""
    return rf"#{{1,6}}[ \t]+{re.escape(title)}[ \t]*#*[ \t]*$"


# After the heading's marker: one space or tab, then the rest of the line, which
# :func:`title_ref` reads as the title and a footnote reference. (A pattern for the title and
# the reference at once is quadratic in the line's length: a lazy title tries the reference
# at every one of its characters.)
# The common form (a title of words between spaces and tabs, then ``[^ID]``) is read by the
# pattern itself, in one linear pass (``title``, ``ref``); any other line (a ``[`` or another
# blank in the title, no reference) is ``line``, for :func:`title_ref`.
TITLE_REF: Final = (r"[ \t]?+(?:(?P<title>(?:[^\s\[]++|[ \t]++(?=[^\s\[]))*+)[ \t]*+"
                    r"\[\^(?P<ref>[^\]\s\[]++)\][ \t]*+(?=\n|$)|(?P<line>[^\n]*+))")
_REF_ID: Final = re.compile(r"[^\]\s]++")
_REF_ID_PART: Final = re.compile(r"[^\]\s]*+")
# The metadata under a heading: after at most one blank line, ``[^ID]: ...`` and its
# continuation lines (indented by two spaces or a tab, not blank), then the one blank line
# that separates it from the body (the newline before the body's first line is left to the
# scanner, which finds a line by the newline before it).
FOOTNOTE: Final = (
    r"(?:\n(?:[^\S\n]*\n)?\[\^(?P<fid>[^\]\s]+)\]:[ \t]?(?P<meta>[^\n]*)"
    r"(?P<more>(?:\n(?:  |\t)(?=[^\n]*\S)[^\n]*+)*+)(?:\n[^\S\n]*(?=\n))?)?"
)
#: The one blank line that separates a heading with no metadata from its body.
SKIP_BLANK: Final = re.compile(r"[^\S\n]*\n")


@lru_cache(maxsize=64)
def scanner(section: str | None = None, cells: bool = False) -> re.Pattern[str]:
    """The structural lines of a text, one rule per named group: ``cell`` (a heading),
    ``escape`` (a heading-like line written with one more leading backslash), ``section``
    (the section heading of a plain ``.md``, when ``section`` is given), ``block`` (a closed
    fenced block, skipped whole) and ``open`` (a fence nothing closes: the rest of the text is
    inside it).

    ``cells``: the reader's scanner, whose ``cell`` rule also reads the heading's ``title`` and
    ``ref`` and the footnote under it (``fid``, ``meta``, ``more``: :data:`FOOTNOTE`);
    otherwise a heading is its line alone, as for a body the writer escapes.
    """
    heads = heading_pattern()
    if section is not None:
        heads += "|" + section_pattern(section)
    cell = heading_pattern(named=True) + TITLE_REF + FOOTNOTE if cells else heading_pattern()
    rules = [("cell", cell), ("escape", rf"\\+(?:{heads})")]
    if section is not None:
        rules.append(("section", section_pattern(section)))
    rules += [("block", CLOSED_BLOCK), ("open", OPEN_FENCE)]
    alternatives = "|".join(f"(?P<{name}>{pattern})" for name, pattern in rules)
    return re.compile(rf"\n(?=[#%\\ `~])(?:{alternatives})", re.M)


def title_ref(line: str) -> tuple[str, str | None]:
    """(title, footnote id or None) of the rest of a heading's line (:data:`TITLE_REF`): a
    reference ``[^ID]`` at its end (ID: no ``]``, no blank), blanks around it, is the cell's
    id; the title is what is before it, without blanks at its end. Where the ID could begin
    at more than one ``[^`` (``[^a[^b]``), it begins at the first. Linear in the line."""
    text = line.rstrip()
    if text[-1:] != "]":
        return text, None
    start = text.rfind("[^")
    if start < 0:
        return text, None
    empty = start + 2 == len(text) - 1  # '[^]': an id can only begin at a '[^' before it
    if not empty and _REF_ID.fullmatch(text, start + 2, len(text) - 1) is None:
        return text, None
    if empty or (start and text[start - 1] != "]" and not text[start - 1].isspace()):
        first = -1
        while True:  # rare: the run of id characters goes on to the left, from a first '[^'
            before = text.rfind("[^", 0, start)
            if before < 0 or _REF_ID_PART.fullmatch(text, before + 2, start) is None:
                break
            start = first = before
        if empty and first < 0:
            return text, None
    return text[:start].rstrip(), text[start + 2 : -1]


def structure(text: str, start: int = 0, section: str | None = None,
              ) -> tuple[list[tuple[str, int]], int]:
    """The cell headings, escaped headings and section headings outside fences in ``text``:
    (rule name, start of the line), in order; and where a fence nothing closes starts (-1
    when none). ``start`` is the start of a line of ``text``."""
    found: list[tuple[str, int]] = []
    if start:  # the newline that ends the line before
        src, shift, start = text, 1, start - 1
    else:  # a virtual newline before the first line
        src, shift = "\n" + text, 0
    for m in scanner(section).finditer(src, start):
        kind = m.lastgroup
        if kind == "block":
            continue
        if kind == "open":
            if not fence_opens(m):
                continue
            return found, m.start() + shift
        found.append((kind, m.start() + shift))  # type: ignore[arg-type]
    return found, -1


def escape_body(body: str, section: str | None = None) -> str:
    """``body`` with one more leading backslash on every line that would read as a heading
    (outside fences): the reader takes one off again."""
    if section is None and "%%" not in body:
        return body  # every heading holds "%%"
    marks = structure(body, 0, section)[0]
    if not marks:
        return body
    parts = []
    last = 0
    for _kind, pos in marks:
        parts.append(body[last:pos])
        parts.append("\\")
        last = pos
    parts.append(body[last:])
    return "".join(parts)


_INLINE: Final = re.compile(r"(?:^|(?<=[ \t]))\[(?!\^)")


def inline_meta(title: str, out: bool) -> tuple[str, Meta] | None:
    """The liberal forms with the metadata on the heading (seed 000's ``%%% [output:stdout]
    agent="x"``, jupytext-percent's ``# %% Title [markdown] key="value"``): (title, metadata)
    of a heading with no reference, or None. An input's bracket must name an input type,
    else it is part of the title."""
    for c in _INLINE.finditer(title):
        try:  # read in place: a copy of the rest of the title at every '[' is quadratic
            meta = parse_meta(title, need_type=True, start=c.start())
        except AttrError:
            continue
        if not out and meta[0] not in INPUT_TYPES:
            continue
        return title[: c.start()].rstrip(), meta
    return None


def body(text: str, start: int, end: int, escapes: list[int], at_eof: bool) -> str:
    """The body of a cell: ``text[start:end]`` (``end`` the start of the next heading, or
    the end of the text) less its separating newlines (the one ending its last line, and a
    blank line before the next heading), each escaped heading-like line (its start in
    ``escapes``) with one backslash taken off."""
    if start >= end:
        return ""
    if escapes:
        parts = []
        last = start
        for e in escapes:
            if e < start:
                continue
            parts.append(text[last:e])
            last = e + 1
        parts.append(text[last:end])
        text = "".join(parts)
        start, end = 0, len(text)
    if at_eof:
        cut = end - 1 if text[end - 1] == "\n" else end
    elif end - 2 >= start and text[end - 2] == "\n":
        cut = end - 2
    else:
        cut = end - 1 if text[end - 1] == "\n" else end
    return text[start:cut]
