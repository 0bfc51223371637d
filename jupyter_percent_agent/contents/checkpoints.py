"""Checkpoints stay in the served folder: a ``.ipynb_checkpoints`` that links out is refused.

jupyter_server keeps a copy of a file in ``.ipynb_checkpoints/`` beside it whenever JupyterLab
opens or saves it, and follows whatever that name is. A cloned folder can ship it as a link
out of the folder (to ``~/.bashrc.d``, every file of which bash runs at start-up), and the
copy is the folder's own text. The contents manager's default checkpoints class (jupyter's
file checkpoints, whichever its base uses) gets :class:`InsideRoot` first: a checkpoint folder
whose real path leaves the server's root is refused (HTTP 403) before anything is made there.
A checkpoints class set in the user's configuration is theirs, used as it is.
"""

from __future__ import annotations

import os
from typing import Any


class InsideRoot:
    """Refuses checkpoint paths whose folder, links followed, lies outside ``root_dir``."""

    root_dir: str
    checkpoint_dir: str

    def checkpoint_path(self, checkpoint_id: str, path: str) -> str:
        from tornado.web import HTTPError

        parent = path.strip("/").rpartition("/")[0]
        folder = os.path.join(self._get_os_path(path=parent), self.checkpoint_dir)  # type: ignore[attr-defined]
        root, real = os.path.realpath(self.root_dir), os.path.realpath(folder)
        if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
            raise HTTPError(
                403,
                f"refused: {folder} leads out of the served folder {root}; "
                "no checkpoint is kept for this file",
            )
        return super().checkpoint_path(checkpoint_id, path)  # type: ignore[misc]


def inside_root(checkpoints_class: Any) -> Any:
    """``checkpoints_class`` with :class:`InsideRoot` first, when it keeps checkpoints in
    files beside the notebooks (it has ``checkpoint_path``); any other class as it is."""
    if (
        not isinstance(checkpoints_class, type)
        or issubclass(checkpoints_class, InsideRoot)
        or not hasattr(checkpoints_class, "checkpoint_path")
    ):
        return checkpoints_class
    return type(
        checkpoints_class.__name__,
        (InsideRoot, checkpoints_class),
        {"__module__": __name__, "__doc__": checkpoints_class.__doc__},
    )
