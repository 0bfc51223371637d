"""JSONPath into a task's context: parse, read, write (creating keys and list slots).

Paths are parsed and read by ``python-jsonpath`` (RFC 9535: any Unicode name, ``$.标题``,
``$.タイトル``, ``$.café``; errors name the column). A write walks the parsed path's name and
index selectors, creating missing objects, lists and list slots (padded with ``null``). Pure
functions; compiled paths are cached.
"""

from __future__ import annotations

import functools
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError

NOT_FOUND: Any = object()
"""What :func:`read` returns when the path matches nothing."""


class PathError(PercentAgentError, ValueError):
    """A JSONPath that does not parse, or a write that cannot be made."""

    error_kind = Kind.BAD_FILE


@functools.lru_cache(maxsize=2048)
def compile_path(text: str) -> Any:
    """The compiled path; :class:`PathError` with the parser's reason when it does not parse."""
    if not isinstance(text, str) or not text.strip().startswith("$"):
        raise PathError(f"{text!r} is not a JSONPath (it starts with $, e.g. $.标题)")
    import jsonpath

    try:
        path = jsonpath.compile(text.strip())
    except jsonpath.JSONPathError as exc:
        reason = str(exc).splitlines()[0]
        where = getattr(exc, "token", None)
        col = f" (column {where.index + 1})" if where is not None and hasattr(where, "index") \
            else ""
        raise PathError(f"JSONPath {text!r} does not parse{col}: {reason}") from None
    if not isinstance(path, jsonpath.JSONPath):  # a union of paths (a | b)
        raise PathError(f"JSONPath {text!r}: one path, not a union of paths")
    return path


def path_problem(text: Any) -> str | None:
    """Why ``text`` is not a usable JSONPath, or ``None``."""
    try:
        compile_path(text)
    except PathError as exc:
        return str(exc)
    except TypeError:  # unhashable: a list or a mapping given as a path
        return f"{text!r} is not a JSONPath (it starts with $, e.g. $.标题)"
    return None


def target_problem(text: Any) -> str | None:
    """Why ``text`` cannot be written to: it does not parse, is ``$`` itself, or may name
    more than one place (a wildcard, a slice, ``..``, a filter)."""
    problem = path_problem(text)
    if problem is not None:
        return problem
    if is_root(text):
        return "an output cannot replace the whole context ($); name a key, e.g. $.结果"
    if _steps(text) is None:
        return (f"{text} may name more than one place: an output is written to one place, "
                "named by keys and indices ($.段落[0], $['a b'].c)")
    return None


def is_root(text: str) -> bool:
    return text.strip() == "$"


def read(data: Any, text: str) -> Any:
    """The value at ``text`` in ``data``; a path that may match many places (``[*]``, ``..``)
    gives the list of matches. :data:`NOT_FOUND` when nothing matches."""
    path = compile_path(text)
    if not isinstance(data, (dict, list)):
        # a text, a number: only $ names it (python-jsonpath would parse a str as JSON)
        return data if is_root(text) else NOT_FOUND
    matches = [m.obj for m in path.finditer(data)]
    if path.singular_query():
        return matches[0] if matches else NOT_FOUND
    return matches if matches else NOT_FOUND


@functools.lru_cache(maxsize=2048)
def _steps(text: str) -> tuple[str | int, ...] | None:
    """The keys and indices of a singular path (``$.a[0]`` -> ``("a", 0)``), else ``None``."""
    from jsonpath.selectors import IndexSelector, NameSelector

    path = compile_path(text)
    if not path.singular_query():
        return None
    out: list[str | int] = []
    for segment in path.segments:
        (selector,) = segment.selectors
        if isinstance(selector, NameSelector):
            out.append(selector.name)
        elif isinstance(selector, IndexSelector):
            out.append(selector.index)
        else:
            return None
    return tuple(out)


def write(data: dict[str, Any], text: str, value: Any) -> None:
    """Put ``value`` at ``text`` in ``data`` (in place), creating missing keys, lists and list
    slots (padded with ``None``). :class:`PathError` for a path that is no write target
    (:func:`target_problem`) or runs into a value that is neither an object nor a list."""
    problem = target_problem(text)
    if problem is not None:
        raise PathError(problem)
    steps = _steps(text)
    assert steps is not None
    node: Any = data
    for i, key in enumerate(steps):
        if isinstance(key, str):
            if not isinstance(node, dict):
                raise PathError(f"cannot write {text}: {_where(steps[:i])} is {_kind(node)}, "
                                "not an object")
        else:
            if not isinstance(node, list):
                raise PathError(f"cannot write {text}: {_where(steps[:i])} is {_kind(node)}, "
                                "not a list")
            if key < -len(node):
                raise PathError(f"cannot write {text}: index {key} is before the start of "
                                f"{_where(steps[:i])} ({len(node)} items)")
            if key >= len(node):
                node.extend([None] * (key + 1 - len(node)))
        if i == len(steps) - 1:
            node[key] = value
            return
        child = node.get(key) if isinstance(node, dict) else node[key]
        if child is None:
            child = [] if isinstance(steps[i + 1], int) else {}
            node[key] = child
        elif not isinstance(child, dict | list):
            raise PathError(f"cannot write {text}: {_where(steps[:i + 1])} is {_kind(child)}")
        node = child


def _where(steps: tuple[str | int, ...]) -> str:
    out = "$"
    for s in steps:
        out += f"[{s}]" if isinstance(s, int) else (f".{s}" if s.isidentifier() else f"[{s!r}]")
    return out


def _kind(value: Any) -> str:
    return {str: "a string", int: "a number", float: "a number", bool: "true/false",
            list: "a list", dict: "an object"}.get(type(value), repr(value))
