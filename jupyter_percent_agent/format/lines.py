"""Line-level scanning shared by the reader and the writer.

Lines end at ``\\n`` only. The other separators Python's ``str.splitlines`` knows (``\\r``,
``\\f``, ``\\v``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``, ``\\u2029``) are ordinary characters
here, which is how they survive a round trip. A CRLF file is read as LF and remembered.

One regular expression finds, in a whole text at once, the only lines that matter to the
structure: cell headings, backslash-escaped headings and fence lines. The reader and the
writer use the same scanner, so what the writer escapes is exactly what the reader would
otherwise take for a heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Final

__all__ = [
    "Fence",
    "escape_body",
    "fence_for",
    "line_number",
    "scan",
    "section_pattern",
]

# A cell heading: 1-5 '#', a space, %% or %%% then space, tab, '[' or end of line. The bare
# '%%% [type]' form (seed 000) is read too.
HEAD: Final = r"#{1,5} %%%?(?=[ \t\[]|$)|%%%? \["


@lru_cache(maxsize=64)
def _token_re(section: str | None) -> re.Pattern[str]:
    head = HEAD
    sect = ""
    if section is not None:
        pattern = section_pattern(section)
        head = head + "|" + pattern
        sect = f"(?P<s>{pattern})|"
    # Anchored on the newline before the line (the caller prepends one at the start), with a
    # look-ahead on the first character: much faster than a MULTILINE '^' in CPython's re.
    # A closed fenced block is one match ``b``, from its opening line to the first line that
    # closes it (same character, at least as long, nothing but blanks after; possessive runs,
    # so that a shorter run cannot pass for the opening one; the lines between are those that
    # do not close it): what it hides is never seen.
    # ``f`` is then a fence line that opens a block nothing closes (or, for backticks with a
    # backtick in the info string, no fence at all).
    return re.compile(
        rf"\n(?=[#%\\ `~])(?:(?P<h>{HEAD})|{sect}(?P<e>\\+(?:{head}))"
        r"|(?P<b> {0,3}(?:(?P<bt>`{3,}+)[^`\n]*\n"
        r"(?:(?! {0,3}(?P=bt)`*[ \t]*(?:\n|$))[^\n]*\n)*+ {0,3}(?P=bt)`*"
        r"|(?P<bd>~{3,}+)[^\n]*\n"
        r"(?:(?! {0,3}(?P=bd)~*[ \t]*(?:\n|$))[^\n]*\n)*+ {0,3}(?P=bd)~*)[ \t]*(?=\n|$))"
        rf"|(?P<f> {{0,3}}(?P<fc>`{{3,}}|~{{3,}})(?P<fi>[^\n]*)))",
        re.M,
    )


def section_pattern(title: str) -> str:
    """Regex (no anchors) of an ATX heading line whose text is ``title``."""
    return rf"#{{1,6}}[ \t]+{re.escape(title)}[ \t]*#*[ \t]*$"


class Fence:
    """An open fence: its character and length."""

    __slots__ = ("char", "size")

    def __init__(self, char: str, size: int):
        self.char = char
        self.size = size


def fence_closes(line: str, fence: Fence) -> bool:
    """Whether ``line`` closes ``fence``."""
    s = line.lstrip(" ")
    if len(line) - len(s) > 3:
        return False
    rest = s.lstrip(fence.char)
    return len(s) - len(rest) >= fence.size and rest.strip(" \t") == ""


def scan_all(text: str, start: int = 0,
             section: str | None = None) -> tuple[list[int], list[int], list[int], int]:
    """Positions of headings, escaped headings and section headings outside fences.

    The fourth item is where a fence left open at the end starts (-1 when none).
    """
    heads: list[int] = []
    escapes: list[int] = []
    sections: list[int] = []
    # a virtual newline before ``start`` lets the first line match too
    if start == 0:
        src = "\n" + text
        shift = 0
    else:
        src = text
        start -= 1
        shift = 1
    for m in _token_re(section).finditer(src, start):
        kind = m.lastgroup
        if kind == "b" or kind == "bt" or kind == "bd":
            continue
        if kind == "fi" or kind == "fc" or kind == "f":
            if m.group("fc")[0] == "`" and "`" in m.group("fi"):
                continue
            # an opening line that no later line closes: the rest of the text is inside
            return heads, escapes, sections, m.start() + shift
        pos = m.start() + shift
        if kind == "h":
            heads.append(pos)
        elif kind == "e":
            escapes.append(pos)
        else:
            sections.append(pos)
    return heads, escapes, sections, -1


def scan(text: str, start: int = 0, end: int | None = None,
         section: str | None = None) -> Iterator[tuple[str, int, int]]:
    """Yield ``(kind, line_start, line_end)`` for structural lines outside fences.

    ``kind`` is ``"h"`` (heading), ``"e"`` (escaped heading), ``"s"`` (section heading, only
    when ``section`` is given) or, at the end when a fence is still open, ``"u"`` with the
    opening fence line.
    """
    if end is not None and end < len(text):
        text = text[:end]
    heads, escapes, sections, fence_at = scan_all(text, start, section)
    items = sorted([("h", p) for p in heads] + [("e", p) for p in escapes]
                   + [("s", p) for p in sections], key=lambda item: item[1])
    for kind, pos in items:
        eol = text.find("\n", pos)
        yield kind, pos, len(text) if eol < 0 else eol
    if fence_at >= 0:
        eol = text.find("\n", fence_at)
        yield "u", fence_at, len(text) if eol < 0 else eol


def escape_body(body: str, section: str | None = None) -> tuple[str, bool]:
    """Backslash-escape heading-like lines outside fences; report an unclosed fence."""
    if section is None and "%%" not in body:
        return body, False
    heads, escapes, sections, fence_at = scan_all(body, 0, section)
    marks = heads + escapes + sections
    if not marks:
        return body, fence_at >= 0
    marks.sort()
    parts = []
    last = 0
    for pos in marks:
        parts.append(body[last:pos])
        parts.append("\\")
        last = pos
    parts.append(body[last:])
    return "".join(parts), fence_at >= 0


# A fence line, anchored on the newline before it (prepend one for the first line): as for
# the scanner, much faster than a MULTILINE '^'.
FENCE_LINE: Final = re.compile(r"\n(?=[ `~]) {0,3}(`{3,}|~{3,})([^\n]*)")


def unclosed_fence(body: str) -> str | None:
    """The closing line that an unclosed fence at the end of ``body`` needs, else None.

    The same fence rules as :func:`scan_all` (heading lines never start with a fence
    character, so they need no tracking here).
    """
    if body.endswith("\n```"):
        # The commonest shape (a reply ending in a code block, a [code] cell's body): one
        # block, opened at the start of a line by exactly three backticks with no backtick in
        # its info string, and closed by the last line. Checked with a few string searches.
        if body.count("```") == 2 and "~~~" not in body:
            start = body.find("```")
            if ((not start or body[start - 1] == "\n")
                    and "`" not in body[start + 3 : body.find("\n", start)]):
                return None
    elif "```" not in body and "~~~" not in body:
        return None
    fchar = ""
    fsize = 0
    for run, info in FENCE_LINE.findall("\n" + body):
        if fchar:
            if run[0] == fchar and len(run) >= fsize and not info.strip(" \t"):
                fchar = ""
            continue
        if run[0] == "`" and "`" in info:
            continue
        fchar = run[0]
        fsize = len(run)
    return fchar * fsize if fchar else None


def fence_for(content: str, char: str = "`") -> str:
    """The shortest fence of ``char`` that no line of ``content`` can close."""
    longest = 0
    if char * 3 in content:
        longest = max(len(run) for run in re.findall(re.escape(char) + "{3,}", content))
    return char * max(3, longest + 1)


def line_number(text: str, pos: int) -> int:
    """1-based line of ``pos`` in ``text``."""
    return text.count("\n", 0, pos) + 1
