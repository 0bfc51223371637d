"""The SOP index with real processes and servers: `tce` commands indexing one folder at once,
with the network off, without heavy imports; litellm embedding models through the local server."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from jupyter_percent_agent.ranking.embed import LiteLLMEmbedder, WordLlamaEmbedder
from jupyter_percent_agent.tasks.index import INDEX_NAME, Index
from jupyter_percent_agent.testing.environment import tce
from jupyter_percent_agent.testing.openai_server import Reply
from tests.helpers.index import CountingEmbedder


def test_commands_indexing_one_folder_at_once_neither_fail_nor_rebuild(sop: Path) -> None:
    code = "from jupyter_percent_agent.cli import main; main()"
    procs = [subprocess.Popen([sys.executable, "-c", code, "sop", "index", str(sop)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], results
    assert not any(err for _, err in results), results
    assert sum("52 added" in out for out, _ in results) >= 1
    with Index.open(sop, embedder=None) as ix:
        assert len(ix.task_ids()) == 52


def test_vectors_of_two_models_are_never_mixed(sop: Path, openai_server) -> None:
    remote = LiteLLMEmbedder("openai/embed-test", api_base=openai_server.url, api_key="sk-x")
    with Index.open(sop, embedder=WordLlamaEmbedder()):
        pass
    with Index.open(sop, embedder=remote) as ix:
        assert len(openai_server.embedding_requests) == 1  # the 52 documents, one batch
        assert ix.search("currency", 3)
        assert openai_server.embedding_requests[-1].body["input"] == ["currency"]
    with Index.open(sop, embedder=CountingEmbedder()) as ix:
        assert ix.embedder.texts == []  # wordllama's vectors were kept, not recomputed
    conn = sqlite3.connect(sop / INDEX_NAME)
    models = dict(conn.execute("SELECT model, count(*) FROM vectors GROUP BY model"))
    sizes = dict(conn.execute("SELECT model, length(vec) FROM vectors GROUP BY model"))
    conn.close()
    assert models == {"wordllama/l2_supercat_256": 52,
                      f"litellm/openai/embed-test@{openai_server.url}": 52}
    assert sizes["wordllama/l2_supercat_256"] == 256 * 4
    assert sizes[f"litellm/openai/embed-test@{openai_server.url}"] == 64 * 4


def test_a_configured_litellm_model_embeds_through_its_endpoint(sop: Path, openai_server,
                                                                monkeypatch) -> None:
    monkeypatch.setenv("PERCENT_AGENT_EMBED_MODEL", "openai/text-embedding-local")
    monkeypatch.setenv("PERCENT_AGENT_EMBED_API_BASE", openai_server.url)
    monkeypatch.setenv("PERCENT_AGENT_EMBED_API_KEY", "sk-embed")
    monkeypatch.setenv("PERCENT_AGENT_API_KEY", "sk-chat-only")
    code, out, err = tce("sop", "search", "bank statement ledger", "--sop", str(sop),
                         "-k", "1")
    assert code == 0, err
    assert out.split()[1] == "finance/reconcile_bank_statement"
    requests = openai_server.embedding_requests
    assert requests and requests[0].body["model"] == "text-embedding-local"
    assert {r.headers.get("Authorization") for r in requests} == {"Bearer sk-embed"}


def test_the_chat_key_never_goes_to_a_separate_embedding_endpoint(sop: Path, openai_server,
                                                                  monkeypatch) -> None:
    monkeypatch.setenv("PERCENT_AGENT_EMBED_MODEL", "openai/text-embedding-local")
    monkeypatch.setenv("PERCENT_AGENT_EMBED_API_BASE", openai_server.url)
    monkeypatch.delenv("PERCENT_AGENT_EMBED_API_KEY", raising=False)
    monkeypatch.setenv("PERCENT_AGENT_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PERCENT_AGENT_API_KEY", "sk-chat-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    assert tce("sop", "index", str(sop)).exit_code == 0
    sent = {r.headers.get("Authorization") for r in openai_server.embedding_requests}
    # neither the chat endpoint's key nor the provider's key from the environment
    assert sent == {"Bearer no-key"}


def test_a_failing_embedding_model_falls_back_to_words_with_one_warning(
        sop: Path, openai_server, monkeypatch) -> None:
    openai_server.embedding_reply = Reply.http_error(500, "model unavailable")
    monkeypatch.setenv("PERCENT_AGENT_EMBED_MODEL", "openai/broken-embedder")
    monkeypatch.setenv("PERCENT_AGENT_EMBED_API_BASE", openai_server.url)
    monkeypatch.setenv("PERCENT_AGENT_RETRIES", "0")
    code, out, err = tce("sop", "search", "reconcile the bank statement", "--sop",
                         str(sop), "-k", "1")
    assert code == 0
    assert out.split()[1] == "finance/reconcile_bank_statement"
    lines = err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("tce: warning: embedding model failed, ranking by terms only:")
    assert "model unavailable" in lines[0] or "500" in lines[0]


def test_the_search_command_works_offline_with_the_network_off(sop: Path) -> None:
    guard = (
        "import socket, sys\n"
        "def refuse(*a, **k):\n"
        "    sys.stderr.write('NETWORK ATTEMPT\\n'); raise OSError('network is off')\n"
        "socket.socket.connect = refuse; socket.getaddrinfo = refuse\n"
        "socket.create_connection = refuse\n"
        "from jupyter_percent_agent.cli import main\n"
        "main()\n"
    )
    cmd = [sys.executable, "-c", guard, "sop", "search", "预订机票和住的地方",
           "--sop", str(sop), "-k", "1", "--json"]
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0:
        cmd = ["unshare", "-rn", *cmd]  # no network interface but loopback, down
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERCENT_AGENT_EMBED")}
    env["HOME"] = str(sop.parent)  # no cache of any download either
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "NETWORK ATTEMPT" not in proc.stderr and "warning" not in proc.stderr
    assert json.loads(proc.stdout)[0]["task_id"] == "travel/book_flight_hotel"
    with sqlite3.connect(sop / INDEX_NAME) as conn:
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 52


def test_the_search_command_imports_neither_litellm_nor_nbformat_nor_jupytext(
        sop: Path) -> None:
    code = "from jupyter_percent_agent.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, "sop", "search", "invoice",
         "--sop", str(sop)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    imported = {line.split("|")[-1].strip().split(".")[0]
                for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "numpy" in imported  # the vector side did run
    assert not imported & {"litellm", "nbformat", "jupytext", "wordllama"}
