"""Answering from the SOP index: the exact records (by task_id, tool, route) and search,
a BM25 ranking over the lexical terms fused with a cosine ranking over embeddings (see
``ranking.fusion``); when the embedding model fails the index ranks by terms alone."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_percent_agent.ranking.embed import Embedder
from jupyter_percent_agent.ranking.fusion import combine
from jupyter_percent_agent.ranking.text import bm25_scores
from jupyter_percent_agent.tasks.index.rows import (
    Hit,
    names_value,
    task_type_value,
    text_value,
)

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")


class IndexSearch:
    """The questions an :class:`.store.Index` answers; each read is retried on a sound file
    (``_retry``) when the file turns out damaged."""

    _conn: sqlite3.Connection
    _types: dict[str, str] | None
    _matrix: np.ndarray | None
    _matrix_ids: list[str]
    _embedder_failed: bool
    embedder: Embedder | None
    lexical_weight: float

    def _retry(self, action: Callable[[], T], *, refill: bool = True) -> T:
        raise NotImplementedError

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        raise NotImplementedError

    # -- the exact index -------------------------------------------------------------------

    def task_ids(self) -> list[str]:
        """Every indexed document's task_id, sorted."""
        return self._retry(lambda: [text_value(r[0], "task_id") for r in self._conn.execute(
            "SELECT task_id FROM docs ORDER BY task_id")])

    def get(self, task_id: str) -> dict[str, Any] | None:
        """The exact record of ``task_id``: path, task_type, description, tool_ids, routes."""
        return self._retry(lambda: self._get(task_id))

    def _get(self, task_id: str) -> dict[str, Any] | None:
        row = self._conn.execute(
            "SELECT task_id, path, task_type, description, tool_ids, routes, text_hash"
            " FROM docs WHERE task_id = ?", (task_id,)).fetchone()
        if row is None:
            return None
        return {"task_id": text_value(row[0], "task_id"),
                "path": text_value(row[1], "path"),
                "task_type": task_type_value(row[2]),
                "description": text_value(row[3], "description"),
                "tool_ids": names_value(row[4], "tool_ids"),
                "routes": names_value(row[5], "routes"),
                "text_hash": text_value(row[6], "text_hash")}

    def using_tool(self, tool_id: str) -> list[str]:
        """The documents whose ``tool.tool_id`` is ``tool_id``."""
        return self._retry(lambda: self._naming("tool_ids", tool_id))

    def routing_to(self, task_id: str) -> list[str]:
        """The documents that name ``task_id`` as a plan step or an error route."""
        return self._retry(lambda: self._naming("routes", task_id))

    def _naming(self, column: str, name: str) -> list[str]:
        """The documents whose list ``column`` holds ``name``, sorted."""
        return [text_value(task_id, "task_id") for task_id, names in self._conn.execute(
            f"SELECT task_id, {column} FROM docs ORDER BY task_id")
            if name in names_value(names, column)]

    # -- searching -------------------------------------------------------------------------

    def search(self, query: str, k: int = 5, *,
               task_types: Iterable[str] | None = None) -> list[Hit]:
        """The ``k`` documents that best match ``query`` by meaning and by terms.

        ``task_types`` keeps only documents of those types. An empty query is a
        ``ValueError``.
        """
        if not query or not query.strip():
            raise ValueError("empty query")
        return self._retry(lambda: self._search(query, k, task_types))

    def _search(self, query: str, k: int, task_types: Iterable[str] | None) -> list[Hit]:
        fused = combine(self.lexical_scores(query), self.vector_scores(query),
                        self.lexical_weight)
        if not fused:
            return []
        if task_types is not None:
            wanted = set(task_types)
            if self._types is None:
                self._types = {text_value(t, "task_id"): task_type_value(k) for t, k in
                               self._conn.execute("SELECT task_id, task_type FROM docs")}
            fused = [(t, s) for t, s in fused if self._types.get(t) in wanted]
        head = fused[:k]
        if not head:
            return []
        rows = {r[0]: r[1:] for r in self._conn.execute(
            "SELECT task_id, description, task_type, path FROM docs"
            f" WHERE task_id IN ({','.join('?' * len(head))})", [t for t, _ in head])}
        return [Hit(task_id=task_id, score=score, description=text_value(row[0], "description"),
                    task_type=task_type_value(row[1]), path=text_value(row[2], "path"))
                for task_id, score in head if (row := rows.get(task_id))]

    def lexical_scores(self, query: str) -> dict[str, float]:
        """BM25 scores (higher is better) of the documents sharing terms with ``query``."""
        scores = bm25_scores(self._conn, query)
        if not scores:
            return {}
        names = dict(self._conn.execute(
            f"SELECT id, task_id FROM docs WHERE id IN ({','.join('?' * len(scores))})",
            list(scores)))
        return {text_value(names[i], "task_id"): s for i, s in scores.items() if i in names}

    def vector_scores(self, query: str) -> dict[str, float]:
        """Cosine similarity to ``query`` of every document with a vector ({} without a
        working embedding model)."""
        if self._embedder_failed or self.embedder is None:
            return {}
        matrix, ids = self._vectors()
        if not ids:
            return {}
        q = self._embed([query])
        if q is None or q.shape[1] != matrix.shape[1]:
            return {}
        return dict(zip(ids, (matrix @ q[0]).tolist(), strict=True))

    def _vectors(self) -> tuple[np.ndarray, list[str]]:
        if self._matrix is None:
            import numpy as np

            assert self.embedder is not None
            rows = self._conn.execute(
                "SELECT d.task_id, v.vec FROM vectors v JOIN docs d ON d.id = v.doc"
                " AND d.text_hash = v.text_hash WHERE v.model = ? ORDER BY v.doc",
                (self.embedder.model_id,)).fetchall()
            dims = {len(vec) for _, vec in rows}
            if len(dims) > 1 or (dims and dims.pop() % 4):
                raise sqlite3.DatabaseError("vectors of mixed sizes")
            self._matrix_ids = [text_value(doc, "task_id") for doc, _ in rows]
            self._matrix = (np.frombuffer(b"".join(vec for _, vec in rows), dtype=np.float32)
                            .reshape(len(rows), -1) if rows else np.zeros((0, 0), np.float32))
        return self._matrix, self._matrix_ids
