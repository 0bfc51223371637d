"""Compile rules for sandboxed code (imported only inside the sandbox child).

A ``RestrictingNodeTransformer`` subclass that allows exactly the name ``__result__`` (as a
plain variable, nowhere else) and refuses ``import`` with a message the model can act on.
Everything else is RestrictedPython's policy: no names or attributes starting with ``_``, no
frame/generator introspection attributes, no exec/eval, no ``except*``.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from RestrictedPython import compile_restricted_exec
from RestrictedPython.transformer import RestrictingNodeTransformer

FILENAME = "<sandbox>"
RESULT_NAME = "__result__"
MODULES = ("math", "json", "datetime", "re", "random", "statistics")
IMPORT_MESSAGE = (
    "import is not allowed: " + ", ".join(MODULES) + " are already available as names, "
    "and the tools are plain functions; use them directly without import."
)
_LINE = re.compile(r"^Line (\d+): ")


class SandboxPolicy(RestrictingNodeTransformer):
    """RestrictedPython's policy plus ``__result__`` and a helpful import refusal."""

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id == RESULT_NAME:
            return node
        return super().visit_Name(node)

    def visit_Import(self, node: ast.Import) -> Any:
        self.error(node, IMPORT_MESSAGE)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        self.error(node, IMPORT_MESSAGE)
        return node


def compile_code(code: str) -> tuple[Any, dict[str, Any] | None]:
    """Compile ``code``: ``(code_object, None)`` or ``(None, error)`` with type/message/line.

    Never raises for bad input: syntax errors, policy refusals, and a compiler that runs out
    of stack on deeply nested expressions all come back as an error.
    """
    try:
        tree = ast.parse(code, FILENAME, "exec")
    except SyntaxError as exc:
        return None, {"type": type(exc).__name__, "message": str(exc.msg), "line": exc.lineno}
    except (RecursionError, MemoryError) as exc:
        return None, _too_deep(exc)
    try:
        result = compile_restricted_exec(tree, FILENAME, policy=SandboxPolicy)
    except (RecursionError, MemoryError) as exc:
        return None, _too_deep(exc)
    except SyntaxError as exc:  # e.g. 'return' outside function, raised by compile()
        return None, {"type": type(exc).__name__, "message": str(exc.msg), "line": exc.lineno}
    if result.errors:
        line = None
        messages = []
        for text in result.errors:
            match = _LINE.match(text)
            if match and line is None:
                line = int(match.group(1))
            messages.append(text)
        return None, {"type": "CompileError", "message": "; ".join(messages), "line": line}
    return result.code, None


def _too_deep(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": "the code is too deeply nested to compile",
        "line": None,
    }
