"""The fusion arithmetic, and that the index feeds it the right numbers.

The fake embedder here is the one allowed stand-in: it makes the vector side's cosines known
in advance, so the fused order can be checked by hand.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from jupyter_percent_agent.ranking.fusion import combine, zscores
from jupyter_percent_agent.tasks.index import Index


def test_zscores_are_standard_deviations_from_the_mean() -> None:
    z = zscores({"a": 1.0, "b": 2.0, "c": 3.0})
    sd = math.sqrt(2 / 3)
    assert z == pytest.approx({"a": -1 / sd, "b": 0.0, "c": 1 / sd})
    assert zscores({"a": 5.0}) == {"a": 0.0}
    assert zscores({"a": 2.0, "b": 2.0}) == {"a": 0.0, "b": 0.0}
    assert zscores({}) == {}


def test_combine_weighs_vector_and_lexical_z_scores() -> None:
    lexical = {"a": 10.0, "b": 0.0}  # z: a +1, b -1
    vector = {"a": 0.0, "b": 1.0, "c": 0.5}  # z: a -1.22, b +1.22, c 0
    fused = dict(combine(lexical, vector, lexical_weight=0.2))
    zv = math.sqrt(1.5)
    assert fused["a"] == pytest.approx(0.8 * -zv + 0.2 * 1.0)
    assert fused["b"] == pytest.approx(0.8 * zv + 0.2 * -1.0)
    # c shares no term: it gets the lowest lexical z of the items that do
    assert fused["c"] == pytest.approx(0.8 * 0.0 + 0.2 * -1.0)
    assert [k for k, _ in combine(lexical, vector, lexical_weight=0.2)] == ["b", "c", "a"]
    assert [k for k, _ in combine(lexical, vector, lexical_weight=0.9)] == ["a", "b", "c"]


def test_a_missing_ranking_leaves_the_other_alone() -> None:
    assert [k for k, _ in combine({"x": 1.0, "y": 3.0}, {})] == ["y", "x"]
    assert [k for k, _ in combine({}, {"x": 0.9, "y": 0.1})] == ["x", "y"]
    assert combine({}, {}) == []


class AxisEmbedder:
    """Texts mentioning a keyword point along that keyword's axis; others along the last."""

    model_id = "test/axes"
    KEYWORDS = ("alpha", "beta", "gamma")

    def embed(self, texts):  # type: ignore[no-untyped-def]
        out = np.zeros((len(texts), len(self.KEYWORDS) + 1), dtype=np.float32)
        for i, text in enumerate(texts):
            hits = [j for j, k in enumerate(self.KEYWORDS) if k in text.lower()]
            for j in hits or [len(self.KEYWORDS)]:
                out[i, j] = 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _doc(folder: Path, task_id: str, description: str) -> None:
    path = folder / f"{task_id}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntask_id: {task_id}\ntask_type: execute\n"
                    f"description: {description}\n---\n", encoding="utf-8")


def test_the_index_fuses_its_cosines_and_bm25_scores_as_combine_does(tmp_path: Path) -> None:
    _doc(tmp_path, "d/one", "alpha report")
    _doc(tmp_path, "d/two", "beta report")
    _doc(tmp_path, "d/three", "gamma summary")
    _doc(tmp_path, "d/four", "gamma beta notes")
    with Index.open(tmp_path, embedder=AxisEmbedder()) as ix:
        vector = ix.vector_scores("gamma report")
        lexical = ix.lexical_scores("gamma report")
        hits = ix.search("gamma report", 4)
    assert vector == pytest.approx({"d/one": 0.0, "d/two": 0.0, "d/three": 1.0,
                                    "d/four": 1 / math.sqrt(2)})
    assert set(lexical) == {"d/one", "d/two", "d/three", "d/four"}
    expected = combine(lexical, vector)
    assert [h.task_id for h in hits] == [t for t, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected])
    assert hits[0].task_id == "d/three"
