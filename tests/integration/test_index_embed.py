"""Embedders against the local server's /v1/embeddings, and a huge document embedded in
bounded memory in a process of its own."""

from __future__ import annotations

import base64
import json
import struct
import urllib.error

import numpy as np
import pytest

from jupyter_percent_agent.ranking.embed import EmbeddingError, LiteLLMEmbedder
from jupyter_percent_agent.testing.openai_server import Reply, hashed_embedding
from tests.helpers.index import TEXTS


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
