"""Choosing the tools to offer for one message, when an agent has more than it should show.

An agent with 40 tools should not put 40 docstrings in every prompt: :func:`select_tools`
ranks the tools against the message with the same ranking as the SOP index (BM25 over the
tool's name and docstring, fused with embedding similarity, see :mod:`.fusion`) and keeps
the best ``limit``, always including the tools the conversation already used. Pure apart from
the embedder, whose tool vectors are cached per process (by model and text).
"""

from __future__ import annotations

import sqlite3
import threading
import warnings
from collections import OrderedDict
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from jupyter_percent_agent.trust import LIMITS

from .embed import Embedder, EmbeddingError, shared_embedder
from .fusion import LEXICAL_WEIGHT, combine
from .text import TERMS_TABLE, bm25_scores, columns

if TYPE_CHECKING:
    import numpy as np

DEFAULT_TOOL_LIMIT = int(LIMITS["tool_limit"].default or 0)
_CACHE_SIZE = 4096


class ToolSelectionWarning(UserWarning):
    """The embedding model failed: tools were ranked by their words only."""


_DEFAULT: Any = object()
_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_cache_lock = threading.Lock()


def tool_text(name: str, description: str) -> tuple[str, str]:
    """``(head, body)`` of a tool: its name as words with the docstring's first line, and the
    rest of the docstring."""
    words = " ".join(name.replace("_", " ").replace(".", " ").split())
    first, _, rest = description.strip().partition("\n")
    return f"{words}. {first}", rest


def _vectors(embedder: Embedder, texts: list[str]) -> np.ndarray:
    import numpy as np

    model = embedder.model_id
    with _cache_lock:
        missing = [t for t in dict.fromkeys(texts) if (model, t) not in _cache]
    if missing:
        fresh = embedder.embed(missing)
        with _cache_lock:
            for text, vec in zip(missing, fresh, strict=True):
                _cache[(model, text)] = vec
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    with _cache_lock:
        return np.stack([_cache[(model, t)] for t in texts])


def rank_tools(tools: Mapping[str, str], message: str, *,
               embedder: Embedder | None = _DEFAULT) -> list[tuple[str, float]]:
    """Every tool that the message's words or meaning reach, best first, with its score.

    ``tools`` maps a tool's name to its description (its docstring). ``embedder``: by default
    the environment's; ``None`` ranks by words only.
    """
    names = list(tools)
    if not names or not message.strip():
        return []
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(TERMS_TABLE)
        conn.executemany("INSERT INTO terms(rowid, head, body, chars) VALUES (?, ?, ?, ?)",
                         [(i, *columns(*tool_text(n, tools[n]))) for i, n in enumerate(names)])
        lexical = bm25_scores(conn, message)
    finally:
        conn.close()
    vector: dict[int, float] = {}
    if embedder is _DEFAULT:
        embedder = shared_embedder()
    if embedder is not None:
        texts = ["\n".join(tool_text(n, tools[n])) for n in names]
        try:
            matrix = _vectors(embedder, texts)
            query = embedder.embed([message])[0]
            vector = dict(enumerate((matrix @ query).tolist()))
        except EmbeddingError as exc:
            warnings.warn(f"embedding model failed, tools ranked by their words only: {exc}",
                          ToolSelectionWarning, stacklevel=2)
    return [(names[i], score) for i, score in combine(lexical, vector, LEXICAL_WEIGHT)]


def select_tools(tools: Mapping[str, str], message: str, used: Collection[str] = (),
                 limit: int = DEFAULT_TOOL_LIMIT, *,
                 embedder: Embedder | None = _DEFAULT) -> list[str]:
    """The names of the tools to offer for ``message``, in the order of ``tools``.

    All of them when there are no more than ``limit``. Otherwise the tools the conversation
    already ``used`` (those still in ``tools``), then the best-ranked others, up to ``limit``
    in all (if more than ``limit`` were used, the best-ranked of them). A message with no text
    to rank by keeps the used tools and the first others.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    names = list(tools)
    if len(names) <= limit:
        return names
    ranked = [name for name, _ in rank_tools(tools, message, embedder=embedder)]
    seen = set(ranked)
    order = ranked + [n for n in names if n not in seen]
    used = set(used)
    keep = [n for n in order if n in used][:limit]
    for name in order:
        if len(keep) >= limit:
            break
        if name not in keep:
            keep.append(name)
    chosen = set(keep)
    return [n for n in names if n in chosen]
