"""jupytext adapter: registers the message format with jupytext and delegates to the core.

jupytext 1.19 has no plugin mechanism, so the format is taught to it by a few targeted
changes to its module state, all made here and nowhere else:

- a ``NotebookFormatDescription`` named ``msg`` for ``.md`` is *appended* to
  ``jupytext.formats.JUPYTEXT_FORMATS`` (a plain ``.md`` keeps ``markdown`` as its default) and
  the name added, in place, to the private set ``_VALID_FORMAT_NAMES``;
- ``validate_one_format`` maps the ``.msg`` suffix (``.msg.md``, ``--to .msg.md``) to ``msg``;
- ``guess_format`` recognises a message file by its content, or by its path when jupytext
  reads it from a file named ``*.msg.md`` (so that an empty ``chat.msg.md`` is one too), and
  ``read_metadata`` leaves a message file's front matter to the core;
- ``TextNotebookConverter.reads`` / ``writes`` hand the *whole* text to the format core for
  ``msg``, the same place where jupytext dispatches its own whole-text formats (pandoc,
  quarto, myst). jupytext's cell reader, header parser and cell-metadata filter never see a
  message file, so no metadata is dropped and outputs survive;
- ``combine_inputs_with_outputs`` keeps a message file's own outputs and metadata when a
  pair is synchronised: a message file carries its outputs, so the paired ``.ipynb`` is a
  mirror of it, not the place its outputs come from;
- ``drop_text_representation_metadata`` (jupytext's copy of a notebook for an ``.ipynb``)
  keeps the other top-level keys of a notebook read from a message file, so that a later
  nbformat's keys survive ``.ipynb`` -> ``.msg.md`` -> ``.ipynb``;
- ``jupytext.config.load_jupytext_configuration_file`` skips a configuration written in
  Python (``.jupytext.py``, which jupytext runs with traitlets' ``PyFileConfigLoader``) that
  lies in a folder the user has not trusted (:func:`python_config_refusal`), saying so on
  stderr: jupytext looks for it beside the file and in every folder above, so a cloned
  folder's Python would run with the user's keys in every ``jupytext`` command run on a
  file in it. Which pairing a config asks for is only known once it has run, so the rule
  holds for every file jupytext opens in a process where this adapter is loaded, not for
  message files only. Declarative configurations (``jupytext.toml``, ``.jupytext``...)
  are read as always.

Everything else (pairing, ``--sync``, ``--test-strict``, the contents manager) is jupytext's
own code. ``register()`` applies all of it to an imported jupytext; the startup hook
(``_jupyter_percent_agent_hook``) calls ``on_jupytext_module_loaded`` as jupytext's modules
are imported, so the plain ``jupytext`` command knows the format with no configuration.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import inspect
import io
import os
import sys
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

FORMAT_NAME = "msg"
EXTENSION = ".md"
SUFFIX = ".msg"
FORMAT_VERSION = "1"

__all__ = [
    "EXTENSION",
    "FORMAT_NAME",
    "SUFFIX",
    "is_message_path",
    "is_registered",
    "looks_like_message_text",
    "message_text",
    "on_jupytext_module_loaded",
    "path_hint",
    "python_config_refusal",
    "register",
]

# The path of the file jupytext is reading or writing, when we know it: the contents manager
# and the wrapped ``jupytext.read`` set it, ``guess_format`` and the core read it.
_PATH_HINT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jupyter_percent_agent_path_hint", default=None
)

# Marks every function we install, so that patching twice (hook, then register()) is harmless.
_PATCHED = "__jupyter_percent_agent_patched__"


def is_message_path(path: str | os.PathLike[str] | None) -> bool:
    """True for ``NAME.msg.md``: the whole file is messages, whatever its content."""
    from jupyter_percent_agent.format import is_message_path as core_is_message_path

    return core_is_message_path(None if path is None else os.fspath(path))


def looks_like_message_text(text: str) -> bool:
    """Whether ``text`` is a message file by its content alone: the format core's
    :func:`~jupyter_percent_agent.format.is_message_text` (the front matter names a message
    section and does not say ``messages: false``, or a cell heading starts a line outside any
    fenced code block)."""
    from jupyter_percent_agent.format import is_message_text

    return is_message_text(text)


@contextlib.contextmanager
def path_hint(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """Tell jupytext (through our patches) which file the text being read or written is."""
    token = _PATH_HINT.set(None if path is None else os.fspath(path))
    try:
        yield
    finally:
        _PATH_HINT.reset(token)


def _is_message(text: str) -> bool:
    return is_message_path(_PATH_HINT.get()) or looks_like_message_text(text)


def _script_hint(ext: str) -> bool:
    """The file being read or written is a script message file (``NAME.msg.py``) of ``ext``."""
    from jupyter_percent_agent.format import is_script_path

    hint = _PATH_HINT.get()
    return bool(ext) and is_script_path(hint) and str(hint).lower().endswith(ext.lower())


def _script_extensions() -> list[str]:
    """The script extensions a message file may have (``format.script_for``: jupytext's)."""
    from jupytext.languages import _SCRIPT_EXTENSIONS

    return [e for e, v in _SCRIPT_EXTENSIONS.items() if "comment_suffix" not in v]


# --- delegation to the core ---------------------------------------------------------------


def _core_path(ext: str = EXTENSION) -> str | None:
    """The path the core is told: the file's, when known; a script's name of its language
    otherwise (``--to .msg.py`` writes a script, whatever the output's name)."""
    hint = _PATH_HINT.get()
    if hint is not None and hint.lower().endswith(ext.lower()):
        return hint
    return None if ext == EXTENSION else "notebook" + SUFFIX + ext


def _read_notebook(text: str, ext: str = EXTENSION) -> Any:
    from nbformat.notebooknode import NotebookNode

    from jupyter_percent_agent import format as core
    from jupyter_percent_agent.jupytext_format.ahead import as_nodes, taken

    parsed = taken(text, ext)  # the contents manager parsed it off the server's event loop
    if parsed is not None:
        return parsed.result()
    return as_nodes(core.reads(text, path=_core_path(ext)), NotebookNode)


def _write_notebook(nb: Mapping[str, Any], metadata: Mapping[str, Any] | None,
                    ext: str = EXTENSION) -> str:
    return message_text(nb, metadata=metadata, path=_core_path(ext))


def message_text(
    nb: Mapping[str, Any],
    *,
    metadata: Mapping[str, Any] | None = None,
    path: str | os.PathLike[str] | None = None,
) -> str:
    """The message-file text of a notebook that came through jupytext (or JupyterLab).

    jupytext's bookkeeping (``metadata.jupytext.text_representation``) is left out; anything
    that is not nbformat-shaped is a :class:`FormatError`, as a bad file is.
    """
    from jupyter_percent_agent import format as core

    meta = dict(metadata if metadata is not None else nb.get("metadata", {}))
    jupytext_meta = dict(meta.get("jupytext") or {})
    # jupytext's own bookkeeping of where this notebook was read from: it describes the
    # reading, not the notebook, and jupytext adds it again on every read.
    jupytext_meta.pop("text_representation", None)
    if jupytext_meta:
        meta["jupytext"] = jupytext_meta
    else:
        meta.pop("jupytext", None)
    notebook = {
        **nb,  # a later nbformat's top-level keys too: the core keeps them
        "nbformat": nb.get("nbformat", 4),
        "nbformat_minor": nb.get("nbformat_minor", 5),
        "metadata": meta,
        "cells": nb.get("cells", []),
    }
    try:
        return core.writes(notebook, path=None if path is None else os.fspath(path))
    except core.FormatError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError) as err:
        # A notebook that is not nbformat-shaped (a number as a source, a list as metadata):
        # bad input, like a bad file, so it reaches users as a FormatError, not a crash.
        raise core.FormatError(f"this notebook cannot be written as a message file: {err}") from err


# --- the patches ----------------------------------------------------------------------------


def _mark(fn: Any, original: Any) -> Any:
    setattr(fn, _PATCHED, original)
    fn.__wrapped__ = original
    return fn


def _is_patched(fn: Any) -> bool:
    return hasattr(fn, _PATCHED)


def _patch_formats(formats: ModuleType) -> None:
    known = {f.extension for f in formats.JUPYTEXT_FORMATS if f.format_name == FORMAT_NAME}
    for ext in [EXTENSION, *_script_extensions()]:  # .msg.md, and .msg.py, .msg.R, ...
        if ext not in known:
            formats.JUPYTEXT_FORMATS.append(
                formats.NotebookFormatDescription(
                    format_name=FORMAT_NAME,
                    extension=ext,
                    header_prefix="",
                    # Whole-text format: the converter hands the text to the core (below).
                    cell_reader_class=None,
                    cell_exporter_class=None,
                    current_version_number=FORMAT_VERSION,
                )
            )
    formats._VALID_FORMAT_NAMES.add(FORMAT_NAME)

    if not _is_patched(formats.validate_one_format):
        original_validate = formats.validate_one_format

        def validate_one_format(jupytext_format: Any) -> Any:
            fmt = original_validate(jupytext_format)
            if (
                isinstance(fmt, dict)
                and (fmt.get("extension") == EXTENSION
                     or fmt.get("extension") in _script_extensions())
                and str(fmt.get("suffix", "")).lower().endswith(SUFFIX)
                and not fmt.get("format_name")
            ):
                fmt["format_name"] = FORMAT_NAME
            return fmt

        formats.validate_one_format = _mark(validate_one_format, original_validate)

    if not _is_patched(formats.read_metadata):
        original_read_metadata = formats.read_metadata

        def read_metadata(text: str, ext: str) -> dict[str, Any]:
            # A message file's front matter belongs to the core. jupytext would otherwise parse
            # the *whole* text as YAML documents (its MyST probe), which fails on the control
            # characters of terminal outputs and costs time on large files.
            if (ext.endswith(EXTENSION) and _is_message(text)) or _script_hint(ext):
                return {}
            return original_read_metadata(text, ext)

        formats.read_metadata = _mark(read_metadata, original_read_metadata)

    if not _is_patched(formats.guess_format):
        original_guess = formats.guess_format

        def guess_format(text: str, ext: str) -> tuple[str, dict[str, Any]]:
            if (ext == EXTENSION and _is_message(text)) or _script_hint(ext):
                return FORMAT_NAME, {}
            return original_guess(text, ext)

        formats.guess_format = _mark(guess_format, original_guess)
        _rebind(original_guess, formats.guess_format)


def _converts_messages(converter: Any) -> bool:
    """The converter is for the msg format, or for ``.md`` text of a file named NAME.msg.md.

    The second case is a new notebook saved by the contents manager: jupytext then knows only
    the ``.md`` extension and no format name, and would write jupytext Markdown.
    """
    if converter.fmt.get("format_name") == FORMAT_NAME:
        return True
    return (converter.ext == EXTENSION and is_message_path(_PATH_HINT.get())) or _script_hint(
        converter.ext)


def _patch_converter(jupytext_module: ModuleType) -> None:
    converter = jupytext_module.TextNotebookConverter
    if not _is_patched(converter.reads):
        original_reads = converter.reads

        def reads(self: Any, s: str, **kwargs: Any) -> Any:
            if _converts_messages(self):
                return _read_notebook(s, self.ext)
            return original_reads(self, s, **kwargs)

        converter.reads = _mark(reads, original_reads)

    if not _is_patched(converter.writes):
        original_writes = converter.writes

        def writes(self: Any, nb: Any, metadata: Any = None, **kwargs: Any) -> str:
            if _converts_messages(self):
                return _write_notebook(nb, metadata, self.ext)
            return original_writes(self, nb, metadata, **kwargs)

        converter.writes = _mark(writes, original_writes)

    if not _is_patched(jupytext_module.read):
        original_read = jupytext_module.read

        no_convert = inspect.signature(original_read).parameters["as_version"].default

        def read(
            fp: Any,
            as_version: Any = no_convert,
            fmt: Any = None,
            config: Any = None,
            **kwargs: Any,
        ) -> Any:
            if not isinstance(fp, str | os.PathLike) or fp == "-":
                return original_read(fp, as_version, fmt=fmt, config=config, **kwargs)
            path = os.fspath(fp)
            # A file name is the only place where jupytext still knows the path: keep it as
            # a hint, so that an empty or heading-less NAME.msg.md reads as a message file.
            with path_hint(path):
                script = _script_hint(os.path.splitext(path)[1])
                if not (path.lower().endswith(EXTENSION) or script):
                    return original_read(path, as_version, fmt=fmt, config=config, **kwargs)
                # jupytext opens files with universal newlines, which turns every \r into \n;
                # a message file keeps its line separators (outputs with \r\n survive).
                with open(path, "rb") as stream:  # not UTF-8: one line, not a traceback
                    text = sys.modules["jupyter_percent_agent.format"].decode_utf8(
                        stream.read(), path)
                if not (script or _is_message(text)):
                    text = text.replace("\r\n", "\n").replace("\r", "\n")
                fmt = copy.copy(fmt or {})
                if not isinstance(fmt, dict):
                    fmt = sys.modules["jupytext.formats"].long_form_one_format(fmt)
                fmt["extension"] = os.path.splitext(path)[1]
                return original_read(
                    io.StringIO(text), as_version, fmt=fmt, config=config, **kwargs
                )

        jupytext_module.read = _mark(read, original_read)
        _rebind(original_read, jupytext_module.read)

    if not _is_patched(jupytext_module.drop_text_representation_metadata):
        original_drop = jupytext_module.drop_text_representation_metadata

        def drop_text_representation_metadata(notebook: Any, metadata: Any = None) -> Any:
            # jupytext's copy for an .ipynb keeps four top-level keys; a message file keeps
            # a later nbformat's others (docs/format.md), and so does its .ipynb
            is_msg = _is_msg_source(notebook, None)
            out = original_drop(notebook, metadata)
            if is_msg:
                for key, value in notebook.items():
                    out.setdefault(key, value)
            return out

        jupytext_module.drop_text_representation_metadata = _mark(
            drop_text_representation_metadata, original_drop)

    from jupyter_percent_agent.jupytext_format.pairs import guard_message_writes

    original = guard_message_writes(jupytext_module, FORMAT_NAME)  # a conversation is
    if original is not None:  # never written over in another format
        _rebind(original, jupytext_module.create_prefix_dir)
    # jupytext.jupytext imported guess_format by name; keep it in step with formats.
    formats = sys.modules.get("jupytext.formats")
    if formats is not None:
        jupytext_module.guess_format = formats.guess_format


def _rebind(original: Any, replacement: Any) -> None:
    """Replace ``original`` wherever a loaded jupytext module imported it by name."""
    for name, module in list(sys.modules.items()):
        if (name == "jupytext" or name.startswith("jupytext.")) and module is not None:
            for attr, value in list(vars(module).items()):
                if value is original:
                    setattr(module, attr, replacement)


def _is_msg_source(nb_source: Any, fmt: Any) -> bool:
    if isinstance(fmt, dict) and fmt.get("format_name"):
        return fmt["format_name"] == FORMAT_NAME
    if isinstance(fmt, str) and fmt:
        return fmt.endswith(":" + FORMAT_NAME) or SUFFIX + "." in fmt.lower()
    # a NotebookNode, or the plain dict the contents manager hands over
    jupytext_meta = (nb_source.get("metadata") or {}).get("jupytext") or {}
    text_repr = jupytext_meta.get("text_representation") or {}
    return isinstance(text_repr, Mapping) and text_repr.get("format_name") == FORMAT_NAME


def _patch_combine(combine: ModuleType) -> None:
    if _is_patched(combine.combine_inputs_with_outputs):
        return
    original_combine = combine.combine_inputs_with_outputs

    def combine_inputs_with_outputs(nb_source: Any, nb_outputs: Any, fmt: Any = None) -> Any:
        if not _is_msg_source(nb_source, fmt):
            return original_combine(nb_source, nb_outputs, fmt)
        # The message file is newer than its .ipynb and holds its own outputs: it wins whole.
        jupytext_meta = nb_source.metadata.get("jupytext", {})
        jupytext_meta.pop("text_representation", None)
        if "jupytext" in nb_source.metadata and not jupytext_meta:
            nb_source.metadata.pop("jupytext")
        nb_source.nbformat_minor = max(nb_source.nbformat_minor, nb_outputs.nbformat_minor)
        return nb_source

    combine.combine_inputs_with_outputs = _mark(combine_inputs_with_outputs, original_combine)
    _rebind(original_combine, combine.combine_inputs_with_outputs)


def python_config_refusal(config_file: str | os.PathLike[str]) -> str | None:
    """Why the jupytext configuration ``config_file`` may not run, or None when it may.

    Only a configuration written in Python runs code. It may run from the user's own
    configuration folders (jupytext's global ones: ``~/.config/jupytext``, ``$HOME``...) and
    from a trusted folder (``tce trust``); from anywhere else it is skipped.
    """
    path = os.path.abspath(os.fspath(config_file))
    if not path.endswith(".py"):
        return None
    folder = os.path.dirname(path)
    real = os.path.realpath(folder)
    config = sys.modules.get("jupytext.config")
    user_dirs = config.global_jupytext_configuration_directories() if config else ()
    if any(os.path.realpath(d) == real for d in user_dirs):
        return None
    from jupyter_percent_agent import trust

    if trust.is_trusted(folder):
        return None
    return (f"skipped {path}: a jupytext configuration written in Python runs as you, and "
            f"{folder} is not a trusted folder; to allow it: tce trust {folder}")


def _patch_config(config: ModuleType) -> None:
    if _is_patched(config.load_jupytext_configuration_file):
        return
    original_load = config.load_jupytext_configuration_file

    def load_jupytext_configuration_file(config_file: Any, stream: Any = None) -> Any:
        refusal = python_config_refusal(config_file)
        if refusal is not None:
            print(f"jupyter-percent-agent: {refusal}", file=sys.stderr)
            return None  # as if there were no configuration file
        return original_load(config_file, stream)

    config.load_jupytext_configuration_file = _mark(load_jupytext_configuration_file,
                                                    original_load)
    _rebind(original_load, config.load_jupytext_configuration_file)


def on_jupytext_module_loaded(module: ModuleType) -> None:
    """Called by the startup hook right after a watched jupytext module has run."""
    if module.__name__ == "jupytext.formats":
        _patch_formats(module)
    elif module.__name__ == "jupytext.jupytext":
        _patch_converter(module)
    elif module.__name__ == "jupytext.combine":
        _patch_combine(module)
    elif module.__name__ == "jupytext.config":
        _patch_config(module)
    elif module.__name__ == "jupytext.cli":
        from jupyter_percent_agent.jupytext_format.pairs import patch_cli

        patch_cli(module, FORMAT_NAME, path_hint)  # its pairs stay in its folder (pairs.py)


def register() -> None:
    """Register the message format with jupytext (idempotent); imports jupytext."""
    import jupytext.combine
    import jupytext.config
    import jupytext.formats
    import jupytext.jupytext

    _patch_formats(jupytext.formats)
    _patch_config(jupytext.config)
    _patch_converter(jupytext.jupytext)
    _patch_combine(jupytext.combine)


def is_registered() -> bool:
    """Whether the loaded jupytext (if any) knows the message format."""
    formats = sys.modules.get("jupytext.formats")
    jupytext_module = sys.modules.get("jupytext.jupytext")
    config = sys.modules.get("jupytext.config")
    return bool(
        formats is not None
        and jupytext_module is not None
        and config is not None
        and FORMAT_NAME in formats._VALID_FORMAT_NAMES
        and _is_patched(formats.guess_format)
        and _is_patched(jupytext_module.TextNotebookConverter.reads)
        and _is_patched(config.load_jupytext_configuration_file)
    )
