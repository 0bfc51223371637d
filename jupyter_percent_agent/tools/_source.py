"""Describe the tools of untrusted source text (``[tool]`` cells) without running it.

The same rules as for imported modules, read from the syntax tree: public top-level functions
(or the names in a literal ``__all__``), each with a Google-style docstring that documents
exactly its parameters.
"""

from __future__ import annotations

import ast
import re

from ._docstring import DocstringError, parse_docstring
from ._render import HEADER, render_tools
from ._tool import ToolLoadError


def describe_source(source: str, *, module: str = "") -> dict[str, str]:
    """Tool name -> its ATTP stub, for the tools defined in ``source``; never executes it.

    Raises :class:`ToolLoadError` (naming the module, tool, problem and line) like loading.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ToolLoadError(
            f"syntax error (line {exc.lineno}): {exc.msg}", module=module or None
        ) from None
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    names = _exported(tree, module)
    if names is None:
        names = [name for name in functions if not name.startswith("_")]
    stubs = {}
    for name in names:
        if name not in functions:
            raise ToolLoadError(
                f"__all__ names {name!r}, which is not a function", module=module or None
            )
        stubs[name] = _stub(functions[name], module)
    return stubs


def render_source_tools(stubs: dict[str, str]) -> str:
    """Stubs from :func:`describe_source` under the same header as ``Registry.describe()``."""
    if not stubs:
        return render_tools([])
    return HEADER + "\n\n" + "\n\n".join(stubs.values())


def _exported(tree: ast.Module, module: str) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise ToolLoadError(
                    f"__all__ must be a literal list of names (line {node.lineno})",
                    module=module or None,
                ) from None
            return [str(v) for v in value]
    return None


def _stub(node: ast.FunctionDef | ast.AsyncFunctionDef, module: str) -> str:
    try:
        doc = parse_docstring(ast.get_docstring(node, clean=True))
    except DocstringError as exc:
        raise ToolLoadError(
            f"{exc} (line {node.lineno})", module=module or None, tool=node.name
        ) from None
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
    params += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
    for name in doc.args:
        if name not in params:
            raise ToolLoadError(
                f"Args: documents {name!r}, which is not a parameter (line {node.lineno})",
                module=module or None,
                tool=node.name,
            )
    missing = [p for p in params if p not in doc.args and p not in ("self", "cls")]
    if missing:
        raise ToolLoadError(
            f"parameter{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
            f"not documented in Args: (line {node.lineno})",
            module=module or None,
            tool=node.name,
        )
    streaming = any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(node))
    returns = ""
    if streaming:
        declared = re.match(r"^([\w\[\], |.]+):", doc.returns)
        returns = f" -> {declared.group(1).strip()}" if declared else ""
    elif node.returns is not None:
        returns = f" -> {ast.unparse(node.returns)}"
    text = "\n".join(
        "    " + line if line.strip() else ""
        for line in doc.text.replace('"""', r"\"\"\"").splitlines()
    )
    signature = f"def {node.name}({_render_args(node.args, doc.args)}){returns}:"
    return f'{signature}\n    """\n{text}\n    """\n    pass\n'


def _render_args(args: ast.arguments, documented: dict) -> str:
    """Parameters as ``inspect`` prints them (``x: int = 1``, ``x=1``), with docstring types."""

    def one(arg: ast.arg, default: ast.expr | None, prefix: str = "") -> str:
        text = prefix + arg.arg
        if arg.annotation is not None:
            text += f": {ast.unparse(arg.annotation)}"
        elif arg.arg in documented and documented[arg.arg].type:
            text += f": {documented[arg.arg].type}"
        if default is not None:
            text += (" = " if ":" in text else "=") + ast.unparse(default)
        return text

    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    parts = [one(a, d) for a, d in zip(positional, defaults, strict=True)]
    if args.posonlyargs:
        parts.insert(len(args.posonlyargs), "/")
    if args.vararg is not None:
        parts.append(one(args.vararg, None, "*"))
    elif args.kwonlyargs:
        parts.append("*")
    parts += [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg is not None:
        parts.append(one(args.kwarg, None, "**"))
    return ", ".join(parts)
