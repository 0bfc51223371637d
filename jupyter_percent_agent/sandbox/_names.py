"""The names sandboxed code finds without defining them (parent and child; no imports).

The allow-listed modules (bound as fresh stand-ins in every run, see ``_facades``; the ATTP
prompt lists them) and the sandbox's own names, which no tool may take.
"""

from __future__ import annotations

ALLOWED_MODULES: tuple[str, ...] = ("math", "json", "datetime", "re", "random", "statistics")
"""Modules sandboxed code uses without ``import``: they are already bound as names."""

TOOL_ERROR = "ToolError"
"""The exception a failed tool call raises in sandboxed code."""

RESERVED_NAMES = frozenset({*ALLOWED_MODULES, TOOL_ERROR, "print", "printed"})
"""Names a tool may not take: the module stand-ins and the sandbox's own names."""
