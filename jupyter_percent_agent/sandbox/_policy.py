"""Compile rules for sandboxed code (imported only inside the sandbox child).

A ``RestrictingNodeTransformer`` subclass that allows exactly the name ``__result__`` (as a
plain variable, nowhere else), refuses ``import`` with a message the model can act on, and
refuses the name ``MemoryError`` (so that only a real out-of-memory gives a run the ``memory``
status). It
also accepts augmented assignment to items and attributes (``counts[w] += 1``, which models
write all the time and RestrictedPython refuses), rewritten through the same guards as a read
and a write. Everything else is RestrictedPython's policy: no names or attributes starting
with ``_``, no frame/generator introspection attributes, no exec/eval, no ``except*``.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from RestrictedPython import compile_restricted_exec
from RestrictedPython.transformer import (
    INSPECT_ATTRIBUTES,
    IOPERATOR_TO_STR,
    RestrictingNodeTransformer,
)

from ._names import ALLOWED_MODULES

FILENAME = "<sandbox>"
RESULT_NAME = "__result__"
IMPORT_MESSAGE = (
    "import is not allowed: " + ", ".join(ALLOWED_MODULES) + " are already available as names, "
    "and the tools are plain functions; use them directly without import."
)
# Only the interpreter may make a MemoryError: the run's "memory" status must mean that the code
# really ran out of memory, so code that could raise one itself could fake it.
MEMORY_ERROR = "MemoryError"
MEMORY_ERROR_MESSAGE = (
    '"MemoryError" is not available in the sandbox: running out of memory ends the run by '
    "itself; raise or catch another exception."
)
_LINE = re.compile(r"^Line (\d+): ")


class SandboxPolicy(RestrictingNodeTransformer):
    """RestrictedPython's policy plus ``__result__`` and a helpful import refusal."""

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id == RESULT_NAME:
            return node
        if node.id == MEMORY_ERROR:
            self.error(node, MEMORY_ERROR_MESSAGE)
            return node
        return super().visit_Name(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        """``a[k] += v`` -> ``_write_(t)[u] = _inplacevar_('+=', _getitem_(t, u), v)``.

        ``t`` and ``u`` are temporaries holding ``a`` and ``k``, each evaluated once.
        """
        target = node.target
        if isinstance(target, ast.Subscript):
            key: ast.expr = target.slice
            if isinstance(key, ast.Slice):
                key = ast.Call(
                    func=ast.Name("slice", ast.Load()),
                    args=[key.lower or ast.Constant(None), key.upper or ast.Constant(None),
                          key.step or ast.Constant(None)],
                    keywords=[],
                )  # fmt: skip
            elif isinstance(key, ast.Tuple) and any(isinstance(e, ast.Slice) for e in key.elts):
                return super().visit_AugAssign(node)
            obj_name, key_name = self.gen_tmp_name(), self.gen_tmp_name()
            setup = [
                _assign(obj_name, self.visit(target.value)),
                _assign(key_name, self.visit(key)),
            ]
            read = _call("_getitem_", _load(obj_name), _load(key_name))
            store: ast.expr = ast.Subscript(
                value=_call("_write_", _load(obj_name)), slice=_load(key_name), ctx=ast.Store()
            )
        elif isinstance(target, ast.Attribute):
            if target.attr.startswith("_") or target.attr in INSPECT_ATTRIBUTES:
                self.error(node, f'"{target.attr}" is an invalid attribute name.')
                return node
            obj_name = self.gen_tmp_name()
            setup = [_assign(obj_name, self.visit(target.value))]
            read = _call("_getattr_", _load(obj_name), ast.Constant(target.attr))
            store = ast.Attribute(
                value=_call("_write_", _load(obj_name)), attr=target.attr, ctx=ast.Store()
            )
        else:
            return super().visit_AugAssign(node)
        value = _call("_inplacevar_", ast.Constant(IOPERATOR_TO_STR[type(node.op)]), read,
                      self.visit(node.value))  # fmt: skip
        statements = [*setup, ast.Assign(targets=[store], value=value)]
        for statement in statements:
            ast.copy_location(statement, node)
            ast.fix_missing_locations(statement)
        return statements

    def visit_Import(self, node: ast.Import) -> Any:
        self.error(node, IMPORT_MESSAGE)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        self.error(node, IMPORT_MESSAGE)
        return node


def compile_code(code: str, filename: str = FILENAME) -> tuple[Any, dict[str, Any] | None]:
    """Compile ``code``: ``(code_object, None)`` or ``(None, error)`` with type/message/line.

    Never raises for bad input: syntax errors, policy refusals, and a compiler that runs out
    of stack on deeply nested expressions all come back as an error.
    """
    try:
        tree = ast.parse(code, filename, "exec")
    except SyntaxError as exc:
        return None, {"type": type(exc).__name__, "message": str(exc.msg), "line": exc.lineno}
    except (RecursionError, MemoryError) as exc:
        return None, _too_deep(exc)
    except ValueError as exc:  # null bytes, lone surrogates
        return None, {"type": "SyntaxError", "message": str(exc), "line": None}
    try:
        result = compile_restricted_exec(tree, filename, policy=SandboxPolicy)
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


def _load(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def _call(func: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_load(func), args=list(args), keywords=[])


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)


def _too_deep(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": "the code is too deeply nested to compile",
        "line": None,
    }
