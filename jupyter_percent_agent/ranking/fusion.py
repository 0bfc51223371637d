"""Fusing the lexical and the vector ranking into one score: a convex combination of z-scores.

Pure arithmetic over ``{id: raw score}`` maps, shared by the document index and tool
selection. Each ranking's scores are standardized (z-scores): the vector ranking's over every
item that has a vector, the lexical ranking's over the items that share a term with the query
(an item that shares none ranks below all of them: it gets their lowest z). Then
``(1 - w) * z_vector + w * z_lexical``.

Why not reciprocal rank fusion: RRF keeps only ranks, and so throws away how far ahead the
first item is; here a lexical match is strong evidence when it is a rare word and noise when it
is a common one, and only the scores tell which. On the paraphrase set
(``benchmarks/bench_index.py``, which prints both) RRF ranks below the vector ranking alone,
the convex combination above both, as Bruch et al. ("An Analysis of Fusion Functions for
Hybrid Retrieval", 2023) found in general. The fused score reads as standard deviations above
the average item.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

LEXICAL_WEIGHT = 0.2  # w above; the sweep in benchmarks/bench_index.py shows its range

T = TypeVar("T", bound=Hashable)


def zscores(scores: Mapping[T, float]) -> dict[T, float]:
    """Each score as standard deviations from the mean (all 0 when they do not vary)."""
    n = len(scores)
    if n < 2:
        return {key: 0.0 for key in scores}
    mean = sum(scores.values()) / n
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores.values()) / n)
    if sd <= 1e-12:
        return {key: 0.0 for key in scores}
    return {key: (s - mean) / sd for key, s in scores.items()}


def combine(lexical: Mapping[T, float], vector: Mapping[T, float],
            lexical_weight: float = LEXICAL_WEIGHT) -> list[tuple[T, float]]:
    """Items of either ranking with their fused score, best first (ties: lexical order).

    ``lexical``: BM25 scores of the items that share terms with the query.
    ``vector``: cosine similarities of the items that have a vector (others count as average).
    An empty ranking contributes nothing: with no vectors the order is BM25's alone.
    """
    if not lexical and not vector:
        return []
    w = lexical_weight if lexical and vector else (1.0 if lexical else 0.0)
    z_lex = zscores(lexical)
    z_lex_missing = min(z_lex.values(), default=0.0)
    z_vec = zscores(vector)
    keys = list(dict.fromkeys([*lexical, *vector]))
    fused = {key: (1 - w) * z_vec.get(key, 0.0) + w * z_lex.get(key, z_lex_missing)
             for key in keys}
    return sorted(fused.items(), key=lambda item: -item[1])


def combine_arrays(lexical: np.ndarray | None, vector: np.ndarray | None,
                   lexical_weight: float = LEXICAL_WEIGHT) -> np.ndarray:
    """``combine`` over arrays indexed by item, for thousands of items ranked at once (a long
    conversation): ``lexical`` holds BM25 with NaN for the items sharing no term with the
    query, ``vector`` the cosine similarities (None: no ranking). The fused score of every
    item, by the same rule as ``combine``; an item neither ranking reaches (no vectors and no
    term shared) scores NaN."""
    import numpy as np

    def z(values: np.ndarray) -> np.ndarray:
        if values.size < 2:
            return np.zeros_like(values)
        sd = values.std()
        return np.zeros_like(values) if sd <= 1e-12 else (values - values.mean()) / sd

    has_lex = lexical is not None and bool(np.isfinite(lexical).any())
    has_vec = vector is not None and vector.size > 0
    n = len(lexical) if lexical is not None else (len(vector) if vector is not None else 0)
    if not has_lex and not has_vec:
        return np.full(n, np.nan)
    w = lexical_weight if has_lex and has_vec else (1.0 if has_lex else 0.0)
    z_lex = np.zeros(n)
    if has_lex:
        assert lexical is not None
        matched = np.isfinite(lexical)
        z_lex = np.full(n, 0.0)
        z_lex[matched] = z(lexical[matched].astype(np.float64))
        z_lex[~matched] = z_lex[matched].min()
        if not has_vec:
            return np.where(matched, z_lex, np.nan)
    z_vec = z(np.asarray(vector, dtype=np.float64)) if has_vec else np.zeros(n)
    return (1 - w) * z_vec + w * z_lex
