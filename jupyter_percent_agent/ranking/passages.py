"""Ranking the passages of a conversation against a new message (history relevance).

The same ranking as the SOP index and tool selection: BM25 over the passages' terms
(:mod:`.text`) fused with embedding similarity (:mod:`.fusion`), with a larger lexical weight:
in a conversation, an exact name, number or code in the new message is the strongest evidence
of which earlier cell it needs (``benchmarks/bench_history.py`` sweeps the weight).

Embeddings are kept by the hash of the text they embed, in this process and in a SQLite file
of the user's cache folder (:class:`VectorCache`), so re-ranking a long conversation after one
new cell embeds one cell (and the message). Terms are kept by text in this process.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .embed import Embedder
from .fusion import combine
from .text import TERMS_TABLE, bm25_scores, columns

if TYPE_CHECKING:
    import numpy as np

HISTORY_LEXICAL_WEIGHT = 0.5
"""The lexical share of the fused score for history (0.2 for documents): see the module."""
CACHE_NAME = "history-vectors.sqlite"
_MEMORY_ROWS = 50_000

K = TypeVar("K", bound=Hashable)


def text_key(model_id: str, text: str) -> str:
    """The cache key of ``text``'s vector under ``model_id``."""
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()[:32]


class VectorCache:
    """Vectors by (model, text): in memory, and in ``path`` (SQLite) when one is given.

    A cache that cannot be opened or written (a read-only home) is only in memory: losing it
    costs time, never an answer.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._memory: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._opened = False
        self.embedded = 0  # texts embedded by this cache (what a re-ranking cost)

    def _db(self) -> sqlite3.Connection | None:
        if self._opened:
            return self._conn
        self._opened = True
        if self.path is None:
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            conn = sqlite3.connect(self.path, check_same_thread=False)
            conn.execute("CREATE TABLE IF NOT EXISTS vectors "
                         "(key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            self._conn = conn
        except (OSError, sqlite3.Error):
            self._conn = None
        return self._conn

    def vectors(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """One unit row per text, embedding only the texts seen by neither cache."""
        import numpy as np

        keys = [text_key(embedder.model_id, t) for t in texts]
        with self._lock:
            missing = [k for k in dict.fromkeys(keys) if k not in self._memory]
            if missing:
                self._load(missing)
            todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._memory}
            if todo:
                fresh = embedder.embed(list(todo.values()))
                self.embedded += len(todo)
                rows = {k: np.asarray(v, dtype=np.float32).tobytes()
                        for k, v in zip(todo, fresh, strict=True)}
                self._memory.update(rows)
                self._store(rows)
            for k in keys:
                self._memory.move_to_end(k)
            while len(self._memory) > _MEMORY_ROWS:
                self._memory.popitem(last=False)
            return np.stack([np.frombuffer(self._memory[k], dtype=np.float32) for k in keys]) \
                if keys else np.zeros((0, 0), dtype=np.float32)

    def _load(self, keys: list[str]) -> None:
        conn = self._db()
        if conn is None:
            return
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in conn.execute(
                        f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                    self._memory[key] = bytes(blob)
        except sqlite3.Error:
            pass

    def _store(self, rows: Mapping[str, bytes]) -> None:
        conn = self._db()
        if conn is None:
            return
        try:
            with conn:
                conn.executemany("INSERT OR REPLACE INTO vectors(key, vector) VALUES (?, ?)",
                                 list(rows.items()))
        except sqlite3.Error:
            pass


_terms: OrderedDict[str, tuple[str, str, str]] = OrderedDict()
_terms_lock = threading.Lock()


def _columns(text: str) -> tuple[str, str, str]:
    with _terms_lock:
        found = _terms.get(text)
        if found is not None:
            _terms.move_to_end(text)
            return found
    found = columns("", text)
    with _terms_lock:
        _terms[text] = found
        while len(_terms) > _MEMORY_ROWS:
            _terms.popitem(last=False)
    return found


def lexical_scores(passages: Mapping[K, str], query: str) -> dict[K, float]:
    """BM25 of the passages that share a term with ``query`` (higher is better)."""
    keys = list(passages)
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(TERMS_TABLE)
        conn.executemany("INSERT INTO terms(rowid, head, body, chars) VALUES (?, ?, ?, ?)",
                         [(i, *_columns(passages[k])) for i, k in enumerate(keys)])
        return {keys[i]: score for i, score in bm25_scores(conn, query).items()}
    finally:
        conn.close()


def rank_passages(passages: Mapping[K, str], query: str, *, embedder: Embedder | None,
                  cache: VectorCache | None = None,
                  lexical_weight: float = HISTORY_LEXICAL_WEIGHT) -> dict[K, float]:
    """Every passage's fused score for ``query`` (standard deviations above the average
    passage). ``embedder`` None ranks by words only; a passage no ranking reaches scores
    below all the others. ``EmbeddingError`` when the embedder fails (the caller decides)."""
    if not passages:
        return {}
    lexical = lexical_scores(passages, query) if query.strip() else {}
    vector: dict[K, float] = {}
    if embedder is not None and query.strip():
        cache = cache or VectorCache()
        keys = list(passages)
        matrix = cache.vectors(embedder, [passages[k] for k in keys])
        q = cache.vectors(embedder, [query])[0]
        vector = dict(zip(keys, (matrix @ q).tolist(), strict=True))
    fused = dict(combine(lexical, vector, lexical_weight))
    floor = min(fused.values(), default=0.0) - 1.0
    return {k: fused.get(k, floor) for k in passages}


_shared_caches: dict[Path, VectorCache] = {}


def user_cache() -> VectorCache:
    """The vector cache in the user's cache folder (``trust.cache_dir``), one per process."""
    from jupyter_percent_agent.trust import cache_dir

    path = cache_dir() / CACHE_NAME
    with _terms_lock:
        if path not in _shared_caches:
            _shared_caches[path] = VectorCache(path)
        return _shared_caches[path]
