"""Red team: an endpoint a file names, against the endpoints the user allowed.

The user allows one endpoint, with the key tied to it, in their config (``tce trust
--endpoint URL --key-env NAME``): a path on a shared host (a gateway that forwards to a
provider with the key). A cloned file names an ``api_base`` that reads as under that path
to a plain comparison of strings, but that the HTTP client sends elsewhere on the host. The
host is the project's local model server, which records the path and headers of every
request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_percent_agent.testing.environment import tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer

TIED = "tied-to-team-a-only"


@pytest.fixture
def gateway(keys, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """A shared host; the user allowed its ``/team-a/v1`` path with the key ``TEAM_A_KEY``."""
    monkeypatch.setenv("TEAM_A_KEY", TIED)
    with OpenAIServer() as server:
        server.default = "hello"
        allowed = server.url.removesuffix("/v1") + "/team-a/v1"
        done = tce("trust", "--endpoint", allowed, "--key-env", "TEAM_A_KEY")
        assert done.exit_code == 0, done.output
        yield server


def chat(folder: Path, api_base: str):
    folder.mkdir(exist_ok=True)
    path = folder / "chat.msg.md"
    props = {"models": ["some-model"], "api_base": api_base}
    path.write_text(f"---\nagents:\n  a: {json.dumps(props)}\n---\n")
    return tce("chat", str(path), "-m", "hi")


def sent_the_key(server: OpenAIServer) -> list[str]:
    return [r.path for r in server.requests if TIED in json.dumps(dict(r.headers))]


@pytest.mark.parametrize(
    "tail",
    [
        "/team-a/v1/../../team-b/v1",
        "/team-a/v1/%2e%2e/%2E%2E/x/v1",
        "/team-a/v1/./../../x/v1",
        "/team-a/./v1/../../x/v1",
    ],
)
def test_dot_segments_do_not_carry_an_allowed_endpoints_key_elsewhere_on_its_host(
    tmp_path: Path, gateway: OpenAIServer, tail: str
) -> None:
    result = chat(tmp_path / "clone", gateway.url.removesuffix("/v1") + tail)
    assert [p for p in sent_the_key(gateway) if not p.startswith("/team-a/v1/")] == []
    assert result.exit_code == 6, result.output


def test_the_allowed_endpoint_and_paths_below_it_get_its_key(
    tmp_path: Path, gateway: OpenAIServer
) -> None:
    result = chat(tmp_path / "clone", gateway.url.removesuffix("/v1") + "/team-a/v1")
    assert result.exit_code == 0, result.output
    assert sent_the_key(gateway) == ["/team-a/v1/chat/completions"]


def test_tce_models_never_follows_a_redirect_with_the_users_key(
    keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's endpoint answers /models with a redirect to another host: the key stays
    home (as a model call's: runtime.direct follows no redirect either)."""
    import http.server
    import threading

    with OpenAIServer() as elsewhere:

        class Redirect(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(302)
                self.send_header("Location", elsewhere.url + "/models")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        home = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=home.serve_forever, daemon=True).start()
        try:
            monkeypatch.setenv("PERCENT_AGENT_API_BASE", f"http://127.0.0.1:{home.server_port}/v1")
            result = tce("models", "list")
        finally:
            home.shutdown()
            home.server_close()
        assert elsewhere.received(keys) == []
        assert result.exit_code != 0
        assert "cannot list the models" in result.output
