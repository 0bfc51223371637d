"""The files a message notebook is paired with, checked before JupyterLab opens or saves it.

jupytext's contents manager reads a notebook's pairs when it opens it and writes them when it
saves it; which pairs is the notebook's ``jupytext.formats`` or its folder's jupytext config.
For a message notebook each paired path must be one the file may name
(``jupytext_format.pairs``, ``trust.resolve_inside``). Checked before jupytext reads or writes
any of them, so a refused save writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jupyter_percent_agent.jupytext_format.pairs import refuse_outside_pairs


def refuse_outside_notebook_pairs(path: str, nb: Mapping[str, Any], config: Any,
                                  os_folder: str) -> None:
    """Raise ``TrustError`` when the notebook ``nb`` at contents ``path`` (``os_folder``: its
    folder on disk), with the jupytext ``config`` of its folder, is paired with a file it may
    not name; ``FormatError`` when it is paired with an ``auto`` script (jupytext's "Pair
    Notebook with percent Script"): a message notebook has no script language, and jupytext
    could not open the file again."""
    from jupytext.config import notebook_formats

    named = _auto_format(nb)
    if named is not None:
        from jupyter_percent_agent.format import FormatError

        raise FormatError(f"pairing with {named!r} is refused: a message notebook has no "
                          "script language; pair it with a script format such as "
                          "'py:percent', or unpair it", path=path)
    refuse_outside_pairs(path, notebook_formats(nb, config, path), os_folder)


def _auto_format(nb: Mapping[str, Any]) -> str | None:
    """The first ``auto:...`` format the notebook's own metadata pairs it with, if any
    (jupytext's reading of the formats drops it silently, and its opening fails on it). A
    folder's default formats (``ipynb,auto:percent``) do not pair a message file: not
    checked."""
    from jupytext.formats import long_form_multiple_formats, short_form_one_format

    meta = nb.get("metadata") or {}
    jupytext_meta = meta.get("jupytext") if isinstance(meta.get("jupytext"), dict) else {}
    formats = jupytext_meta.get("formats") or meta.get("jupytext_formats")
    try:
        long = long_form_multiple_formats(formats or [])
    except Exception:  # formats jupytext cannot read: its own reading says so
        return None
    return next((short_form_one_format(f) for f in long if f.get("extension") == ".auto"),
                None)


def names_a_pairing(text: str, config: Any) -> bool:
    """Whether a message file's ``text`` or the jupytext ``config`` may pair it with anything:
    a cheap test that spares a second parse of files that are not."""
    return "formats" in text or bool(config is not None and (
        getattr(config, "formats", None) or getattr(config, "default_jupytext_formats", None)))
