"""Embedders: wordllama's bundled model (offline, lazy, equal to the library's own), a litellm
model through the local server's /v1/embeddings, and the environment that chooses."""

from __future__ import annotations

import base64
import json
import struct
import urllib.error
import urllib.request
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
from jupyter_percent_agent.testing.openai_server import Reply, hashed_embedding

TEXTS = ["Translate an amount between currencies at today's rate",
         "检查提纲是否合格", "", "a"]


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


def test_the_litellm_embedder_gets_the_servers_vectors(openai_server) -> None:
    embedder = LiteLLMEmbedder("openai/embed-test", api_base=openai_server.url, api_key="k",
                               batch_size=3)
    vectors = embedder.embed(TEXTS)
    expected = np.asarray(hashed_embedding([t if t.strip() else " " for t in TEXTS]))
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert [len(r.body["input"]) for r in openai_server.embedding_requests] == [3, 1]
    assert embedder.model_id == f"litellm/openai/embed-test@{openai_server.url}"


def test_the_litellm_embedder_raises_embedding_error_on_failure(openai_server) -> None:
    openai_server.embedding_reply = Reply.http_error(503, "overloaded")
    embedder = LiteLLMEmbedder("openai/embed-test", api_base=openai_server.url, api_key="k")
    with pytest.raises(EmbeddingError, match="overloaded"):
        embedder.embed(["x"])


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


def _post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_test_servers_embeddings_endpoint_speaks_openai(openai_server) -> None:
    status, body = _post(openai_server.url + "/embeddings",
                         {"model": "m", "input": "hello world"})
    assert status == 200 and body["object"] == "list" and body["model"] == "m"
    assert body["data"][0]["index"] == 0 and len(body["data"][0]["embedding"]) == 64
    status, body = _post(openai_server.url + "/embeddings",
                         {"model": "m", "input": ["a b", "c"], "encoding_format": "base64"})
    packed = base64.b64decode(body["data"][1]["embedding"])
    assert struct.unpack("<64f", packed) == pytest.approx(hashed_embedding(["c"])[0])
    assert _post(openai_server.url + "/embeddings", {"input": [[1, 2]]})[0] == 400
    openai_server.embedding_reply = Reply.http_error(429, "slow down")
    status, body = _post(openai_server.url + "/embeddings", {"input": "x"})
    assert status == 429 and body["error"]["message"] == "slow down"


def test_a_huge_document_is_embedded_in_bounded_memory() -> None:
    """A 2 MB document (a log pasted into a SOP folder) once took over 2 GB to embed, and a
    30 MB one had the kernel's OOM killer end ``tce sop search``: the tokens of the whole
    text were looked up at once."""
    import subprocess
    import sys

    child = (
        "import resource\n"
        "from jupyter_percent_agent.ranking.embed import WordLlamaEmbedder\n"
        "e = WordLlamaEmbedder(); e.embed(['warm up'])\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "v = e.embed(['pay the supplier ' + ' '.join("
        "'w%d' % i for i in range(300_000))])\n"
        "assert abs(float((v * v).sum()) - 1) < 1e-4\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=300, check=True)
    grown_mb = int(done.stdout.strip())
    assert grown_mb < 200, f"embedding one 2 MB text took {grown_mb} MB more"
