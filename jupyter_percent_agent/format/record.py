"""The one intermediate form of the format: a record, what one heading and its body say.

The reader makes a record of each cell heading it matches and hands it to the notebook
mapping (``notebook.py``); the writer makes one of each cell and output and writes it
(``writer.record_text``, which takes the record alone). In the style of markdown-it-py's
``Token``: a small frozen value that both sides understand, so that a rule reads or writes a
record, never a dozen loose values.

Beside it, the one table of what each ``[type]`` means in nbformat terms, read in both
directions: for an input cell, :data:`CELL_TYPE_OF` and :data:`TYPE_OF_CELL`; for an output,
:data:`OUTPUT_OF_TYPE` (:func:`output_of`: which output type and body MIME type a heading
reads as) and :data:`OUTPUT_KINDS` (each nbformat output type's fields, the attributes that
write them, the ``[type]`` written for it). Adding a ``[type]`` is one row.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final, NamedTuple

__all__ = ["CELL_TYPE_OF", "CODE_OUTPUT", "OUTPUT_KINDS", "OUTPUT_OF_TYPE", "REPLY_OUTPUT",
           "STREAMS", "TYPE_OF_CELL", "OutputKind", "OutputOf", "Record", "make_record",
           "output_of"]


class Record(NamedTuple):
    """One cell (``%%``) or output (``%%%``) of the text.

    ``out``: an output's record; ``level``: the heading's level (number of ``#``); ``title``;
    ``id``: the footnote id (None when the heading has none); ``type``, ``sub``, ``link``: the
    footnote's ``[TYPE:SUB](LINK)`` (None when not given). The footnote's ``key=value``
    attributes, in the order they are written: ``struct``, those that hold the notebook's own
    fields (``execution_count``, ``mime_type``, ``ename``...: :data:`OUTPUT_KINDS`), ``attrs``,
    the flat metadata, and ``ns``, the namespaced entry (``percent_agent={...}``). Reading,
    every attribute is in ``attrs`` (a dict the mapping takes the others from) and ``struct``
    and ``ns`` are None; writing, ``attrs`` may be the notebook's metadata itself, whose own
    namespaced entry is never written. ``body``: the text under the footnote, unescaped;
    ``pos``: where its heading starts in the reader's text (for the line of an error; 0 when
    written).
    """

    out: bool
    level: int
    title: str
    id: str | None
    type: str | None
    sub: str | None
    link: str | None
    struct: dict | None
    attrs: Any
    ns: dict | None
    body: str
    pos: int = 0


#: ``make_record((out, level, title, id, type, sub, link, struct, attrs, ns, body, pos))``: a
#: :class:`Record` made in C, without the Python ``__new__`` of a NamedTuple (a third of the
#: cost, and the reader and the writer make one per heading).
make_record: Final = partial(tuple.__new__, Record)


# --------------------------------------------------------------------------- input cells

#: The nbformat cell type of an input cell by its ``[type]`` (when ``cell_type=`` does not say
#: another): ``[raw]`` is a raw cell, every other type (messages, ``[code]``, ``[tool]``, ...)
#: a code cell.
CELL_TYPE_OF: Final = {"markdown": "code", "code": "code", "raw": "raw", "tool": "code",
                       "tool_call": "code", "toolchain": "code", "async": "code",
                       "task": "code"}
#: Read from the right: the ``[type]`` a cell of a cell type has when its metadata names none
#: (a code cell with no type is a message: ``[markdown]``, the type a heading need not say).
TYPE_OF_CELL: Final = {"code": "markdown", "markdown": "markdown", "raw": "raw"}


# --------------------------------------------------------------------------- outputs

#: Streams whose lines carry their name as a prefix (``stdout> ``); JupyterLab records what a
#: user typed into input() as a "stdin" stream. A stream of any other name is a block of its
#: own with ``stream="NAME"`` and its text unprefixed.
STREAMS: Final = ("stdout", "stderr", "stdin")


class OutputKind(NamedTuple):
    """An nbformat 4.5 output type as the text holds it."""

    #: the keys nbformat 4.5 gives it (any other is a later minor version's, kept apart)
    fields: frozenset[str]
    #: the footnote attributes that hold what its body does not, in their written order
    attrs: tuple[str, ...]
    #: the ``[type]`` written for it when its metadata names none (None: the notebook's
    #: language, code output)
    type: str | None


#: The output types of nbformat 4.5, in both directions; any other is from a later version
#: (its "unrecognized_output": ``output_type="NAME"``, its fields as JSON), kept as it is.
OUTPUT_KINDS: Final = {
    "stream": OutputKind(frozenset({"output_type", "name", "text"}),
                         ("stream", "final_newline"), None),
    "display_data": OutputKind(frozenset({"output_type", "data", "metadata"}),
                               ("mime_type",), None),
    "execute_result": OutputKind(
        frozenset({"output_type", "data", "metadata", "execution_count"}),
        ("mime_type", "execution_count"), None),
    "error": OutputKind(frozenset({"output_type", "ename", "evalue", "traceback"}),
                        ("ename", "evalue", "traceback_lines"), "error"),
}


class OutputOf(NamedTuple):
    """What an output (``%%%``) heading of a ``[type]`` reads as."""

    #: the output type of the block when no attribute says another (``execution_count=``
    #: makes an ``execute_result``, ``mime_type=`` other than ``text/plain`` display data):
    #: ``"stream"``, ``"display_data"`` or ``"error"``
    output_type: str
    #: the MIME type of its body when it is display data and ``mime_type=`` names none
    mime: str | None


#: ``[LANG]``, a type that names a language (the notebook's, or a known one): code output.
CODE_OUTPUT: Final = OutputOf("stream", "text/plain")
#: Any type neither the table nor a language: an agent's reply (``[output]`` too).
REPLY_OUTPUT: Final = OutputOf("display_data", "text/markdown")
#: The other ``[type]`` and ``[TYPE:SUB]`` rows. ``[output:stdout]`` is a stream whose
#: unprefixed lines are stdout's (a stream of an agent rather than of code).
OUTPUT_OF_TYPE: Final = {
    "error": OutputOf("error", None),
    "tool": OutputOf("display_data", "text/plain"),
    "tool_result": OutputOf("display_data", "text/plain"),
    **{"output:" + name: OutputOf("stream", "text/markdown") for name in STREAMS},
}


def output_of(typ: str, sub: str | None, is_lang: bool) -> OutputOf:
    """The row of an output heading ``[typ:sub]`` (``is_lang``: ``typ`` names a language):
    ``[error]`` first, then a language's ``CODE_OUTPUT``, then ``TYPE:SUB``, then ``TYPE``,
    else ``REPLY_OUTPUT``. The reader reads a heading by it; the writer asks it what the
    heading it writes reads back as."""
    if is_lang and typ != "error":
        return CODE_OUTPUT
    if sub is not None:
        row = OUTPUT_OF_TYPE.get(typ + ":" + sub)
        if row is not None:
            return row
    return OUTPUT_OF_TYPE.get(typ, REPLY_OUTPUT)
