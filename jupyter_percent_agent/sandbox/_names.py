"""The names sandboxed code finds without defining them (parent and child; standard library).

The allow-listed modules (bound as fresh stand-ins in every run, see ``_facades``; the ATTP
prompt lists them) and the sandbox's own names, which no tool may take.
"""

from __future__ import annotations

import keyword

ALLOWED_MODULES: tuple[str, ...] = ("math", "json", "datetime", "re", "random", "statistics")
"""Modules sandboxed code uses without ``import``: they are already bound as names."""

TOOL_ERROR = "ToolError"
"""The exception a failed tool call raises in sandboxed code."""

RESERVED_NAMES = frozenset({*ALLOWED_MODULES, TOOL_ERROR, "print", "printed"})
"""Names a tool may not take: the module stand-ins and the sandbox's own names."""


def check_tool_name(name: object) -> None:
    """A tool name must be a public identifier that does not hide a sandbox name (ValueError)."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"tool name {name!r} is not a Python identifier")
    if name.startswith("_"):
        raise ValueError(f"tool name {name!r} starts with '_'")
    if name in RESERVED_NAMES:
        raise ValueError(f"tool name {name!r} is reserved in the sandbox")
