"""Which documents fit a need: the planner's choices when a run replans, the plan for
``tce run "a request in words"``.

The folder's index (``tasks.index``: lexical and semantic ranking, kept up to date by content
hash) ranks documents by meaning. Should it fail (a folder it cannot read), a replan offers
every plan, error handler and execute step of the folder in ``task_id`` order.
"""

from __future__ import annotations

import sqlite3

from jupyter_percent_agent.tasks.documents import TaskDocument
from jupyter_percent_agent.tasks.sop import Sop

LIMIT = 12


def for_replan(sop: Sop, failed: TaskDocument, query: str, *, limit: int = LIMIT
               ) -> list[TaskDocument]:
    """Up to ``limit`` documents to offer the planner after ``failed`` failed with ``query``
    (its message): no validator (the failed step is validated again after the new steps)
    and not the failed document itself."""
    pool = {d.task_id: d for d in sop.documents.values()
            if d.task_type != "validate" and d.task_id != failed.task_id}
    ranked = [tid for tid in ranked_ids(sop, f"{failed.description}\n{query}", limit * 2)
              if tid in pool]
    rest = [tid for tid in sorted(pool) if tid not in ranked]
    return [pool[tid] for tid in [*ranked, *rest][:limit]]


def ranked_ids(sop: Sop, query: str, limit: int) -> list[str]:
    """task_ids ranked by the folder's index, best first; ``[]`` when it cannot rank."""
    from jupyter_percent_agent.tasks.index import candidates

    try:
        return [hit.task_id for hit in candidates(sop.root, query, limit)]
    except (OSError, ValueError, sqlite3.Error):
        return []
