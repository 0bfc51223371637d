"""Ranking the passages of a conversation against a new message (history relevance).

The same ranking as the SOP index and tool selection: BM25 over the passages' terms
(:mod:`.text`'s terms; computed here, see :func:`lexical_scores`) fused with embedding
similarity (:mod:`.fusion`), with a larger lexical weight:
in a conversation, an exact name, number or code in the new message is the strongest evidence
of which earlier cell it needs (``benchmarks/bench_history.py`` sweeps the weight).

Embeddings are kept by the hash of the text they embed, in this process and in a SQLite file
of the user's cache folder (:class:`VectorCache`), so re-ranking a long conversation after one
new cell embeds one cell (and the message). Terms are kept by text in this process.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .embed import Embedder
from .fusion import combine_arrays
from .text import query_terms, terms

if TYPE_CHECKING:
    import numpy as np

HISTORY_LEXICAL_WEIGHT = 0.5
"""The lexical share of the fused score for history (0.2 for documents): see the module."""
CACHE_NAME = "history-vectors.sqlite"
_MEMORY_ROWS = 50_000

K = TypeVar("K", bound=Hashable)


_keys: OrderedDict[tuple[str, str], str] = OrderedDict()


def text_key(model_id: str, text: str) -> str:
    """The cache key of ``text``'s vector under ``model_id`` (remembered in this process)."""
    key = _keys.get((model_id, text))
    if key is None:
        key = hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()[:32]
        _keys[(model_id, text)] = key
        if len(_keys) > _MEMORY_ROWS:
            _keys.popitem(last=False)
    return key


class VectorCache:
    """Vectors by (model, text): in memory, and in ``path`` (SQLite) when one is given.

    A cache that cannot be opened or written (a read-only home) is only in memory: losing it
    costs time, never an answer.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
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
            # vectors of the user's conversations: readable by the user alone
            os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=2.0)
            # a cache: no fsync at each commit (WAL stays consistent; a lost row is embedded
            # again), which on a busy disk cost more than the scoring
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
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
                rows = {k: np.asarray(v, dtype=np.float32)
                        for k, v in zip(todo, fresh, strict=True)}
                self._memory.update(rows)
                self._store({k: v.tobytes() for k, v in rows.items()})
            found = np.stack([self._memory[k] for k in keys]) if keys \
                else np.zeros((0, 0), dtype=np.float32)
            while len(self._memory) > _MEMORY_ROWS:  # the oldest in, first out
                self._memory.popitem(last=False)
            return found

    def _load(self, keys: list[str]) -> None:
        import numpy as np

        conn = self._db()
        if conn is None:
            return
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in conn.execute(
                        f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                    self._memory[key] = np.frombuffer(bytes(blob), dtype=np.float32)
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


BM25_K1, BM25_B = 1.2, 0.75

_counts: OrderedDict[str, tuple[dict[str, int], int]] = OrderedDict()
_counts_lock = threading.Lock()


def term_counts(text: str) -> tuple[dict[str, int], int]:
    """A text's terms (``text.terms``: words, Chinese bigrams and characters) with their
    counts, and how many it has; kept by text in this process."""
    with _counts_lock:
        found = _counts.get(text)
        if found is not None:
            return found
    words, chars = terms(text)
    counts: dict[str, int] = {}
    for term in words + chars:
        counts[term] = counts.get(term, 0) + 1
    found = (counts, len(words) + len(chars))
    with _counts_lock:
        _counts[text] = found
        while len(_counts) > _MEMORY_ROWS:
            _counts.popitem(last=False)
    return found


def lexical_array(texts: Sequence[str], query: str) -> np.ndarray:
    """BM25 of each text for ``query`` (NaN for a text sharing no term with it), computed
    here rather than in an FTS5 table: a conversation is ranked at every message, and building
    the table for 1,000 cells cost more than ranking them (terms are not stemmed here)."""
    import numpy as np

    wanted = query_terms(query) if query.strip() else []
    n = len(texts)
    if not wanted or not n:
        return np.full(n, np.nan)
    counted = [term_counts(t) for t in texts]
    tf = np.array([[counts.get(term, 0) for term in wanted] for counts, _ in counted],
                  dtype=np.float64).reshape(n, len(wanted))
    lengths = np.array([length for _, length in counted], dtype=np.float64)
    df = (tf > 0).sum(axis=0)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths / max(lengths.mean(), 1.0))
    scores = (idf * tf * (BM25_K1 + 1) / (tf + norm[:, None])).sum(axis=1)
    return np.where(scores > 0, scores, np.nan)


def rank_passages(passages: Mapping[K, str], query: str, *, embedder: Embedder | None,
                  cache: VectorCache | None = None,
                  lexical_weight: float = HISTORY_LEXICAL_WEIGHT) -> dict[K, float]:
    """Every passage's fused score for ``query`` (``fusion.combine_arrays``: standard
    deviations above the average passage). ``embedder`` None ranks by words only; a passage
    no ranking reaches scores below all the others. ``EmbeddingError`` when the embedder
    fails (the caller decides)."""
    import numpy as np

    if not passages:
        return {}
    keys = list(passages)
    texts = [passages[k] for k in keys]
    lexical = lexical_array(texts, query)
    vector = None
    if embedder is not None and query.strip():
        cache = cache or VectorCache()
        matrix = cache.vectors(embedder, texts)
        vector = matrix @ cache.vectors(embedder, [query])[0]
    fused = combine_arrays(lexical, vector, lexical_weight)
    reached = np.isfinite(fused)
    floor = float(fused[reached].min()) - 1.0 if reached.any() else 0.0
    return dict(zip(keys, np.where(reached, fused, floor).tolist(), strict=True))


_shared_caches: dict[Path, VectorCache] = {}


def user_cache() -> VectorCache:
    """The vector cache in the user's cache folder (``trust.cache_dir``), one per process."""
    from jupyter_percent_agent.trust import cache_dir

    path = cache_dir() / CACHE_NAME
    with _counts_lock:
        if path not in _shared_caches:
            _shared_caches[path] = VectorCache(path)
        return _shared_caches[path]
