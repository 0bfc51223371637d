"""Choosing a plan for a request in words (``tce run "..."``) and the documents a planner
may replan with, from a SOP folder's index."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from jupyter_percent_agent.tasks.index.rows import Hit
from jupyter_percent_agent.tasks.index.store import Index

CLOSE_MARGIN = 0.5  # fused-score gap (standard deviations) under which two plans are "close"


@dataclass(frozen=True)
class Choice:
    """The plan picked for a request in words, and how sure the pick is.

    ``close`` is true when the runner-up scores within :data:`CLOSE_MARGIN` of the best: the
    caller should ask before running (``tce run --yes`` accepts the best).
    """

    best: Hit | None
    runner_up: Hit | None
    close: bool

    @property
    def score(self) -> float:
        return self.best.score if self.best else 0.0

    def explain(self) -> str:
        """One line: which plan, its score, and the runner-up's."""
        if self.best is None:
            return "no plan matches"
        line = f"{self.best.task_id} ({self.best.description}): score {self.best.score:.2f}"
        if self.runner_up is not None:
            line += (f"; runner-up {self.runner_up.task_id} "
                     f"{self.runner_up.score:.2f}")
        return line + ("; close: please confirm" if self.close else "")


def _as_index(folder: str | os.PathLike[str] | Index) -> tuple[Index, bool]:
    if isinstance(folder, Index):
        return folder, False
    return Index.open(folder), True


def pick_plan(folder: str | os.PathLike[str] | Index, words: str) -> Choice:
    """The plan document of ``folder`` that best matches a request in ``words``
    (``tce run "写一篇关于城市交通的博客"``). ``folder`` may be an open :class:`Index`.
    An empty request is a ``ValueError``."""
    index, owned = _as_index(folder)
    try:
        hits = index.search(words, 2, task_types=("plan",))
    finally:
        if owned:
            index.close()
    best = hits[0] if hits else None
    runner_up = hits[1] if len(hits) > 1 else None
    close = (best is not None and runner_up is not None
             and best.score - runner_up.score < CLOSE_MARGIN)
    return Choice(best, runner_up, close)


def candidates(folder: str | os.PathLike[str] | Index, text: str, k: int = 5, *,
               exclude: Iterable[str] = ()) -> list[Hit]:
    """The ``k`` documents of ``folder`` that best fit ``text`` (a failure to recover from:
    the validator's error type and message), for a planner asked to replan; ``exclude``
    leaves out task_ids (the failing step itself)."""
    skip = set(exclude)
    index, owned = _as_index(folder)
    try:
        hits = index.search(text, k + len(skip))
    finally:
        if owned:
            index.close()
    return [h for h in hits if h.task_id not in skip][:k]
