"""Which documents fit a need: the planner's choices when a run replans, the plan for
``tce run "a request in words"``.

The folder's index (``tasks/index``, when it is there: ``search(folder, query, *, limit)``
returning task_ids best first, or hits with a ``task_id``) ranks documents by meaning; without
it, a replan offers every plan, error handler and execute step of the folder in ``task_id``
order, and a request in words matches nothing.
"""

from __future__ import annotations

from typing import Any

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
    """task_ids ranked by the folder's index, best first; ``[]`` without an index."""
    try:
        from jupyter_percent_agent.tasks import index  # type: ignore[attr-defined]
    except ImportError:
        return []
    search = getattr(index, "search", None)
    if search is None:
        return []
    hits: Any = search(sop.root, query, limit=limit)
    out = []
    for hit in hits or []:
        tid = hit if isinstance(hit, str) else getattr(hit, "task_id", None)
        if tid is None and isinstance(hit, tuple | list) and hit:
            tid = hit[0]
        if isinstance(tid, str):
            out.append(tid)
    return out


def best_plan(sop: Sop, request: str) -> str | None:
    """The plan (or error handler) the index ranks first for a request in words; ``None``
    without an index or a match."""
    for tid in ranked_ids(sop, request, LIMIT):
        doc = sop.documents.get(tid)
        if doc is not None and doc.is_plan:
            return tid
    return None
