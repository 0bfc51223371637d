"""The one intermediate form of the format: a record, what one heading and its body say.

The reader makes a record of each cell heading it matches and hands it to the notebook
mapping (``notebook.py``); the writer makes one of each cell and output and writes it
(``writer.record_text``). In the style of markdown-it-py's ``Token``: a small frozen value that
both sides understand, so that a rule reads or writes a record, never a dozen loose values.

What each ``[type]`` of an input cell means as an nbformat cell type, and back, is
:data:`CELL_TYPE_OF` and :data:`TYPE_OF_CELL` (one table, read in both directions).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final, NamedTuple

__all__ = ["CELL_TYPE_OF", "TYPE_OF_CELL", "Record", "make_record"]


class Record(NamedTuple):
    """One cell (``%%``) or output (``%%%``) of the text.

    ``out``: an output's record; ``level``: the heading's level (number of ``#``); ``title``;
    ``id``: the footnote id (None when the heading has none); ``type``, ``sub``, ``link``: the
    footnote's ``[TYPE:SUB](LINK)`` (None when not given); ``attrs``: its ``key=value``
    attributes (reading: all of them, a dict the mapping may take entries from; writing: the
    flat metadata, the writer's own ``struct`` and namespaced entry beside it); ``body``: the
    text under it, unescaped; ``pos``: where its heading starts in the reader's text (for the
    line of an error; 0 when written).
    """

    out: bool
    level: int
    title: str
    id: str | None
    type: str | None
    sub: str | None
    link: str | None
    attrs: Any
    body: str
    pos: int = 0


#: ``make_record((out, level, title, id, type, sub, link, attrs, body, pos))``: a
#: :class:`Record` made in C, without the Python ``__new__`` of a NamedTuple (a third of the
#: cost, and the reader and the writer make one per heading).
make_record: Final = partial(tuple.__new__, Record)


#: The nbformat cell type of an input cell by its ``[type]`` (when ``cell_type=`` does not say
#: another): ``[raw]`` is a raw cell, every other type (messages, ``[code]``, ``[tool]``, ...)
#: a code cell.
CELL_TYPE_OF: Final = {"markdown": "code", "code": "code", "raw": "raw", "tool": "code",
                       "tool_call": "code", "toolchain": "code", "async": "code",
                       "task": "code"}
#: Read from the right: the ``[type]`` a cell of a cell type has when its metadata names none
#: (a code cell with no type is a message: ``[markdown]``, the type a heading need not say).
TYPE_OF_CELL: Final = {"code": "markdown", "markdown": "markdown", "raw": "raw"}
