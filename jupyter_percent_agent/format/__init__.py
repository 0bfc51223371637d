"""Format core: message-file text <-> nbformat v4.5 notebooks, as plain dicts.

The bottom of the dependency graph. Imports nothing heavy (no nbformat, jupytext, litellm,
nor yaml until a front matter has to be parsed as YAML) so that the command line and the
kernel start fast. See docs/format.md for the format and its notebook mapping.

``reads``/``writes`` are pure; ``read``/``write`` do the I/O (``write`` atomically).
"""

from __future__ import annotations

import gc
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from . import compiled as _compiled

# The compiled core (see compiled.py), when built and current, shadows the hot modules.
_built = _compiled.usable(os.path.dirname(__file__))
if _built is not None:
    __path__.insert(0, _built)
#: Whether reads and writes run on the mypyc-compiled core (else on the Python sources).
COMPILED = _built is not None

from .emit import emit  # noqa: E402
from .errors import FormatError  # noqa: E402
from .model import (  # noqa: E402
    cell_attrs,
    cell_id,
    cell_kind,
    cell_link,
    cell_title,
    document_part,
    error_output,
    front_matter,
    message_text,
    new_id,
    new_message,
    output_attrs,
    output_id,
    output_kind,
    output_text,
    reply_output,
    set_front_matter,
    stream_output,
    tool_call_output,
    tool_result_output,
)
from .notebook import DEFAULT_KERNELSPEC, NS, from_notebook, to_notebook  # noqa: E402
from .parse import is_message_path, parse, section_title  # noqa: E402

__all__ = [
    "COMPILED",
    "DEFAULT_KERNELSPEC",
    "NS",
    "FormatError",
    "cell_attrs",
    "cell_id",
    "cell_kind",
    "cell_link",
    "cell_title",
    "document_part",
    "error_output",
    "front_matter",
    "message_text",
    "new_id",
    "new_message",
    "output_attrs",
    "output_id",
    "output_kind",
    "output_text",
    "read",
    "reads",
    "reply_output",
    "set_front_matter",
    "stream_output",
    "tool_call_output",
    "tool_result_output",
    "write",
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
    try:
        with _no_cyclic_gc():
            return to_notebook(parse(text, path), path)
    except FormatError as err:
        raise err.with_path(path) from None


def _as_text(text: object) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray | memoryview):
        return bytes(text).decode("utf-8")
    raise TypeError(f"reads() takes the text as str (or UTF-8 bytes), not {type(text).__name__}")


def writes(nb: Mapping, *, path: str | None = None) -> str:
    """The message-file text of notebook ``nb`` (canonical form)."""
    path = os.fspath(path) if path is not None else None
    section = None
    if path is not None and not is_message_path(path) and path.lower().endswith(".md"):
        cells = nb.get("cells") or []
        if cells and cells[0].get("cell_type") == "raw":
            src = cells[0].get("source", "")
            section = section_title(src if isinstance(src, str) else "".join(src))
    with _no_cyclic_gc():
        return emit(from_notebook(nb, path, section))


def read(path: str | os.PathLike) -> dict:
    """Read a message file."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    return reads(text, path=os.fspath(path))


def write(nb: Mapping, path: str | os.PathLike, *, durable: bool = True) -> None:
    """Write a message file atomically: a temp file in the same directory, fsync, rename.

    An existing file keeps its permission bits; a reader never sees a half-written file.
    ``durable=False`` leaves out the two fsyncs (about 10 ms on a disk): still atomic, and
    what was written survives the process being killed, but a power loss may bring back
    the file as it was before (task runs write each step so and sync in the background).
    """
    path = os.fspath(path)
    text = writes(nb, path=path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if not durable:
        return
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
