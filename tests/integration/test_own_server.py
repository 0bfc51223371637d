"""The user's own OpenAI-compatible server, stored with ``tce keys server`` (and JupyterLab's
"Set up a model"): real ``tce`` processes with no PERCENT_AGENT_* variable, as a
desktop-launched JupyterLab has, against the local model server, which records what it is
sent; the key goes to exactly the URL it was stored for."""

from __future__ import annotations

import http.server
import json
import os
import socket
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_percent_agent import trust
from jupyter_percent_agent.testing.environment import run_tce, tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply

SERVER_KEY = "sk-my-server-0123456789"


@pytest.fixture
def desktop_env(no_keys, user_config_dir: Path) -> dict[str, str]:
    """What a process started from the desktop sees: no key, no PERCENT_AGENT_* variable but
    the test's own config folder; no retries, no waiting, no warm helper."""
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


@pytest.fixture
def garbage_server() -> Iterator[str]:
    """A web server that answers every GET with an HTML page: not a model list."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = b"<html><body>It works!</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def run(*args: str, env: dict[str, str], cwd: Path, input: str = "",
        ) -> subprocess.CompletedProcess[str]:
    return run_tce(*args, env=env, cwd=cwd, input=input)


def test_keys_server_then_models_and_chat_reach_it_with_no_environment_variable(
        desktop_env: dict[str, str], tmp_path: Path, user_config_dir: Path) -> None:
    with OpenAIServer(models=["llama3.1:8b", "qwen3"]) as server:
        stored = run("keys", "server", server.url, "--model", "qwen3", env=desktop_env,
                     cwd=tmp_path, input=SERVER_KEY + "\n")
        assert stored.returncode == 0, stored.stderr
        assert f"your server: {server.url} (2 models" in stored.stdout
        listed = run("models", env=desktop_env, cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert f"llama3.1:8b  ({server.url})" in listed.stdout.splitlines()
        assert listed.stdout.splitlines()[-1] == "default: qwen3"
        server.script(Reply("Hello from your own server"))
        chat = run("chat", "first", "-m", "Hello", env=desktop_env, cwd=tmp_path)
        assert chat.returncode == 0, chat.stderr
        assert "Hello from your own server" in chat.stdout
        server.script(Reply("by its openai/ name too"))
        named = run("chat", "first", "--model", "openai/llama3.1:8b", "-m", "again",
                    env=desktop_env, cwd=tmp_path)
        assert "by its openai/ name too" in named.stdout, named.stderr
        shown = run("keys", "list", env=desktop_env, cwd=tmp_path)
    assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {SERVER_KEY}"] * 4
    assert [r.body["model"] for r in server.chat_requests] == ["qwen3", "llama3.1:8b"]
    keys_file = user_config_dir / "keys.json"
    assert json.loads(keys_file.read_text()) == {server.url: SERVER_KEY}
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    assert f"your server: {server.url} (config" in shown.stdout
    assert not any(SERVER_KEY in p.stdout + p.stderr for p in (stored, listed, chat, shown))
    holding = [p for p in tmp_path.rglob("*") if p.is_file() and SERVER_KEY in p.read_text()]
    assert holding == []


def test_the_servers_key_goes_to_no_other_url(
        desktop_env: dict[str, str], tmp_path: Path, trusted) -> None:
    """Two servers: the first's key never reaches the second, whether a trusted file names
    the second, PERCENT_AGENT_API_BASE points at it, or it replaces the first."""
    with OpenAIServer() as first, OpenAIServer() as second:
        assert run("keys", "server", first.url, env=desktop_env, cwd=tmp_path,
                   input=SERVER_KEY).returncode == 0
        trusted(tmp_path)
        (tmp_path / "t.msg.md").write_text(
            f"---\nagents:\n  other:\n    api_base: {second.url}\n    models: [test-model]\n"
            "default_agent: other\n---\n")
        by_file = run("chat", "t", "-m", "hi", env=desktop_env, cwd=tmp_path)
        by_env = run("chat", "u", "--model", "test-model", "-m", "hi", cwd=tmp_path,
                     env={**desktop_env, "PERCENT_AGENT_API_BASE": second.url})
        replaced = run("keys", "server", second.url, env=desktop_env, cwd=tmp_path, input="")
        after = run("chat", "v", "--model", "test-model", "-m", "hi", env=desktop_env,
                    cwd=tmp_path)
    assert [p.returncode for p in (by_file, by_env, replaced, after)] == [0, 0, 0, 0], \
        [p.stderr for p in (by_file, by_env, replaced, after)]
    assert len(second.chat_requests) == 3 and first.chat_requests == []
    assert second.received({"first's key": SERVER_KEY}) == []
    assert {r.headers["authorization"] for r in second.chat_requests} == {
        f"Bearer {trust.NO_KEY}"}
    assert "authorization" not in second.requests[2].headers  # its model list: no key asked
    assert SERVER_KEY not in (trust.keys_path()).read_text()  # replaced: its key forgotten


@pytest.mark.parametrize(("url", "says"), [
    ("ftp://127.0.0.1/v1", "is not an http:// or https:// URL of a server"),
    ("localhost:11434", "is not an http:// or https:// URL of a server"),
    ("http://me:s3cret@127.0.0.1:9/v1", "holds a user name or password"),
    ("http://127.0.0.1:9/v1?key=abc", "holds a query or fragment"),
])
def test_a_bad_server_url_is_one_line_and_nothing_is_stored(
        desktop_env: dict[str, str], user_config_dir: Path, url: str, says: str) -> None:
    r = tce("keys", "server", url, "--no-key")
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1 and says in r.stderr, r.output
    assert "s3cret" not in r.output
    assert list(user_config_dir.iterdir()) == []


def test_a_server_that_is_down_or_answers_garbage_is_one_line_and_nothing_is_stored(
        desktop_env: dict[str, str], user_config_dir: Path, garbage_server: str) -> None:
    down = closed_port_url()
    r = tce("keys", "server", down, input=SERVER_KEY)
    assert r.exit_code == 1 and r.stderr.splitlines() == [
        f"tce: cannot list the models at {down}: cannot connect (Connection refused); "
        "nothing stored"]
    r = tce("keys", "server", garbage_server, "--no-key")
    assert r.exit_code == 1 and r.stderr.splitlines() == [
        f"tce: cannot list the models at {garbage_server}: the answer is not JSON (is this "
        "an OpenAI-compatible API's URL, e.g. .../v1?); nothing stored"]
    assert list(user_config_dir.iterdir()) == []


def test_a_default_model_the_server_does_not_serve_is_refused(
        desktop_env: dict[str, str], user_config_dir: Path, openai_server: OpenAIServer) -> None:
    r = tce("keys", "server", openai_server.url, "--no-key", "--model", "llama3")
    assert r.exit_code == 1 and r.stderr.splitlines() == [
        f"tce: the server at {openai_server.url} serves no model 'llama3' (it serves "
        "test-model); nothing stored"]
    assert list(user_config_dir.iterdir()) == []


def test_models_names_the_stored_server_when_it_is_down(
        desktop_env: dict[str, str], user_config_dir: Path) -> None:
    with OpenAIServer() as server:
        assert tce("keys", "server", server.url, "--no-key").exit_code == 0
    r = tce("models")
    assert r.exit_code == 1 and r.stderr.splitlines() == [
        f"tce: cannot list the models at {server.url} (your server: tce keys server): "
        "cannot connect (Connection refused)"]


def test_keys_server_remove_forgets_the_url_and_its_key(
        desktop_env: dict[str, str], openai_server: OpenAIServer) -> None:
    assert tce("keys", "server", openai_server.url, input=SERVER_KEY).exit_code == 0
    assert tce("keys", "server").stdout.startswith(f"your server: {openai_server.url} (config")
    r = tce("keys", "server", "--remove")
    assert r.exit_code == 0 and trust.load_keys() == {} and trust.load_config().api_base is None
    assert tce("keys", "server").stdout == "no server: run tce keys server URL\n"
    assert tce("keys", "server", "--remove").exit_code == 2


def test_a_key_the_stored_server_refuses_says_how_to_store_it_again(
        desktop_env: dict[str, str], tmp_path: Path, openai_server: OpenAIServer) -> None:
    """Not "set PERCENT_AGENT_API_KEY", which a desktop-launched JupyterLab never sees."""
    assert tce("keys", "server", openai_server.url, input=SERVER_KEY).exit_code == 0
    openai_server.script(Reply.http_error(401, "invalid key"))
    r = tce("chat", str(tmp_path / "c"), "--model", "test-model", "-m", "hi")
    assert r.exit_code == 1
    assert (f"refused the API key (HTTP 401): store its key with tce keys server "
            f"{openai_server.url} (or Agent > Set up a model)") in r.stderr, r.output
    assert SERVER_KEY not in r.output
