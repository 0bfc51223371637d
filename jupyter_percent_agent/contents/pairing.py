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
    not name."""
    from jupytext.config import notebook_formats

    refuse_outside_pairs(path, notebook_formats(nb, config, path), os_folder)


def names_a_pairing(text: str, config: Any) -> bool:
    """Whether a message file's ``text`` or the jupytext ``config`` may pair it with anything:
    a cheap test that spares a second parse of files that are not."""
    return "formats" in text or bool(config is not None and (
        getattr(config, "formats", None) or getattr(config, "default_jupytext_formats", None)))
