"""Format core: message-file text <-> nbformat v4.5 notebooks, as plain dicts.

The bottom of the dependency graph. Imports nothing heavy (no nbformat, jupytext, litellm,
nor yaml until a front matter has to be parsed as YAML) so that the command line and the
kernel start fast. See docs/format.md for the format and its notebook mapping.

``reads``/``writes`` are pure; ``read``/``write`` do the I/O (``files.py``: a path is
followed only inside its folder, ``write`` is atomic). ``load_yaml`` is the one YAML reader
of the project, ``message_section`` the one detector of where a ``.md``'s messages are.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from jupyter_percent_agent.masking import mask

from .detect import (
    front_matter_end,
    is_message_path,
    is_message_text,
    message_section,
    messages_setting,
)
from .errors import FormatError, RefusedFile
from .files import (
    check_markdown,
    check_writable,
    decode_utf8,
    make_durable,
    read_bytes,
    read_text,
    safe_path,
    write_text,
)
from .front_matter import front_matter, set_front_matter
from .lines import split_fenced, unclosed_fence
from .model import (
    cell_attrs,
    cell_id,
    cell_kind,
    cell_language,
    cell_link,
    cell_title,
    clear_outputs,
    code_data_output,
    document_part,
    error_output,
    message_text,
    new_cell_id,
    new_code_cell,
    new_id,
    new_message,
    next_output_id,
    output_attrs,
    output_id,
    output_kind,
    output_text,
    reply_output,
    result_output,
    set_cell_attrs,
    set_output_attrs,
    short_id,
    short_ids,
    stream_output,
    tool_call_id,
    tool_call_output,
    tool_result_output,
    with_plain_text,
    without_plain_text,
)
from .notebook import DEFAULT_KERNELSPEC, NBFORMAT_ID, NS, is_conversation_cell
from .reader import read_notebook
from .safe_yaml import load_yaml, load_yaml_with_lines
from .script import is_script_path, script_for, script_line, to_markdown, to_script
from .text import escape_surrogates
from .writer import write_notebook, write_parts

__all__ = [
    "DEFAULT_KERNELSPEC",
    "NBFORMAT_ID",
    "NS",
    "FormatError",
    "RefusedFile",
    "cell_attrs",
    "cell_id",
    "cell_kind",
    "cell_language",
    "cell_link",
    "cell_title",
    "check_markdown",
    "check_writable",
    "clear_outputs",
    "code_data_output",
    "decode_utf8",
    "document_part",
    "error_output",
    "escape_surrogates",
    "front_matter",
    "is_message_path",
    "is_message_text",
    "is_script_path",
    "load_yaml",
    "load_yaml_with_lines",
    "make_durable",
    "message_section",
    "message_text",
    "new_cell_id",
    "new_code_cell",
    "new_id",
    "new_message",
    "next_output_id",
    "output_attrs",
    "output_id",
    "output_kind",
    "output_text",
    "read",
    "read_bytes",
    "read_text",
    "reads",
    "reply_output",
    "result_output",
    "safe_path",
    "script_for",
    "set_cell_attrs",
    "set_front_matter",
    "set_output_attrs",
    "short_id",
    "short_ids",
    "split_fenced",
    "stream_output",
    "tool_call_id",
    "tool_call_output",
    "tool_result_output",
    "unclosed_fence",
    "with_plain_text",
    "without_plain_text",
    "write",
    "write_text",
    "writes",
]


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector.

    Reading and writing allocate tens of thousands of dicts and lists and create no reference
    cycles; a full collection triggered meanwhile walks every object the caller holds and, with
    a large notebook alive, costs as much as the read itself. Reference counting still frees
    everything; the collector is resumed (if it was running) on the way out.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def reads(text: str | bytes, *, path: str | None = None) -> dict:
    """The notebook (nbformat 4.5, plain dicts) that message-file ``text`` means.

    ``text`` is a str, or bytes decoded as UTF-8 (as :func:`read` decodes a file; like
    ``nbformat.reads``). ``path`` tells ``x.msg.md`` (all messages) from a plain ``x.md`` whose
    front matter names the section holding the messages. Raises :class:`FormatError` naming
    the bad line.
    """
    if type(text) is not str:
        text = _as_text(text)
    path = os.fspath(path) if path is not None else None
    script = script_for(path)
    added = None  # the lines to_markdown added, when it is asked
    try:
        with _no_cyclic_gc():
            if script is None:
                return read_notebook(text, path)
            # "\r" first: one character is found by memchr, "\r\n" by a slower search
            crlf = "\r" in text and text.find("\r\n") == text.find("\n") - 1 >= 0
            text, added = to_markdown(text.replace("\r\n", "\n") if crlf else text, script)
            return read_notebook(text.replace("\n", "\r\n") if crlf else text, path)
    except FormatError as err:
        if added is not None:
            err = type(err)(err.reason, line=script_line(err.line, added()), path=err.path)
        raise err.with_path(path) from None


def _as_text(text: object) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray | memoryview):
        return bytes(text).decode("utf-8")
    raise TypeError(f"reads() takes the text as str (or UTF-8 bytes), not {type(text).__name__}")


def writes(nb: Mapping, *, path: str | None = None) -> str:
    """The message-file text of notebook ``nb`` (canonical form).

    Never holds a lone surrogate (see :func:`escape_surrogates`): the text always encodes as
    UTF-8, nor a sensitive value (a key, a token: ``masking``; it says ``[masked NAME]``
    instead). A plain ``.md`` whose front matter says ``messages: false`` takes no message: a
    conversation cell in it is a :class:`FormatError`.
    """
    path = os.fspath(path) if path is not None else None
    script = script_for(path)
    if script is not None:
        with _no_cyclic_gc():
            head, records, crlf = write_parts(nb, path)
            text = to_script(head, records, script, front_matter_end(head))
        text = mask(escape_surrogates(text))
        return text.replace("\n", "\r\n") if crlf else text
    section = None
    if not is_message_path(path):
        cells = nb.get("cells") or []
        if cells and cells[0].get("cell_type") == "raw":
            src = cells[0].get("source", "")
            said = messages_setting(src if isinstance(src, str) else "".join(src))
            if said[1] is False:
                if any(is_conversation_cell(c) for c in cells):
                    raise FormatError("the front matter says messages: false, so this file "
                                      "holds no messages (set messages: true to add some)",
                                      line=1, path=path)
            elif path is not None and path.lower().endswith(".md"):
                section = message_section(src if isinstance(src, str) else "".join(src))
    with _no_cyclic_gc():
        text = write_notebook(nb, path, section)
    return mask(escape_surrogates(text))


def read(path: str | os.PathLike) -> dict:
    """Read a message file (through :func:`safe_path`: a symbolic link out of its folder, a
    FIFO or a device is a :class:`FormatError`, never read)."""
    path = os.fspath(path)
    return reads(read_text(path), path=path)


def write(nb: Mapping, path: str | os.PathLike, *, durable: bool = True) -> None:
    """Write a message file atomically (:func:`write_text`): a reader never sees a half-written
    file, a killed writer leaves no temporary file, an existing file keeps its permission
    bits, and a symbolic link inside the folder stays a link (its target is written).
    ``durable=False`` leaves out the fsyncs (task runs write each step so and sync later)."""
    path = os.fspath(path)
    write_text(path, writes(nb, path=path), durable=durable)
