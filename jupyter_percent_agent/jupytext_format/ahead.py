"""A message file parsed ahead of jupytext's reading of it.

jupytext's contents manager parses a text file where it reads it, inside its ``get``: on the
Jupyter server's event loop, which serves every other request of every user and tab. The
message-files contents manager parses first, in a worker thread (:func:`parse_ahead`), and
lets jupytext's reading of that same text take the result up (:func:`using_parsed`, then the
msg reader asks :func:`taken`), so no parse of a large or hostile file holds the loop.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class Parsed:
    """What the msg reader made of ``text`` (read with extension ``ext``): a notebook, or the
    error it raised (raised again where jupytext reads)."""

    text: str
    ext: str
    notebook: Any = None
    error: Exception | None = None

    def result(self) -> Any:
        """The notebook, or the parse's error raised."""
        if self.error is not None:
            raise self.error
        return self.notebook


# Taken up once, by the reading of the same text in the same context (one request's task).
_PARSED: contextvars.ContextVar[list[Parsed] | None] = contextvars.ContextVar(
    "jupyter_percent_agent_parsed", default=None
)


def parse_ahead(text: str, path: str) -> Parsed:
    """The msg reader's notebook for ``text``, the file ``path`` (a contents-API path), made
    now: for jupytext's reading of the same text inside :func:`using_parsed` to take up."""
    from nbformat.notebooknode import NotebookNode

    from jupyter_percent_agent import format as core

    ext = os.path.splitext(path)[1]
    try:
        return Parsed(text, ext, as_nodes(core.reads(text, path=path), NotebookNode))
    except Exception as err:  # the reading inside using_parsed raises it, as it would have
        return Parsed(text, ext, error=err)


@contextlib.contextmanager
def using_parsed(parsed: Parsed | None) -> Iterator[None]:
    """Inside: the msg reader's next reading of ``parsed.text`` (with its extension) takes
    ``parsed`` up (:func:`taken`) instead of parsing again; any other text is parsed."""
    token = _PARSED.set(None if parsed is None else [parsed])
    try:
        yield
    finally:
        _PARSED.reset(token)


def taken(text: str, ext: str) -> Parsed | None:
    """The parse made ahead of ``text`` read with ``ext``, once; None when there is none."""
    ahead = _PARSED.get()
    if ahead and ahead[0].ext == ext and ahead[0].text == text:
        return ahead.pop()
    return None


def as_nodes(obj: Any, node: type) -> Any:
    """``nbformat.from_dict`` for what the format core builds, at a fraction of its cost (the
    largest of a GET): no call per string, no ``__init__`` per node (its flag's default)."""
    kind = type(obj)
    if kind is dict or isinstance(obj, dict):
        out = node.__new__(node)
        dict.update(out, {k: v if type(v) is str else as_nodes(v, node)
                          for k, v in obj.items()})
        return out
    if kind is list or kind is tuple:
        return [v if type(v) is str else as_nodes(v, node) for v in obj]
    return obj
