"""Prompt templates of task documents: ``{var}``, ``{parameters.NAME}``, ``{{`` and ``}}``.

Nothing else is a placeholder: no attribute or index access, no conversion or format spec (a
template is data from a file, and ``str.format`` on it is an attack surface). A rendering is
bounded (``limit``, in characters): a template naming a 20 KB value 20,000 times stops at the
bound, it never builds the 400 MB text first. Pure functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError

SECTION_PREFIX = "parameters."
_NAME = re.compile(r"[^\W\d]\w*")
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


CHARS_PER_TOKEN = 4
"""Tokens are estimated as characters / 4 where no tokenizer is at hand."""
DEFAULT_WINDOW = 200_000
"""The context window (tokens) that bounds a prompt when the agent sets none."""


class PromptTooLarge(PercentAgentError, ValueError):
    """A rendered prompt past its bound (``limit`` characters), found while rendering: the
    task document (its template, or the values it names) is at fault."""

    error_kind = Kind.BAD_FILE

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the rendered prompt passes the agent's context window ({limit // CHARS_PER_TOKEN:,}"
            f" tokens, about {limit:,} characters at {CHARS_PER_TOKEN} per token)")


@dataclass(frozen=True)
class Placeholder:
    """One ``{...}`` of a template: its text, the line (0-based, within the template)."""

    text: str
    line: int

    @property
    def section(self) -> str | None:
        """``NAME`` of ``{parameters.NAME}``, else ``None``."""
        return self.text[len(SECTION_PREFIX):] if self.text.startswith(SECTION_PREFIX) else None


@dataclass(frozen=True)
class TemplateProblem:
    message: str
    line: int


def _tokens(template: str) -> Iterator[tuple[re.Match[str], int]]:
    line, last = 0, 0
    for m in _TOKEN.finditer(template):
        line += template.count("\n", last, m.start())
        last = m.start()
        yield m, line


def scan(template: str) -> tuple[list[Placeholder], list[TemplateProblem]]:
    """The placeholders of ``template`` and what is wrong with its braces."""
    found: list[Placeholder] = []
    problems: list[TemplateProblem] = []
    for m, line in _tokens(template):
        token = m.group(0)
        if token in ("{{", "}}"):
            continue
        if token in ("{", "}"):
            problems.append(TemplateProblem(
                f"a lone {token!r}: write {token * 2!r} for a literal brace", line))
            continue
        inner = m.group(1).strip()
        if is_placeholder(inner):
            found.append(Placeholder(inner, line))
        else:
            problems.append(TemplateProblem(
                f"{{{m.group(1)}}} is not a placeholder: only {{name}} and "
                "{parameters.NAME} are (no attribute or index access, conversion or format "
                "spec); write {{ and }} for literal braces", line))
    return found, problems


def is_placeholder(text: str) -> bool:
    name = text[len(SECTION_PREFIX):] if text.startswith(SECTION_PREFIX) else text
    return bool(_NAME.fullmatch(name))


def as_text(value: Any) -> str:
    """How a value reads inside a prompt: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)


def render(template: str, values: Mapping[str, Any],
           section: Callable[[str], str] | None = None, *, limit: int | None = None) -> str:
    """``template`` with its placeholders filled: ``{var}`` from ``values``,
    ``{parameters.NAME}`` from ``section(NAME)``. ``KeyError`` names a missing one; the
    template is assumed checked (:func:`scan` found no problem). ``limit``: the most
    characters the result may have; :class:`PromptTooLarge` as soon as it is passed."""
    out: list[str] = []
    size = 0
    texts: dict[str, str] = {}  # a value named many times is turned into text once

    def add(piece: str) -> None:
        nonlocal size
        size += len(piece)
        if limit is not None and size > limit:
            raise PromptTooLarge(limit)
        out.append(piece)

    last = 0
    for m in _TOKEN.finditer(template):
        add(template[last:m.start()])
        last = m.end()
        token = m.group(0)
        if token in ("{{", "}}"):
            add(token[0])
            continue
        name = (m.group(1) or "").strip()
        if name.startswith(SECTION_PREFIX) and section is not None:
            add(section(name[len(SECTION_PREFIX):]))
        elif name in values:
            if name not in texts:
                texts[name] = as_text(values[name])
            add(texts[name])
        else:
            raise KeyError(name)
    add(template[last:])
    return "".join(out)
