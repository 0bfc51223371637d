"""The files a message file is paired with stay home, whoever pairs them.

jupytext reads and writes the files a notebook is paired with: those its front matter names
(``jupyter: jupytext: formats``) and those a ``jupytext.toml`` asks for. For a message file
both are text from its folder, so each paired path must be one the file may name
(``trust.resolve_inside``): inside the file's folder, outside version-control, hidden and
``toolbox/`` folders. jupytext's own check stops only a path that climbs above where it was
asked from, and its save checks nothing, so ``prefix//py:percent`` could write a script
anywhere below (a ``sitecustomize.py`` into a virtual environment, a file into ``.git``).
A script paired beside the file (``py:percent``) stays allowed.

The contents manager checks before JupyterLab's open and save (``contents.pairing``);
``patch_cli`` makes the ``jupytext`` command check before ``--sync`` reads or writes a pair,
and say what is wrong with a message file in the one line ``tce`` says it in; and it tells
jupytext's writer the path it writes (a pair, or ``-o x.msg.md``), which jupytext renders text
without, so that a message file's name always gets the message format.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

from jupyter_percent_agent import trust
from jupyter_percent_agent.errors import Kind, PercentAgentError

_PATCHED = "__jupyter_percent_agent_pairs__"


def pair_paths(path: str, formats: Any) -> list[str]:
    """The paths jupytext pairs ``path`` with for ``formats`` (``path`` itself included),
    as its own pairing code makes them; ``[path]`` when ``formats`` do not cover it."""
    from jupytext.formats import long_form_multiple_formats
    from jupytext.paired_paths import InconsistentPath, find_base_path_and_format, full_path

    formats = long_form_multiple_formats(formats or [])
    if len(formats) < 2:
        return [path]
    try:
        base, _ = find_base_path_and_format(path, formats)
    except InconsistentPath:  # jupytext drops formats that do not match the path
        return [path]
    return [full_path(base, f) for f in formats]


def refuse_outside_pairs(path: str, formats: Any, folder: str) -> None:
    """Raise ``TrustError`` (one line: the path and the rule) when the file at ``path``
    (``/``-separated; ``folder``: its folder on disk) is paired by ``formats`` with a file it
    may not name."""
    here = posixpath.dirname(path)
    for alt in pair_paths(path, formats):
        if alt == path:
            continue
        link = posixpath.relpath(posixpath.normpath(alt), here or ".")
        trust.resolve_inside(folder, link.replace("/", os.sep), what="pairing")


def _is_message_pair(nb_file: str, formats: Any, format_name: str) -> bool:
    from jupytext.formats import long_form_multiple_formats

    from jupyter_percent_agent.format import is_message_path

    return is_message_path(nb_file) or any(
        f.get("format_name") == format_name for f in long_form_multiple_formats(formats or []))


def patch_cli(cli: ModuleType, format_name: str,
              path_hint: Callable[[str | None], AbstractContextManager[None]]) -> None:
    """Make the ``jupytext`` command check the pairs of a message file (``NAME.msg.md``, or
    a file in the ``format_name`` format) before ``--sync`` reads them
    (``load_paired_notebook``) or writes them (``write_pair``, each pair under
    ``path_hint(its path)``)."""
    if getattr(cli.write_pair, _PATCHED, False):
        return
    write_pair, load_paired = cli.write_pair, cli.load_paired_notebook

    def _checked(nb_file: str, formats: Any) -> None:
        if _is_message_pair(nb_file, formats, format_name):
            refuse_outside_pairs(nb_file, formats, os.path.dirname(nb_file) or os.curdir)

    @functools.wraps(write_pair)
    def checked_write_pair(nb_file: str, formats: Any, write_one: Any, *args: Any,
                           **kwargs: Any) -> Any:
        _checked(nb_file, formats)
        return write_pair(nb_file, formats, _with_path_hint(write_one, path_hint), *args,
                          **kwargs)

    @functools.wraps(load_paired)
    def checked_load(notebook: Any, fmt: Any, config: Any, formats: Any, nb_file: str,
                     *args: Any, **kwargs: Any) -> Any:
        _checked(nb_file, formats)
        return load_paired(notebook, fmt, config, formats, nb_file, *args, **kwargs)

    single_file = cli.jupytext_single_file

    @functools.wraps(single_file)
    def output_hinted(nb_file: str, args: Any, *rest: Any, **kwargs: Any) -> Any:
        from jupyter_percent_agent.format import is_message_path, is_script_path

        twin = _twin_name(nb_file, getattr(args, "output_format", None))
        if twin is not None and getattr(args, "output", None) is None:
            args.output = twin  # ``--to .msg.md x.msg.py``: x.msg.md, not x.msg.msg.md
            try:
                return output_hinted(nb_file, args, *rest, **kwargs)
            finally:
                args.output = None
        # ``--to md -o x.msg.md``: jupytext renders the text before it knows where it goes
        out = getattr(args, "output", None)
        if nb_file == "-" or not (isinstance(out, str) and out != "-" and (
                is_message_path(out) or is_script_path(out))):
            return single_file(nb_file, args, *rest, **kwargs)
        with path_hint(out):
            return single_file(nb_file, args, *rest, **kwargs)

    for wrapper in (checked_write_pair, checked_load, output_hinted):
        setattr(wrapper, _PATCHED, True)
    cli.write_pair, cli.load_paired_notebook = checked_write_pair, checked_load
    cli.jupytext_single_file = output_hinted
    cli.jupytext = one_line_errors(cli.jupytext)
    from jupyter_percent_agent.jupytext_format.execute import patch_execute

    patch_execute(cli, format_name)  # a message file executes on the agent kernel


def _twin_name(nb_file: str, fmt: Any) -> str | None:
    """The name ``--to .msg.EXT`` gives a message file's twin (``x.msg.py`` -> ``x.msg.md``),
    where jupytext would keep the input's ``.msg`` and add another; None for other inputs
    and formats (``--to ipynb x.msg.md`` stays ``x.msg.ipynb``)."""
    from jupyter_percent_agent.format import is_message_path, is_script_path

    if (nb_file == "-" or not isinstance(fmt, dict) or fmt.get("prefix")
            or str(fmt.get("suffix", "")).lower() != ".msg"
            or not (is_message_path(nb_file) or is_script_path(nb_file))):
        return None
    ext = str(fmt.get("extension") or "")
    stem = os.path.splitext(nb_file)[0]
    if not ext.startswith(".") or ext == ".auto" or not stem.lower().endswith(".msg"):
        return None
    return stem + ext


def _with_path_hint(write_one: Any,
                    path_hint: Callable[[str | None], AbstractContextManager[None]]) -> Any:
    """``write_pair``'s callback writing each pair with its path as the hint: jupytext
    renders the text before it knows the path, so a ``NAME.msg.md`` paired as plain ``md``
    (``--set-formats ipynb,md``) would be written as jupytext Markdown, not messages."""
    @functools.wraps(write_one)
    def hinted(path: Any, *args: Any, **kwargs: Any) -> Any:
        with path_hint(os.fspath(path) if isinstance(path, str | os.PathLike) else None):
            return write_one(path, *args, **kwargs)

    return hinted


def one_line_errors(command: Any) -> Any:
    """The ``jupytext`` command (``jupytext()``, as its script calls it, with no arguments)
    showing a malformed message file, a refused pair and the package's other errors as the
    one line ``tce`` prints (``jupytext: FILE:LINE: what``) and its exit code, not a
    traceback. Called with arguments (from Python), it raises as before."""
    if getattr(command, _PATCHED, False):
        return command

    @functools.wraps(command)
    def jupytext(args: Any = None, **kwargs: Any) -> Any:
        if args is not None:
            return command(args, **kwargs)
        try:
            return command(args, **kwargs)
        except Exception as exc:
            import sys

            from jupyter_percent_agent import errors

            found = errors.find(exc)
            shown = errors.report(found) if found is not None else None
            if shown is None:
                raise
            sys.stderr.write(f"jupytext: {shown.message}\n")
            raise SystemExit(shown.exit_code) from None

    setattr(jupytext, _PATCHED, True)
    return jupytext


class MessageFileOverwrite(PercentAgentError):
    """A conversation about to be written over in another format (``jupytext --to
    py:percent analysis.msg.py``): refused, the file untouched."""

    error_kind = Kind.USAGE


def message_write_refusal(path: str, fmt: Any, format_name: str) -> str | None:
    """Why writing a notebook to ``path`` in ``fmt`` is refused, or None: a message file
    (``NAME.msg.md``, ``NAME.msg.py``...) is written only as a message file, whatever
    format a command asks for; another format goes to another name."""
    from jupyter_percent_agent.format import is_message_path, is_script_path

    if not (is_message_path(path) or is_script_path(path)):
        return None
    name = (fmt or {}).get("format_name") if isinstance(fmt, dict) else None
    if isinstance(fmt, str):
        from jupytext.formats import long_form_one_format

        name = long_form_one_format(fmt).get("format_name")
    if not name or name == format_name:
        return None
    return (
        f"{path} is a message file: writing it as {name} would replace the "
        f"conversation and its outputs; write to another name (--output OTHER)"
    )


def guard_message_writes(jupytext_module: ModuleType, format_name: str) -> Any:
    """jupytext's last step before it writes a file, ``create_prefix_dir(path, fmt, log)``
    (both ``jupytext.write`` and the ``jupytext`` command's destination and pairs call
    it), refusing to write a message file in another format; the original, to rebind
    where jupytext imported it by name (None: already done)."""
    original = jupytext_module.create_prefix_dir
    if getattr(original, _PATCHED, False):
        return None

    @functools.wraps(original)
    def create_prefix_dir(nb_file: Any, fmt: Any, log: Any) -> Any:
        if isinstance(nb_file, str | os.PathLike):
            reason = message_write_refusal(os.fspath(nb_file), fmt, format_name)
            if reason is not None:
                raise MessageFileOverwrite(reason)
        return original(nb_file, fmt, log)

    setattr(create_prefix_dir, _PATCHED, True)
    jupytext_module.create_prefix_dir = create_prefix_dir
    return original
