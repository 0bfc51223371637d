"""A small, strict parser for Google-style docstrings.

Pure functions only: text in, a :class:`Docstring` out, or a :class:`DocstringError` that says
what is wrong and on which line of the docstring (1-based, after ``inspect.cleandoc``).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import dataclass, field

from jupyter_percent_agent.errors import Kind, PercentAgentError

# Section headers and the canonical name each maps to.
SECTIONS: dict[str, str] = {
    "args": "args",
    "arguments": "args",
    "parameters": "args",
    "params": "args",
    "returns": "returns",
    "return": "returns",
    "yields": "yields",
    "yield": "yields",
    "raises": "raises",
    "example": "example",
    "examples": "example",
    "note": "note",
    "notes": "note",
}

_HEADER = re.compile(r"^(?P<name>[A-Za-z]+)\s*:\s*$")
# "name (type): description", "name: description", "*args: ...", "**kwargs (dict): ..."
_ARG = re.compile(
    r"^(?P<name>\*{0,2}[A-Za-z_][A-Za-z0-9_]*)\s*(?:\((?P<type>[^)]*)\))?\s*:\s*(?P<desc>.*)$"
)


class DocstringError(PercentAgentError, ValueError):
    """A docstring that does not follow the Google style; ``line`` is 1-based in the docstring."""

    error_kind = Kind.TOOL

    def __init__(self, problem: str, line: int | None = None) -> None:
        self.problem = problem
        self.line = line
        where = f" (docstring line {line})" if line else ""
        super().__init__(problem + where)


@dataclass(frozen=True)
class ArgDoc:
    """One entry of the ``Args:`` section."""

    name: str
    type: str | None
    description: str


@dataclass(frozen=True)
class Docstring:
    """A parsed Google-style docstring."""

    summary: str
    description: str = ""
    args: dict[str, ArgDoc] = field(default_factory=dict)
    returns: str = ""
    yields: str = ""
    raises: str = ""
    example: str = ""
    note: str = ""
    text: str = ""  # the cleaned docstring as written, for rendering


def parse_docstring(text: str | None) -> Docstring:
    """Parse a Google-style docstring; raise :class:`DocstringError` on anything malformed."""
    if text is None or not text.strip():
        raise DocstringError("missing docstring")
    cleaned = inspect.cleandoc(text)
    lines = cleaned.splitlines()
    header = _HEADER.match(lines[0])
    if header and header.group("name").lower() in SECTIONS:
        raise DocstringError("missing summary line before the sections", 1)
    head, sections = _split_sections(lines)
    summary, description = _summary(head)
    bodies = {name: _section_text(body) for name, (_, body) in sections.items()}
    for name, (line_no, _) in sections.items():
        if not bodies[name]:
            raise DocstringError(f"empty {name.capitalize()}: section", line_no)
    args = _parse_args(*sections["args"]) if "args" in sections else {}
    return Docstring(
        summary=summary,
        description=description,
        args=args,
        returns=bodies.get("returns", ""),
        yields=bodies.get("yields", ""),
        raises=bodies.get("raises", ""),
        example=bodies.get("example", ""),
        note=bodies.get("note", ""),
        text=cleaned,
    )


def _split_sections(lines: list[str]) -> tuple[list[str], dict[str, tuple[int, list[str]]]]:
    """Cut the docstring at known, unindented section headers."""
    head: list[str] = []
    sections: dict[str, tuple[int, list[str]]] = {}
    current: list[str] = head
    for number, line in enumerate(lines, start=1):
        match = _HEADER.match(line)
        if match and match.group("name").lower() in SECTIONS:
            name = SECTIONS[match.group("name").lower()]
            if name in sections:
                raise DocstringError(f"duplicate {match.group('name')}: section", number)
            sections[name] = (number, [])
            current = sections[name][1]
            continue
        if current is not head and line.strip() and not line[:1].isspace():
            raise DocstringError(
                f"unindented text {line.strip()!r} inside a section; indent section content",
                number,
            )
        current.append(line)
    return head, sections


def _summary(head: list[str]) -> tuple[str, str]:
    paragraphs = "\n".join(head).strip().split("\n\n", 1)
    summary = " ".join(part.strip() for part in paragraphs[0].splitlines()).strip()
    if not summary:
        raise DocstringError("missing summary line before the sections", 1)
    description = paragraphs[1].strip() if len(paragraphs) > 1 else ""
    return summary, description


def _section_text(body: list[str]) -> str:
    return textwrap.dedent("\n".join(body)).strip() if any(s.strip() for s in body) else ""


def _parse_args(header_line: int, body: list[str]) -> dict[str, ArgDoc]:
    """Parse the ``Args:`` entries: one per line at the section's indent, continuations deeper."""
    indents = [len(s) - len(s.lstrip()) for s in body if s.strip()]
    base = min(indents)
    entries: list[tuple[int, str, str | None, list[str]]] = []
    for offset, line in enumerate(body, start=1):
        if not line.strip():
            continue
        number = header_line + offset
        indent = len(line) - len(line.lstrip())
        if indent > base:
            if not entries:
                raise DocstringError("Args: section starts with a continuation line", number)
            entries[-1][3].append(line.strip())
            continue
        match = _ARG.match(line.strip())
        if not match:
            raise DocstringError(
                f"Args: entry {line.strip()!r} is not 'name (type): description'", number
            )
        name = match.group("name").lstrip("*")
        if any(e[1] == name for e in entries):
            raise DocstringError(f"argument {name!r} documented twice", number)
        kind = match.group("type")
        entries.append((number, name, kind.strip() if kind else None, [match.group("desc")]))
    result: dict[str, ArgDoc] = {}
    for number, name, kind, desc in entries:
        text = " ".join(part for part in desc if part).strip()
        if not text:
            raise DocstringError(f"argument {name!r} has no description", number)
        result[name] = ArgDoc(name=name, type=kind or None, description=text)
    return result
