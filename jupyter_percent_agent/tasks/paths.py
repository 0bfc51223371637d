"""JSONPath into a task's context: parse, read, write (creating keys and list slots).

A thin layer over ``jsonpath-ng`` (which both reads and writes paths, and takes any Unicode
name: ``$.标题``). Pure functions; compiled paths are cached.
"""

from __future__ import annotations

import functools
from typing import Any

NOT_FOUND: Any = object()
"""What :func:`read` returns when the path matches nothing."""


class PathError(ValueError):
    """A JSONPath that does not parse, or a write that cannot be made."""


@functools.lru_cache(maxsize=1024)
def compile_path(text: str) -> Any:
    """The compiled path; :class:`PathError` with the parser's reason when it does not parse."""
    if not isinstance(text, str) or not text.strip().startswith("$"):
        raise PathError(f"{text!r} is not a JSONPath (it starts with $, e.g. $.标题)")
    from jsonpath_ng import parse
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError

    try:
        return parse(text)
    except (JsonPathParserError, JsonPathLexerError, ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise PathError(f"JSONPath {text!r} does not parse: {reason}") from None


def path_problem(text: Any) -> str | None:
    """Why ``text`` is not a usable JSONPath, or ``None``."""
    try:
        compile_path(text)
    except PathError as exc:
        return str(exc)
    except Exception as exc:  # an unhashable value (a list given as a path)
        return f"{text!r} is not a JSONPath: {exc}"
    return None


def is_root(text: str) -> bool:
    return text.strip() == "$"


def _singular(path: Any) -> bool:
    """Whether ``path`` names at most one place: names and single indices only."""
    from jsonpath_ng.jsonpath import Child, Fields, Index, Root

    if isinstance(path, Root):
        return True
    if isinstance(path, Child):
        return _singular(path.left) and _singular(path.right)
    if isinstance(path, Fields):
        return len(path.fields) == 1 and path.fields[0] != "*"
    if isinstance(path, Index):
        return len(getattr(path, "indices", (0,))) == 1
    return False


def read(data: Any, text: str) -> Any:
    """The value at ``text`` in ``data``; a path that may match many places (``[*]``, ``..``)
    gives the list of matches. :data:`NOT_FOUND` when nothing matches."""
    path = compile_path(text)
    matches = [m.value for m in path.find(data)]
    if _singular(path):
        return matches[0] if matches else NOT_FOUND
    return matches if matches else NOT_FOUND


def write(data: dict[str, Any], text: str, value: Any) -> None:
    """Put ``value`` at ``text`` in ``data`` (in place), creating missing keys and list slots.

    :class:`PathError` when the path is ``$`` itself or runs into a value that is neither an
    object nor a list (``$.a.b`` where ``a`` is a string).
    """
    if is_root(text):
        raise PathError("an output cannot replace the whole context ($); name a key, e.g. $.结果")
    path = compile_path(text)
    try:
        path.update_or_create(data, value)
    except (TypeError, AttributeError, IndexError, KeyError) as exc:
        raise PathError(f"cannot write {text}: {type(exc).__name__}: {exc}") from None
