"""YAML for task documents, through the format core's one YAML reader (``format.load_yaml``:
anchors, aliases, deep nesting and repeated keys refused), with the line of every key so that
a problem can name its line, and the error as the checker reports it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.errors import Kind, PercentAgentError

Key = tuple[Hashable, ...]
"""Where a value is: the keys and list indices from the top, e.g. ``("tool", "parameters", 0)``."""


class YamlError(PercentAgentError, ValueError):
    """YAML that does not parse, or that the format core refuses. ``line`` is 1-based."""

    error_kind = Kind.BAD_FILE

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def load_yaml(text: str) -> Any:
    """The data of ``text``, refusing what ``format.load_yaml`` refuses."""
    return load_with_lines(text)[0]


def load_with_lines(text: str) -> tuple[Any, dict[Key, int]]:
    """The data of ``text`` and the 1-based line of every mapping key and list item in it;
    :class:`YamlError` naming the line otherwise."""
    try:
        return fmt.load_yaml_with_lines(text, what="the YAML")
    except fmt.FormatError as exc:
        raise YamlError(exc.reason.removeprefix("the YAML "), exc.line) from None
