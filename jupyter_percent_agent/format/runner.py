"""What a notebook runner writes into a notebook and a message file does not keep.

nbclient (``jupytext --execute``, papermill, ``jupyter nbconvert --execute``) records when each
cell ran (the cell metadata ``execution``), JupyterLab's "record timing" and the ExecuteTime
extension do the same (``ExecuteTime``), papermill adds its own ``papermill`` entries (and an
empty ``tags`` list) to every cell and to the notebook, and every client writes the kernel's
``language_info``. None of it is the conversation: as jupytext's default filters drop
``execution`` and ``ExecuteTime`` from every text notebook, a message file drops them, on
writing and on reading, so that a conversation executed by any of these clients and saved is
the file ``tce exec`` writes. The agent kernel's own ``language_info`` goes too (the kernel
says it on every start, and the contents manager hands it to JupyterLab with every message
notebook); another kernel's, and every other key a user or a tool set, is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

RUNNER_CELL_KEYS: Final = frozenset({"execution", "ExecuteTime", "papermill"})
"""Cell metadata a runner writes: nbclient's and JupyterLab's timings, papermill's status."""

RUNNER_NOTEBOOK_KEYS: Final = frozenset({"papermill"})
"""Notebook metadata a runner writes (papermill's parameters, timings and versions)."""

AGENT_LANGUAGE_INFO: Final = {
    "name": "markdown",
    "mimetype": "text/markdown",
    "file_extension": ".md",
    "pygments_lexer": "markdown",
    "codemirror_mode": "markdown",
}
"""The ``language_info`` the agent kernel reports (``kernel.LANGUAGE_INFO`` is this)."""


EMPTY_TAGS: Final = "tags"
"""papermill gives every cell an empty ``tags`` list: an empty one says nothing and is not
kept; tags with a value are the user's."""


def is_runner_cell_key(key: str, value: Any) -> bool:
    """Whether a cell's metadata entry is a runner's, never kept in a message file."""
    return key in RUNNER_CELL_KEYS or (key == EMPTY_TAGS and value == [])


def has_runner_cell_keys(md: Mapping[str, Any]) -> bool:
    """Whether a cell's metadata holds an entry a runner wrote (two lookups: most have none)."""
    return not md.keys().isdisjoint(RUNNER_CELL_KEYS) or md.get(EMPTY_TAGS, None) == []


def without_runner_cell_keys(md: Mapping[str, Any]) -> Mapping[str, Any]:
    """``md`` (a cell's metadata) without what a runner wrote; ``md`` itself when it has none."""
    if not has_runner_cell_keys(md):
        return md
    return {k: v for k, v in md.items() if not is_runner_cell_key(k, v)}


def without_runner_notebook_keys(metadata: dict[str, Any]) -> dict[str, Any]:
    """Notebook ``metadata`` (changed in place) without papermill's entry, and without the
    agent kernel's ``language_info``."""
    for key in RUNNER_NOTEBOOK_KEYS & metadata.keys():
        del metadata[key]
    if metadata.get("language_info") == AGENT_LANGUAGE_INFO:
        del metadata["language_info"]
    return metadata
