"""What the contents managers (sync and async) do to message files, as plain functions:
everything but the I/O, which each manager does its own way (``contents.manager``).

A request for a ``.md`` path goes: checks before it opens (:func:`check_open`, then
:func:`read_ahead` with the file's jupytext configuration: the async manager runs it in a worker
thread, so that parsing a large or hostile file never holds the server's event loop), jupytext's
reading inside :func:`reading` (the path hint, errors through the package's table, the parse
made ahead taken up), then :func:`for_jupyterlab`; a save goes :func:`prepare_save`,
:func:`check_save` (a message file paired with nothing is written straight through the core),
then jupytext's save inside :func:`reading`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def is_md(path: str) -> bool:
    """A path the message-file rules apply to: a ``.md``, or a script message file
    (``NAME.msg.py``: the ``.msg.md`` grammar behind a comment prefix)."""
    from jupyter_percent_agent.format.script import is_script_path

    return path.lower().endswith(".md") or is_script_path(path)


def translate(err: Exception, path: str, root: str | None = None) -> Exception | None:
    """The HTTP error the package's table gives for ``err`` (or the package's error it was
    raised from: jupytext wraps them), naming ``path`` as the client does; ``None`` for an
    error of jupyter_server's or jupytext's own, which passes through."""
    from tornado.web import HTTPError

    from jupyter_percent_agent import errors

    cause = errors.find(err)
    if cause is None:
        return None
    from jupyter_percent_agent.masking import mask

    shown = errors.report(cause, path=path.strip("/"), root=root)
    assert shown is not None
    return HTTPError(shown.http_status, mask(shown.message), reason=shown.title)


def replaceable(os_path: str, format: str | None) -> bool:
    """An existing Markdown file in a writable folder: the case where a rename is possible.

    A new file has no reader yet; jupyter_server's writing (and its modes) is right for it.
    """
    from jupyter_percent_agent.errors import PercentAgentError
    from jupyter_percent_agent.format import safe_path

    if not (format == "text" and is_md(os_path) and os.path.isfile(os_path)):
        return False
    try:
        target = safe_path(os_path)
    except PercentAgentError:
        # a text file (a message notebook was refused before): jupyter_server's own writing
        return False
    return os.access(os.path.dirname(target) or ".", os.W_OK)


# Where a message notebook opened in JupyterLab keeps its file's kernelspec and language_info.
FILE_METADATA = "file_metadata"
_KERNEL_KEYS = ("kernelspec", "language_info")


def message_metadata(model: dict[str, Any] | None, path: str) -> dict[str, Any] | None:
    """The notebook metadata of a message notebook, else None."""
    from jupyter_percent_agent.jupytext_format import FORMAT_NAME, is_message_path

    if not isinstance(model, dict) or model.get("type") != "notebook":
        return None
    content = model.get("content")
    meta = content.get("metadata") if isinstance(content, dict) else None
    if not isinstance(meta, dict):
        return None
    if is_message_path(path) or _is_script(path):
        return meta
    jupytext_meta = meta.get("jupytext")
    reading = jupytext_meta.get("text_representation") if isinstance(jupytext_meta, dict) else None
    if isinstance(reading, dict) and reading.get("format_name") == FORMAT_NAME:
        return meta
    return None


def _is_script(path: str) -> bool:
    from jupyter_percent_agent.format.script import is_script_path

    return is_script_path(path)


def _is_agent(kernelspec: Any) -> bool:
    from jupyter_percent_agent.format import DEFAULT_KERNELSPEC

    return isinstance(kernelspec, dict) and kernelspec.get("name") == DEFAULT_KERNELSPEC["name"]


def for_jupyterlab(model: dict[str, Any], path: str) -> dict[str, Any]:
    """An opened message notebook as JupyterLab gets it: on the agent kernel, with the
    ``language_info`` that kernel reports, the file's own values of both kept aside.

    JupyterLab starts the kernel the notebook's ``kernelspec`` names, so a file naming
    ``python3`` would make "running a message" run Python. And it writes the kernel's
    ``language_info`` into the open notebook as soon as the kernel is up, which marks the
    document modified unless it is already there.
    """
    meta = message_metadata(model, path.strip("/"))
    if meta is None:
        return model
    from jupyter_percent_agent.format import DEFAULT_KERNELSPEC, NS
    from jupyter_percent_agent.kernel import LANGUAGE_INFO

    kept = {}
    if not _is_agent(meta.get("kernelspec")):
        kept["kernelspec"] = meta.get("kernelspec")  # None: the file names none
        meta["kernelspec"] = dict(DEFAULT_KERNELSPEC)
    if "language_info" in meta:
        kept["language_info"] = meta["language_info"]
    meta["language_info"] = dict(LANGUAGE_INFO)
    if kept:
        ns = meta.get(NS)
        meta[NS] = {**(ns if isinstance(ns, dict) else {}), FILE_METADATA: kept}
    return model


def for_the_file(model: dict[str, Any], path: str) -> dict[str, Any]:
    """A message notebook to save, with the kernelspec and language_info its file had.

    What JupyterLab holds is the agent kernel (or a kernel the user picked for this session):
    neither is written. The file's own values (kept aside by :func:`for_jupyterlab`) are
    restored; with none kept, the file had the agent kernelspec (or none) and no
    ``language_info``. So what was read saves back to the same text. The caller's model is
    left as it is (the model, content and metadata dicts are copied before any change).
    """
    meta = message_metadata(model, path.strip("/"))
    if meta is None:
        return model
    from jupyter_percent_agent.format import DEFAULT_KERNELSPEC, NS

    meta = copy.copy(meta)
    ns = meta.get(NS)
    kept: Any = None
    if isinstance(ns, dict) and FILE_METADATA in ns:
        ns = dict(ns)
        kept = ns.pop(FILE_METADATA)
        if ns:
            meta[NS] = ns
        else:
            del meta[NS]
    kept = kept if isinstance(kept, dict) else {}
    for key in _KERNEL_KEYS:
        if key in kept:
            if kept[key] is None:
                meta.pop(key, None)
            else:
                meta[key] = kept[key]
        elif key == "language_info":
            meta.pop(key, None)
        elif not _is_agent(meta.get(key)):
            meta[key] = dict(DEFAULT_KERNELSPEC)
    content = model["content"]
    return {**model, "content": {**content, "metadata": meta,
                                 "cells": tidy_cells(content.get("cells") or [])}}


# What JupyterLab keeps in a cell's metadata for itself (not footnote attributes).
_LAB_KEYS = frozenset({"trusted", "execution", "scrolled", "collapsed", "jupyter", "tags"})


def _empty_message(cell: Any) -> bool:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        source = "".join(source)
    return (cell.get("cell_type") == "code" and isinstance(source, str) and not source.strip()
            and not cell.get("outputs")
            and not set(cell.get("metadata") or {}) - _LAB_KEYS)


def tidy_cells(cells: list[Any]) -> list[Any]:
    """What a save from JupyterLab leaves out of a message file: the empty message JupyterLab
    adds after the last run, execution counts on messages (running a message is no Out[n]),
    and its 36-character UUID cell ids (a cell gets the short id ``tce`` would, which the
    kernel derives the same way). Cells are copied, not changed."""
    from jupyter_percent_agent import format as fmt

    cells = [dict(c) if isinstance(c, dict) else c for c in cells]
    while cells and isinstance(cells[-1], dict) and _empty_message(cells[-1]):
        cells.pop()
    taken = {c.get("id") for c in cells
             if isinstance(c, dict) and fmt.short_ids(str(c.get("id"))) == [c.get("id")]}
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        cid = cell.get("id")
        if isinstance(cid, str) and fmt.short_ids(cid) != [cid]:
            cell["id"] = fmt.short_id(cid, taken)
            taken.add(cell["id"])
        if cell.get("cell_type") == "code" and cell.get("execution_count") is not None \
                and fmt.cell_kind(cell) == "message":
            cell["execution_count"] = None
    return cells


def refuse_unsafe_path(os_path: str, path: str, root: str) -> None:
    """A 403 for a message notebook whose file leads out of its folder or is not a file."""
    from jupyter_percent_agent.format import safe_path

    try:
        safe_path(os_path)
    except Exception as err:
        translated = translate(err, path, root)
        if translated is None:
            raise
        raise translated from None


def refuse_pairs(path: str, nb: Any, config: Any, os_path: str, root: str) -> None:
    """A 403 for a message notebook paired with a file it may not name (``contents.pairing``)."""
    from jupyter_percent_agent.contents.pairing import refuse_outside_notebook_pairs

    try:
        refuse_outside_notebook_pairs(path, nb, config, os.path.dirname(os_path))
    except Exception as err:
        translated = translate(err, path, root)
        if translated is None:
            raise
        raise translated from None


def read_ahead(path: str, os_path: str, config: Any, root: str) -> Any:
    """Before a message file opens: a 400 naming the line when its bytes are not UTF-8, and
    a refusal if it names a pairing it may not (jupytext would read that file); then the
    file parsed once (``jupytext_format.ahead.Parsed``, None for a ``.md`` file that holds no
    messages), for jupytext's reading inside :func:`reading` to take up."""
    from jupyter_percent_agent import format as core
    from jupyter_percent_agent.contents.pairing import names_a_pairing
    from jupyter_percent_agent.errors import PercentAgentError
    from jupyter_percent_agent.jupytext_format import is_message_path, looks_like_message_text
    from jupyter_percent_agent.jupytext_format.ahead import parse_ahead

    try:
        text = core.read_text(os_path)
    except (OSError, UnicodeDecodeError):
        return None  # jupytext's own reading reports it
    except PercentAgentError as err:
        # bytes that are not UTF-8: the line, not jupyter_server's "/abs/path is not UTF-8"
        translated = translate(err, path, root)
        assert translated is not None
        raise translated from None
    if not (is_message_path(path) or _is_script(path) or looks_like_message_text(text)):
        return None
    parsed = parse_ahead(text, path)
    # a file that does not parse is reported, with its line, by the reading that follows
    if parsed.error is None and names_a_pairing(text, config):
        refuse_pairs(path, parsed.notebook, config, os_path, root)
    return parsed


def wants_notebook(path: str, type: str | None) -> bool:
    return is_md(path) and type not in ("file", "directory")


@contextmanager
def reading(path: str, root: str, parsed: Any = None) -> Iterator[None]:
    """Around jupytext's reading or writing of ``path``: the path reaches format detection,
    the file's text parsed ahead (:func:`read_ahead`) is taken up rather than parsed again,
    and an error of the package's (a malformed file, a refusal) becomes its HTTP error."""
    from jupyter_percent_agent.jupytext_format import path_hint
    from jupyter_percent_agent.jupytext_format.ahead import using_parsed

    with path_hint(path.strip("/") if is_md(path) else None), using_parsed(parsed):
        try:
            yield
        except Exception as err:
            translated = translate(err, path, root)
            if translated is None:
                raise
            raise translated from err


def check_open(os_path: str, path: str, type: str | None, content: bool,
               root: str, require_hash: bool = False) -> bool:
    """Checks before ``path`` opens; True when it is to be read ahead too (:func:`read_ahead`,
    with the configuration the manager reads its own way).

    A request without content or hash (an entry of its folder's listing, a check of its
    date) reads nothing and is not refused: a refusal there failed the whole listing."""
    if not wants_notebook(path, type) or not (content or require_hash):
        return False
    refuse_unsafe_path(os_path, path, root)
    return content and os.path.isfile(os_path)


def prepare_save(model: dict[str, Any], path: str, os_path: str, root: str) -> dict[str, Any]:
    """The model to save to ``path`` (refused first when its file is unsafe)."""
    if model.get("type") == "notebook":
        refuse_unsafe_path(os_path, path, root)
    return for_the_file(model, path.strip("/"))


def check_save(model: dict[str, Any], path: str, os_path: str, config: Any,
               root: str) -> dict[str, Any] | None:
    """Refuse pairings the notebook may not name; the text model to write as is when the
    notebook is a message file paired with nothing (no need for jupytext, whose save
    converts the whole notebook to NotebookNodes first), else None."""
    from jupytext.config import notebook_formats

    from jupyter_percent_agent.jupytext_format import is_message_path, message_text

    plain = path.strip("/")
    if message_metadata(model, plain) is None:
        return None
    refuse_pairs(plain, model["content"], config, os_path, root)
    if not (is_message_path(plain) or _is_script(plain)) or len(
            notebook_formats(model["content"], config, plain)) > 1:
        return None
    with reading(path, root):
        text = message_text(model["content"], path=plain)
    return {"type": "file", "format": "text", "content": text}


def seed_new(model: dict[str, Any] | None, path: str) -> dict[str, Any] | None:
    """A new message notebook starts as an empty message file reads: the agent kernel."""
    from jupyter_percent_agent.jupytext_format import is_message_path

    if model is None or model.get("type") != "notebook" or "content" in model:
        return model
    if not (is_message_path(path) or _is_script(path)):
        return model
    import nbformat

    from jupyter_percent_agent import format as core

    return {**model, "format": "json", "content": nbformat.from_dict(core.reads("", path=path))}


def config_refusal(os_path: Any) -> str | None:
    """Why a jupytext configuration file is skipped: one written in Python in a folder the
    user has not trusted (jupytext would run it in the server, with the user's keys)."""
    if not isinstance(os_path, str) or not os_path.endswith(".py"):
        return None
    from jupyter_percent_agent.jupytext_format import python_config_refusal

    return python_config_refusal(os_path)
