"""Embedders: wordllama's bundled model (offline, lazy, equal to the library's own), a litellm
model through the local server's /v1/embeddings, and the environment that chooses."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer
from wordllama import WordLlamaInference

from jupyter_percent_agent.ranking.embed import (
    EmbeddingError,
    LiteLLMEmbedder,
    WordLlamaEmbedder,
    embedder_from_env,
    load_table,
    wordllama_files,
)
from tests.helpers.index import TEXTS


def test_wordllama_vectors_equal_the_librarys_own() -> None:
    weights, tokenizer = wordllama_files()
    library = WordLlamaInference(load_file(str(weights))["embedding.weight"],
                                 Tokenizer.from_file(str(tokenizer)))
    ours = WordLlamaEmbedder().embed(TEXTS)
    theirs = library.embed([t for t in TEXTS if t], norm=True)  # it divides "" by zero
    assert ours.shape == (4, 256) and ours.dtype == np.float32
    np.testing.assert_allclose(ours[[0, 1, 3]], theirs, atol=1e-5)
    assert not ours[2].any()  # an empty text has no tokens: a zero vector, not NaN
    assert np.linalg.norm(ours[[0, 1, 3]], axis=1) == pytest.approx(1.0, abs=1e-5)


def test_wordllama_loads_nothing_until_it_embeds() -> None:
    embedder = WordLlamaEmbedder()
    assert embedder._table is None and embedder._tokenizer is None
    embedder.embed(["x"])
    assert isinstance(embedder._table, np.memmap)  # mapped, not read whole


def test_load_table_refuses_a_file_that_is_not_safetensors(tmp_path: Path) -> None:
    bad = tmp_path / "w.safetensors"
    bad.write_bytes(b"\xff" * 64)
    with pytest.raises(EmbeddingError, match="not a safetensors file"):
        load_table(bad)
    header = json.dumps({"embedding.weight": {"dtype": "F16", "shape": [10, 4],
                                              "data_offsets": [0, 80]}}).encode()
    short = tmp_path / "short.safetensors"
    short.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 40)
    with pytest.raises(EmbeddingError, match="2-D float16/float32"):
        load_table(short)


def test_a_model_id_never_carries_credentials() -> None:
    embedder = LiteLLMEmbedder("openai/e", api_base="https://user:secret@host:8443/v1?key=s")
    assert embedder.model_id == "litellm/openai/e@https://host:8443/v1"


def test_the_environment_chooses_the_embedder() -> None:
    assert isinstance(embedder_from_env({}), WordLlamaEmbedder)
    assert isinstance(embedder_from_env({"PERCENT_AGENT_EMBED_MODEL": "wordllama"}),
                      WordLlamaEmbedder)
    assert embedder_from_env({"PERCENT_AGENT_EMBED_MODEL": "none"}) is None
    same = embedder_from_env({"PERCENT_AGENT_EMBED_MODEL": "ollama/nomic-embed-text",
                              "PERCENT_AGENT_API_BASE": "http://gpu:11434",
                              "PERCENT_AGENT_API_KEY": "sk-shared"})
    assert isinstance(same, LiteLLMEmbedder)
    assert (same.api_base, same._api_key) == ("http://gpu:11434", "sk-shared")
    apart = embedder_from_env({"PERCENT_AGENT_EMBED_MODEL": "openai/text-embedding-3-small",
                               "PERCENT_AGENT_EMBED_API_BASE": "http://embed:8000/v1",
                               "PERCENT_AGENT_API_BASE": "http://chat:8000/v1",
                               "PERCENT_AGENT_API_KEY": "sk-chat"})
    assert (apart.api_base, apart._api_key) == ("http://embed:8000/v1", None)


