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

__all__ = [
    "Fence",
    "close_fence_line",
    "escape_body",
    "fence_for",
    "line_number",
    "scan",
    "section_pattern",
]

# A cell heading: 1-5 '#', a space, %% or %%% then space, tab, '[' or end of line. The bare
# '%%% [type]' form (seed 000) is read too.
HEAD = r"#{1,5} %%%?(?=[ \t\[]|$)|%%%? \["
FENCE = r" {0,3}(?:`{3,}|~{3,})"


@lru_cache(maxsize=64)
def _token_re(section: str | None) -> re.Pattern[str]:
    head = HEAD
    sect = ""
    if section is not None:
        pattern = section_pattern(section)
        head = head + "|" + pattern
        sect = f"(?P<s>{pattern})|"
    return re.compile(rf"^(?:(?P<h>{HEAD})|{sect}(?P<e>\\+(?:{head}))|(?P<f>{FENCE}))", re.M)


def section_pattern(title: str) -> str:
    """Regex (no anchors) of an ATX heading line whose text is ``title``."""
    return rf"#{{1,6}}[ \t]+{re.escape(title)}[ \t]*#*[ \t]*$"


class Fence:
    """An open fence: its character and length."""

    __slots__ = ("char", "size")

    def __init__(self, char: str, size: int):
        self.char = char
        self.size = size


def fence_open(line: str) -> tuple[str, int, str] | None:
    """(char, length, info) when ``line`` opens a fenced block."""
    s = line.lstrip(" ")
    if len(line) - len(s) > 3 or len(s) < 3:
        return None
    c = s[0]
    if c != "`" and c != "~":
        return None
    n = len(s) - len(s.lstrip(c))
    if n < 3:
        return None
    info = s[n:]
    if c == "`" and "`" in info:
        return None
    return c, n, info.strip()


def fence_closes(line: str, fence: Fence) -> bool:
    """Whether ``line`` closes ``fence``."""
    s = line.lstrip(" ")
    if len(line) - len(s) > 3:
        return False
    rest = s.lstrip(fence.char)
    return len(s) - len(rest) >= fence.size and rest.strip(" \t") == ""


def scan(text: str, start: int = 0, end: int | None = None,
         section: str | None = None) -> Iterator[tuple[str, int, int]]:
    """Yield ``(kind, line_start, line_end)`` for structural lines outside fences.

    ``kind`` is ``"h"`` (heading), ``"e"`` (escaped heading), ``"s"`` (section heading, only
    when ``section`` is given) or, at the end when a fence is still open, ``"u"`` with the
    opening fence line. Fence lines themselves are tracked, not yielded.
    """
    if end is None:
        end = len(text)
    fence: Fence | None = None
    fence_at = 0
    for m in _token_re(section).finditer(text, start, end):
        pos = m.start()
        eol = text.find("\n", pos, end)
        if eol < 0:
            eol = end
        kind = m.lastgroup
        if fence is not None:
            if kind == "f" and fence_closes(text[pos:eol], fence):
                fence = None
            continue
        if kind == "f":
            opened = fence_open(text[pos:eol])
            if opened is not None:
                fence = Fence(opened[0], opened[1])
                fence_at = pos
            continue
        yield kind, pos, eol
    if fence is not None:
        eol = text.find("\n", fence_at, end)
        yield "u", fence_at, end if eol < 0 else eol


def escape_body(body: str, section: str | None = None) -> tuple[str, bool]:
    """Backslash-escape heading-like lines outside fences; report an unclosed fence."""
    if "%%" not in body and "```" not in body and "~~~" not in body and section is None:
        return body, False
    parts = []
    last = 0
    unclosed = False
    for kind, pos, _eol in scan(body, section=section):
        if kind == "u":
            unclosed = True
            continue
        parts.append(body[last:pos])
        parts.append("\\")
        last = pos
    if not parts:
        return body, unclosed
    parts.append(body[last:])
    return "".join(parts), unclosed


def unclosed_fence(body: str) -> str | None:
    """The closing line that an unclosed fence at the end of ``body`` needs, else None."""
    if "```" not in body and "~~~" not in body:
        return None
    fence = None
    for line in body.split("\n"):
        if fence is None:
            opened = fence_open(line)
            if opened is not None:
                fence = Fence(opened[0], opened[1])
        elif fence_closes(line, fence):
            fence = None
    return None if fence is None else fence.char * fence.size


def close_fence_line(body: str) -> str | None:
    """Alias kept for readability at call sites."""
    return unclosed_fence(body)


def fence_for(content: str, char: str = "`") -> str:
    """The shortest fence of ``char`` that no line of ``content`` can close."""
    longest = 0
    if char * 3 in content:
        longest = max(len(run) for run in re.findall(re.escape(char) + "{3,}", content))
    return char * max(3, longest + 1)


def line_number(text: str, pos: int) -> int:
    """1-based line of ``pos`` in ``text``."""
    return text.count("\n", 0, pos) + 1
