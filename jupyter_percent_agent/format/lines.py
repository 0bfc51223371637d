"""Fenced blocks: the one statement of what opens and closes one, for the reader's scanner,
the notebook mapping and the writer.

Lines end at ``\\n`` only. The other separators Python's ``str.splitlines`` knows (``\\r``,
``\\f``, ``\\v``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``, ``\\u2029``) are ordinary characters
here, which is how they survive a round trip.

A fence is 3 or more backticks or tildes, indented at most 3 spaces; a backtick fence's info
string has no backtick; it is closed by a line of the same character, at least as long, with
nothing but blanks after it.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "CLOSED_BLOCK",
    "FENCES",
    "OPEN_FENCE",
    "Fence",
    "fence_closes",
    "fence_for",
    "fence_opens",
    "line_number",
    "split_fenced",
    "unclosed_fence",
]

# Pieces of the reader's scanner (rules.py), each anchored after the newline that starts its
# line. A closed block is one match, from its opening line to the first line that closes it
# (possessive runs, so that a shorter run cannot pass for the opening one; the lines between
# are those that do not close it): what it hides is never seen.
CLOSED_BLOCK: Final = (
    r" {0,3}(?:(?P<bt>`{3,}+)[^`\n]*\n"
    r"(?:(?! {0,3}(?P=bt)`*[ \t]*(?:\n|$))[^\n]*\n)*+ {0,3}(?P=bt)`*"
    r"|(?P<bd>~{3,}+)[^\n]*\n"
    r"(?:(?! {0,3}(?P=bd)~*[ \t]*(?:\n|$))[^\n]*\n)*+ {0,3}(?P=bd)~*)[ \t]*(?=\n|$)"
)
# A fence line that opens a block nothing closes (or, for backticks with a backtick in the
# info string, no fence at all: the caller checks ``fc`` and ``fi``).
OPEN_FENCE: Final = r" {0,3}(?P<fc>`{3,}|~{3,})(?P<fi>[^\n]*)"

# The fences of a text, anchored on the newline before their line (prepend one for the first
# line): much faster than a MULTILINE '^' in CPython's re.
FENCES: Final = re.compile(rf"\n(?=[ `~])(?:(?P<block>{CLOSED_BLOCK})|(?P<open>{OPEN_FENCE}))")


def fence_opens(m: re.Match[str]) -> bool:
    """Whether an ``open`` match (:data:`OPEN_FENCE`, group ``fc`` its run, ``fi`` the rest of
    its line) opens a fence: a backtick fence's info string has no backtick."""
    return m.group("fc")[0] != "`" or "`" not in m.group("fi")


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


def _fence_lines(body: str) -> int:
    """Where the fence lines of ``body`` may begin: the start of the line holding its first
    run of three backticks or tildes (no fence line starts before it); -1 when it has none."""
    ticks = body.find("```")
    tildes = body.find("~~~")
    if ticks < 0:
        if tildes < 0:
            return -1
        first = tildes
    else:
        first = ticks if tildes < 0 or ticks < tildes else tildes
    return body.rfind("\n", 0, first) + 1


def _first_fence(body: str, start: int) -> re.Match[str] | None:
    """The first closed block or unclosed fence of ``"\\n" + body`` from the line that starts
    at ``start`` in ``body`` (match positions are one more than in ``body``)."""
    for m in FENCES.finditer("\n" + body, start):
        if m.lastgroup == "open" and not fence_opens(m):
            continue
        return m
    return None


def split_fenced(body: str) -> tuple[str, str, str, str, str] | None:
    """(pre, open line, code, close line, post) of the first fenced block, or None.

    A block nothing closes runs to the end: close line and post are then empty.
    """
    start = _fence_lines(body)
    if start < 0:
        return None
    m = _first_fence(body, start)
    if m is None:
        return None
    start = m.start()  # in body: the start of the opening line
    eol = body.find("\n", start)
    if m.lastgroup == "open":
        return body[:start], body[start : eol if eol >= 0 else len(body)], \
            body[eol + 1 :] if eol >= 0 else "", "", ""
    end = m.end() - 1  # the end of the closing line
    close = body.rfind("\n", start, end) + 1
    code = body[eol + 1 : close - 1] if close > eol + 1 else ""
    return body[:start], body[start:eol], code, body[close:end], body[end:]


def unclosed_fence(body: str) -> str | None:
    """The closing line that an unclosed fence at the end of ``body`` needs, else None."""
    start = _fence_lines(body)
    if start < 0:
        return None
    for m in FENCES.finditer("\n" + body, start):
        if m.lastgroup == "open" and fence_opens(m):
            return m.group("fc")
    return None


def fence_for(content: str, char: str = "`") -> str:
    """The shortest fence of ``char`` that no line of ``content`` can close."""
    longest = 0
    if char * 3 in content:
        longest = max(len(run) for run in re.findall(re.escape(char) + "{3,}", content))
    return char * max(3, longest + 1)


def line_number(text: str, pos: int) -> int:
    """1-based line of ``pos`` in ``text``."""
    return text.count("\n", 0, pos) + 1
