"""Describe the tools of untrusted source text without running it, from its syntax tree.

``describe_source``: a module's text, with the same rules as for imported modules (public
top-level functions, or the names in a literal ``__all__``, each with a Google-style docstring
that documents exactly its parameters). ``describe_defined_tool``: one ``[tool]`` cell, whose
name, description and ``parameters`` (JSON Schema) come from the cell's attributes and whose
Python fence defines the function; the rule that picks that function lives here, and the
sandbox binds the one it names.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._docstring import ArgDoc, DocstringError, parse_docstring
from ._render import SourceText, render_tools
from ._schema import JSON_TYPES, schema_problem, type_names
from ._tool import ToolLoadError

_TOO_DEEP = "the code is too deeply nested to read"


def describe_source(source: str, *, module: str = "") -> dict[str, str]:
    """Tool name -> its ATTP stub, for the tools defined in ``source``; never executes it.

    Raises :class:`ToolLoadError` (naming the module, tool, problem and line) like loading.
    """
    try:
        return _describe_source(source, module)
    except (RecursionError, MemoryError):  # rendering a deeply nested default or annotation
        raise ToolLoadError(_TOO_DEEP, module=module or None) from None


def _describe_source(source: str, module: str) -> dict[str, str]:
    tree = _parse(source, module=module or None)
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
    return render_tools([], stubs.values())


@dataclass(frozen=True)
class DefinedToolInfo:
    """What a ``[tool]`` cell defines, read from its source without running it.

    ``name`` is the tool's name (what model code calls), ``function`` the function of the
    source that implements it, ``stub`` its ATTP description (``def name(...):``, docstring,
    ``pass``), ``signature`` its parameters (annotations and defaults as source text), for
    checking a call's arguments and feeding a chain; ``line`` where the function starts.
    """

    name: str
    function: str
    stub: str
    signature: inspect.Signature
    line: int


def describe_defined_tool(
    name: str,
    source: str,
    *,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    function: str | None = None,
) -> DefinedToolInfo:
    """Describe the tool a ``[tool]`` cell defines; never executes ``source``.

    The function is ``function`` if given, else the one named like the tool, else the only
    public function the source defines. The description is the cell's ``description`` followed
    by the function's docstring (either may be missing, not both); a docstring needs no
    ``Args:`` section, but one that is there must fit the parameters. ``parameters`` (JSON
    Schema) may only describe parameters the function takes; their descriptions and types show
    in the stub. Raises :class:`ToolLoadError` naming the tool, the problem and the line.
    """
    try:
        return _describe_defined(name, source, description, parameters, function)
    except (RecursionError, MemoryError):  # rendering a deeply nested default or annotation
        raise ToolLoadError(_TOO_DEEP, tool=name) from None


def _describe_defined(
    name: str,
    source: str,
    description: str,
    parameters: Mapping[str, Any] | None,
    function: str | None,
) -> DefinedToolInfo:
    if not name.isidentifier() or name.startswith("_"):
        raise ToolLoadError(f"the name {name!r} is not a public Python identifier", tool=name)
    tree = _parse(source, tool=name)
    node = _defined_function(name, tree, function)

    def fail(problem: str) -> ToolLoadError:
        return ToolLoadError(f"{problem} (line {node.lineno})", tool=name, line=node.lineno)

    if isinstance(node, ast.AsyncFunctionDef):
        raise fail(f"{node.name} is an async def, which the sandbox does not run; use def")
    if _yields(node):
        raise fail(f"{node.name} yields: a [tool] function returns its result")
    text = ast.get_docstring(node, clean=True)
    try:
        doc = parse_docstring(text) if text else None
    except DocstringError as exc:
        raise fail(f"{node.name}: {exc}") from None
    described = " ".join(description.split())
    if doc is None and not described:
        raise fail(f"no description: give the cell a description or {node.name} a docstring")
    params = _parameter_names(node.args)
    schema_args = _schema_args(parameters, params, node, fail)
    if doc is not None:
        for arg in doc.args:
            if arg not in params:
                raise fail(f"Args: documents {arg!r}, which is not a parameter")
        undocumented = [p for p in params if p not in doc.args and p not in schema_args]
        if doc.args and undocumented:
            raise fail(f"parameter{'s' if len(undocumented) > 1 else ''} "
                       f"{', '.join(map(repr, undocumented))} not documented in Args:")  # fmt: skip
    signature = _signature(node, {**schema_args, **(doc.args if doc else {})})
    parts = [described] if described else []
    if doc is not None and doc.text.strip() != described:
        parts.append(doc.text)
    entries = [f"    {a.name}: {a.description}" for a in schema_args.values() if a.description]
    if (doc is None or not doc.args) and entries:
        parts.append("Args:\n" + "\n".join(entries))
    stub = _format_stub(f"def {name}{signature}:", "\n\n".join(parts))
    return DefinedToolInfo(name, node.name, stub, signature, node.lineno)


def _defined_function(
    name: str, tree: ast.Module, function: str | None
) -> ast.FunctionDef | ast.AsyncFunctionDef:
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    if function is not None:
        if function not in functions:
            raise ToolLoadError(f"the code defines no function {function!r}", tool=name)
        return functions[function]
    if name in functions:
        return functions[name]
    public = [f for f in functions if not f.startswith("_")]
    if len(public) == 1:
        return functions[public[0]]
    if not public:
        raise ToolLoadError("the code defines no function: write the tool as a def", tool=name)
    raise ToolLoadError(
        f"the code defines {len(public)} functions ({', '.join(public)}): name one like the "
        "tool, or say which one with function=",
        tool=name,
    )


def _yields(node: ast.FunctionDef) -> bool:
    """Whether the function itself (not a function nested in it) yields."""
    todo: list[ast.AST] = list(node.body)
    while todo:
        item = todo.pop()
        if isinstance(item, ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(item))
    return False


def _parameter_names(args: ast.arguments) -> list[str]:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return names + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def _schema_args(
    parameters: Mapping[str, Any] | None, params: list[str], node: ast.FunctionDef, fail: Any
) -> dict[str, ArgDoc]:
    """The schema's properties as docstring entries (type shown the Python way)."""
    if parameters is None:
        return {}
    problem = schema_problem(parameters)
    if problem:
        raise fail(problem)
    properties: Mapping[str, Any] = parameters.get("properties", {})
    unknown = [p for p in properties if p not in params]
    if unknown and node.args.kwarg is None:
        raise fail(f"parameters describes {', '.join(map(repr, unknown))}, which "
                   f"{node.name} does not take")  # fmt: skip
    found = {}
    for key, prop in properties.items():
        kinds = [JSON_TYPES[t] for t in type_names(prop) or []]
        found[key] = ArgDoc(key, " | ".join(kinds) or None, " ".join(
            str(prop.get("description", "")).split()))  # fmt: skip
    return found


def _signature(node: ast.FunctionDef, documented: Mapping[str, ArgDoc]) -> inspect.Signature:
    """The function's parameters as ``inspect`` objects, annotations and defaults as text."""
    kind = inspect.Parameter
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    entries: list[tuple[ast.arg, Any, ast.expr | None]] = [
        (a, kind.POSITIONAL_ONLY if i < len(args.posonlyargs) else kind.POSITIONAL_OR_KEYWORD, d)
        for i, (a, d) in enumerate(zip(positional, defaults, strict=True))
    ]
    if args.vararg is not None:
        entries.append((args.vararg, kind.VAR_POSITIONAL, None))
    entries += [(a, kind.KEYWORD_ONLY, d)
                for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]  # fmt: skip
    if args.kwarg is not None:
        entries.append((args.kwarg, kind.VAR_KEYWORD, None))
    params = []
    for arg, arg_kind, default in entries:
        annotation: Any = kind.empty
        if arg.annotation is not None:
            annotation = SourceText(ast.unparse(arg.annotation))
        elif arg.arg in documented and documented[arg.arg].type:
            annotation = SourceText(str(documented[arg.arg].type))
        value = kind.empty if default is None else SourceText(ast.unparse(default))
        params.append(kind(arg.arg, arg_kind, default=value, annotation=annotation))
    returns = SourceText(ast.unparse(node.returns)) if node.returns is not None else kind.empty
    return inspect.Signature(params, return_annotation=returns)


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


def _parse(source: str, *, module: str | None = None, tool: str | None = None) -> ast.Module:
    """The syntax tree of untrusted text; every way it fails is a :class:`ToolLoadError`."""
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        raise ToolLoadError(
            f"syntax error{where}: {exc.msg}", module=module, tool=tool, line=exc.lineno
        ) from None
    except (RecursionError, MemoryError):
        raise ToolLoadError(_TOO_DEEP, module=module, tool=tool) from None
    except ValueError as exc:  # null bytes
        raise ToolLoadError(f"the code cannot be parsed: {exc}", module=module, tool=tool) from None


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
    return _format_stub(f"def {node.name}({_render_args(node.args, doc.args)}){returns}:", doc.text)


def _format_stub(signature: str, doc: str) -> str:
    """A stub as the model sees it: the ``def`` line, the docstring, ``pass``."""
    text = "\n".join(
        "    " + line if line.strip() else "" for line in doc.replace('"""', r"\"\"\"").splitlines()
    )
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
