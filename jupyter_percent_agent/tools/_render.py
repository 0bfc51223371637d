"""Render tools the ATTP way: a Python signature, the docstring, ``pass``."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import Any

from ._tool import Tool

HEADER = "# ===== Available tools ====="


def render_tool(tool: Tool) -> str:
    """``def name(arg: type = default) -> type:`` plus the docstring, as the model should see it.

    Async tools render as plain ``def``: model code calls every tool synchronously. Generator
    tools show the type their ``Returns:`` section declares, not ``Iterator[...]``.
    """
    params = [
        _plain(param, tool.doc.args.get(param.name))
        for param in tool.signature.parameters.values()
        if param.name not in ("self", "cls")
    ]
    returns: Any = inspect.Signature.empty
    if tool.is_streaming:
        # What the calling code gets is the final result, typed in the docstring's Returns:.
        declared = re.match(r"^([\w\[\], |.]+):", tool.doc.returns)
        if declared:
            returns = SourceText(declared.group(1).strip())
    elif tool.signature.return_annotation is not inspect.Signature.empty:
        returns = SourceText(annotation_text(tool.signature.return_annotation))
    signature = inspect.Signature(params, return_annotation=returns)
    doc = _indent(tool.doc.text.replace('"""', r"\"\"\""), "    ")
    return f'def {tool.name}{signature}:\n    """\n{doc}\n    """\n    pass\n'


def render_tools(tools: list[Tool], stubs: Iterable[str] = ()) -> str:
    """All tools under the seed's header, two blank lines apart, or a note that there are none.

    ``stubs``: tools already rendered (from source text), shown after ``tools``.
    """
    parts = [render_tool(t) for t in tools] + list(stubs)
    if not parts:
        return f"{HEADER}\n\n# (no tools are available)\n"
    return HEADER + "\n\n" + "\n\n".join(parts)


def annotation_text(annotation: Any) -> str:
    """An annotation as source text: strings as written, classes by name, generics by repr."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__qualname__
    return re.sub(r"\btyping\.", "", repr(annotation))


class SourceText:
    """An annotation that ``inspect`` prints as the given source text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _plain(param: inspect.Parameter, doc_arg: Any) -> inspect.Parameter:
    """The parameter with its annotation (or the docstring's type) as printable source text."""
    annotation: Any = inspect.Parameter.empty
    if param.annotation is not inspect.Parameter.empty:
        annotation = SourceText(annotation_text(param.annotation))
    elif doc_arg is not None and doc_arg.type:
        annotation = SourceText(doc_arg.type)
    return param.replace(annotation=annotation)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())
