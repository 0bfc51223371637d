"""An MCP tool as one of ours: a Python signature and a docstring made of its input schema,
and its results as Python values.

The model sees an MCP tool as it sees any tool (``def get_current_time(timezone: str):`` and
a Google-style docstring); its code calls it with positional or keyword arguments and gets
structured content as dicts and lists, text as ``str``, an image as a small dict whose
bytes are shown as an image output (``keep_image``). The server's name and description
are model input and shown as text; nothing here reads them as anything else. No SDK import:
this works on the listing's plain fields, so it is cheap and testable alone.
"""

from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from jupyter_percent_agent.tools import ArgDoc, Docstring, Tool

JSON_TYPES: dict[str, str] = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}
MAX_DESCRIPTION = 2000  # characters of a server's description of one tool that are shown


def python_name(name: str) -> str:
    """An MCP tool's name as a Python identifier (``get-time`` -> ``get_time``)."""
    out = re.sub(r"\W", "_", name, flags=re.ASCII) or "tool"
    if out[0].isdigit():
        out = "_" + out
    if keyword.iskeyword(out):
        out += "_"
    return out


def _type_text(schema: Any) -> str | None:
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return JSON_TYPES.get(kind)
    if isinstance(kind, list):
        names = [JSON_TYPES[k] for k in kind if isinstance(k, str) and k in JSON_TYPES]
        return " | ".join(dict.fromkeys(names)) or None
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            names = [t for t in map(_type_text, options) if t]
            return " | ".join(dict.fromkeys(names)) or None
    if "enum" in schema:
        return "str"
    return None


def _one_line(text: Any, limit: int = 300) -> str:
    return " ".join(str(text or "").split())[:limit]


def signature_of(schema: Any) -> tuple[inspect.Signature, dict[str, ArgDoc]]:
    """A keyword-callable signature and the ``Args:`` of a JSON Schema ``object``.

    Required properties come first without a default, optional ones default to ``None`` (the
    server's default is told in the description: it applies when the argument is left out).
    Names that are not Python identifiers leave only ``**arguments``.
    """
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required") if isinstance(schema, Mapping) else None
    required = [r for r in required if r in props] if isinstance(required, list) else []
    names = [*required, *(p for p in props if p not in required)]
    if any(not isinstance(n, str) or not n.isidentifier() or keyword.iskeyword(n) for n in names):
        var = inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD)
        doc = ArgDoc(
            "**arguments", "dict", "the arguments, by their names: " + ", ".join(map(str, names))
        )
        return inspect.Signature([var]), {"**arguments": doc}
    params, docs = [], {}
    for n in names:
        prop = props[n] if isinstance(props[n], Mapping) else {}
        annotation = _type_text(prop) or inspect.Parameter.empty
        optional = n not in required
        params.append(
            inspect.Parameter(
                n,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=annotation,
                default=None if optional else inspect.Parameter.empty,
            )
        )
        words = _one_line(prop.get("description") or prop.get("title") or "")
        if "enum" in prop and isinstance(prop["enum"], list):
            words += f" One of: {', '.join(map(repr, prop['enum'][:20]))}."
        if optional and "default" in prop:
            words += f" Default: {prop['default']!r}."
        docs[n] = ArgDoc(n, annotation if isinstance(annotation, str) else None, words.strip() or n)
    return inspect.Signature(params), docs


def docstring_of(
    description: str | None, args: Mapping[str, ArgDoc], server: str, output_schema: Any = None
) -> Docstring:
    """The docstring the model reads: the server's description, ``Args:``, ``Returns:``."""
    text = " ".join((description or "").replace('"""', "'''").split())[:MAX_DESCRIPTION]
    summary = text or "(no description)"
    returns = "the tool's text content (str), or a list of its parts"
    if wraps_result(output_schema):
        kind = _type_text(output_schema["properties"]["result"])
        returns = f"{kind}: the result" if kind else "the result"
    elif isinstance(output_schema, Mapping):
        returns = "dict: structured content"
    lines = (
        [summary, "", f"(MCP server {server!r})", "", "Args:"]
        if args
        else [summary, "", f"(MCP server {server!r})"]
    )
    for a in args.values():
        kind = f" ({a.type})" if a.type else ""
        lines.append(f"    {a.name}{kind}: {a.description}")
    lines += ["", "Returns:", f"    {returns}"]
    return Docstring(summary=summary, args=dict(args), returns=returns, text="\n".join(lines))


Caller = Callable[[str, dict[str, Any]], Awaitable[Any]]


def make_tool(
    server: str,
    name: str,
    description: str | None,
    input_schema: Any,
    output_schema: Any,
    call: Caller,
    *,
    shown_name: str | None = None,
) -> Tool:
    """A :class:`Tool` whose calls go to ``call(mcp_name, arguments)``."""
    signature, args = signature_of(input_schema)

    async def func(**kwargs: Any) -> Any:
        # An optional argument left at None is left out: the server's default applies.
        return await call(name, {k: v for k, v in kwargs.items() if v is not None})

    func.__name__ = shown_name or python_name(name)
    return Tool(
        name=func.__name__,
        func=func,
        doc=docstring_of(description, args, server, output_schema),
        signature=signature,
        module=server,
        path=f"mcp:{server}",
    )


def tool_names(
    listings: Mapping[str, Iterable[str]], taken: Iterable[str] = ()
) -> dict[tuple[str, str], str]:
    """(server, MCP tool name) -> the Python name the model calls it by.

    A name two servers share, or one a Python tool already has, is kept apart by its
    server's name: ``clock_get_time`` and ``world_get_time``.
    """
    taken = set(taken)
    count: dict[str, int] = {}
    for names in listings.values():
        for n in set(map(python_name, names)):
            count[n] = count.get(n, 0) + 1
    out: dict[tuple[str, str], str] = {}
    for server, names in listings.items():
        for n in names:
            base = python_name(n)
            clash = count[base] > 1 or base in taken
            out[(server, n)] = python_name(f"{server}_{base}") if clash else base
    return out


ImageKeeper = Callable[[str, str], int | None]
"""Takes an image's (MIME type, base64) out of a result; its number among the images the run
shows (None: nobody shows it)."""


def content_value(item: Any, keep_image: ImageKeeper | None = None) -> Any:
    """One content block of a result as a Python value: text as ``str``, others as a dict
    saying what they are. An image's bytes stay out of the model's code: ``keep_image``
    takes them (to show them as an image output) and its number is the dict's ``image``."""
    kind = getattr(item, "type", None)
    if kind == "text":
        return str(getattr(item, "text", ""))
    if kind in ("image", "audio"):
        data = str(getattr(item, "data", "") or "")
        mime = getattr(item, "mime_type", None)
        value: dict[str, Any] = {"type": kind, "mime_type": mime, "bytes": len(data) * 3 // 4}
        if kind == "image" and keep_image is not None and isinstance(mime, str) and data:
            number = keep_image(mime, data)
            if number is not None:
                value["image"] = number
        return value
    if kind == "resource":
        res = getattr(item, "resource", None)
        text = getattr(res, "text", None)
        return {
            "type": "resource",
            "uri": str(getattr(res, "uri", "")),
            **({"text": text} if isinstance(text, str) else {}),
        }
    if kind == "resource_link":
        return {
            "type": "resource_link",
            "uri": str(getattr(item, "uri", "")),
            "name": getattr(item, "name", None),
        }
    return {"type": str(kind)}


def wraps_result(output_schema: Any) -> bool:
    """Whether the output schema only wraps a value in ``{"result": ...}`` (what SDK servers
    do for a function returning a list, a string, a number)."""
    props = output_schema.get("properties") if isinstance(output_schema, Mapping) else None
    return isinstance(props, Mapping) and list(props) == ["result"]


def result_value(
    result: Any, output_schema: Any = None, keep_image: ImageKeeper | None = None
) -> Any:
    """A tool's successful result for the model's code: its structured content if it has
    some (unwrapped from ``{"result": ...}``), else its one text (``str``), else the list of
    its parts. Its images go to ``keep_image`` whatever the value is."""
    structured = getattr(result, "structured_content", None)
    parts = [content_value(c, keep_image) for c in getattr(result, "content", None) or []]
    if structured is not None:
        if (
            wraps_result(output_schema)
            and isinstance(structured, Mapping)
            and list(structured) == ["result"]
        ):
            return structured["result"]
        return structured
    if len(parts) == 1:
        return parts[0]
    return parts or None


def error_text(result: Any) -> str:
    """What a result marked ``isError`` says, as one line."""
    texts = [
        str(getattr(c, "text", ""))
        for c in getattr(result, "content", None) or []
        if getattr(c, "type", None) == "text"
    ]
    return _one_line(" ".join(texts), 1000) or "the tool reported an error"
