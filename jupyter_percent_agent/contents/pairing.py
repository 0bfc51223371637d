"""The files a message file is paired with stay home.

jupytext writes (on save) and reads (on open) the files a notebook is paired with: those its
front matter names (``jupyter: jupytext: formats``) and those a ``jupytext.toml`` beside it asks
for. Both are text from the folder, so each paired path must be one the file may name
(``trust.resolve_inside``): inside the file's folder, outside version-control, hidden and
``toolbox/`` folders. jupytext's own check stops only a path that climbs above the server's
root; its save checks nothing. A pairing with a script beside the file (``py:percent``) stays
allowed. Checked before jupytext reads or writes any of them, so a refused save writes nothing.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any

from jupyter_percent_agent import trust


def paired_paths(path: str, nb: Mapping[str, Any], config: Any) -> list[str]:
    """The contents paths jupytext would read or write for the notebook ``nb`` at ``path``
    (``path`` itself included); just ``[path]`` when it is paired with nothing."""
    from jupytext.config import notebook_formats
    from jupytext.formats import long_form_multiple_formats
    from jupytext.paired_paths import InconsistentPath, find_base_path_and_format, full_path

    formats = long_form_multiple_formats(notebook_formats(nb, config, path) or [])
    if len(formats) < 2:
        return [path]
    try:
        base, _ = find_base_path_and_format(path, formats)
    except InconsistentPath:  # jupytext drops formats that do not match the path
        return [path]
    return [full_path(base, f) for f in formats]


def refuse_outside_pairs(path: str, nb: Mapping[str, Any], config: Any, os_folder: str) -> None:
    """Raise ``TrustError`` (one line: the path and the rule) when the notebook at contents
    ``path`` (``os_folder``: its folder on disk) is paired with a file it may not name."""
    here = posixpath.dirname(path)
    for alt in paired_paths(path, nb, config):
        if alt == path:
            continue
        link = posixpath.relpath(posixpath.normpath(alt), here or ".")
        trust.resolve_inside(os_folder, link.replace("/", os.sep), what="pairing")


def names_a_pairing(text: str, config: Any) -> bool:
    """Whether a message file's ``text`` or the jupytext ``config`` may pair it with anything:
    a cheap test that spares a second parse of files that are not."""
    return "formats" in text or bool(config is not None and (
        getattr(config, "formats", None) or getattr(config, "default_jupytext_formats", None)))
