"""Calls straight to an OpenAI-compatible endpoint (``runtime.direct``) against litellm's:
the same conversations and faults sent through both paths to the local server, comparing what
the server received, the usage, the cost and the failures recorded."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest

from jupyter_percent_agent.runtime import routing
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.events import Delta, Event, Reasoning, Retry
from jupyter_percent_agent.runtime.models import CallResult, CallSpec, complete, spec_for
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply

MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"}, {"role": "user", "content": "and now? é 中文"}]


def _both(server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, spec: CallSpec,
          script: list[Reply | str]) -> list[tuple[CallResult, list[Any], list[Any]]]:
    """``spec`` made through litellm, then straight: (result, events, requests) of each."""
    out = []
    for direct in ("0", "1"):
        monkeypatch.setenv("PERCENT_AGENT_DIRECT", direct)
        server.reset()
        server.script(*script)
        events: list[Event] = []
        res = asyncio.run(complete(spec, events.append))
        requests = [(r.path, r.body, r.headers.get("authorization"))
                    for r in server.chat_requests]
        out.append((res, events, requests))
    return out


def _same(pair: list[tuple[CallResult, list[Any], list[Any]]]) -> None:
    (lite, lite_events, lite_requests), (ours, our_events, our_requests) = pair
    assert our_requests == lite_requests
    mine, theirs = ours.to_json(), lite.to_json()
    for varying in ("time", "duration"):
        mine.pop(varying), theirs.pop(varying)
    assert mine == theirs

    def shown(events: list[Event]) -> list[tuple[str, str]]:
        return [(type(e).__name__, getattr(e, "text", None) or getattr(e, "reason", ""))
                for e in events if isinstance(e, Delta | Reasoning | Retry)]

    assert "".join(t for k, t in shown(our_events) if k == "Delta") == \
        "".join(t for k, t in shown(lite_events) if k == "Delta")
    assert [e for e in shown(our_events) if e[0] == "Retry"] == \
        [e for e in shown(lite_events) if e[0] == "Retry"]


def _spec(server: OpenAIServer, **kw: Any) -> CallSpec:
    kw.setdefault("models", ["test-model"])
    kw.setdefault("timeout", 5)
    kw.setdefault("retries", 0)
    return CallSpec(messages=MSGS, api_base=server.url, backoff=0, **kw)


@pytest.mark.parametrize("params", [{}, {"max_tokens": 77, "temperature": 0.3},
                                    {"reasoning_effort": "medium"}])
def test_the_same_request_usage_and_cost_both_ways(openai_server: OpenAIServer,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   params: dict[str, Any]) -> None:
    pair = _both(openai_server, monkeypatch, _spec(openai_server, params=params, api_key="k"),
                 [Reply("streamed back to you, in pieces", chunk_size=5,
                        headers={"x-litellm-response-cost": "0.00042"})])
    _same(pair)
    res = pair[1][0]
    assert res.text == "streamed back to you, in pieces" and res.cost == 0.00042
    assert res.tokens_in and res.tokens_out == 6


def test_reasoning_and_reported_usage_both_ways(openai_server: OpenAIServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _same(_both(openai_server, monkeypatch, _spec(openai_server),
                [Reply("the answer", reasoning="let me think", prompt_tokens=1234,
                       completion_tokens=56)]))


def test_an_openai_prefixed_name_both_ways(openai_server: OpenAIServer,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pair = _both(openai_server, monkeypatch, _spec(openai_server, models=["openai/my-model"]),
                 ["fine"])
    _same(pair)
    assert pair[1][2][0][1]["model"] == "my-model"


FAULTS = {
    "429": Reply.http_error(429, "slow down"), "500": Reply.http_error(500),
    "502": Reply.http_error(502), "503": Reply.http_error(503),
    "504": Reply.http_error(504), "400": Reply.http_error(400, "bad request here"),
    "401": Reply.http_error(401, "invalid key"), "403": Reply.http_error(403, "no"),
    "404": Reply.http_error(404, "no such model"), "slow": Reply.slow(2.0),
    "cut": Reply.disconnect("a long answer cut short", after=1), "garbage": Reply.garbage(),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_the_same_failure_both_ways(openai_server: OpenAIServer,
                                    monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    pair = _both(openai_server, monkeypatch, _spec(openai_server, timeout=1),
                 [FAULTS[fault]])
    _same(pair)
    assert pair[1][0].error is not None


def test_retries_and_fallback_both_ways(openai_server: OpenAIServer,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(openai_server, models=["bad", "good"], retries=1, api_key="k")
    pair = _both(openai_server, monkeypatch, spec,
                 [Reply.http_error(500), Reply.disconnect("half of it", after=1),
                  Reply.http_error(429, "later"), "from good"])
    _same(pair)
    assert pair[1][0].text == "from good" and pair[1][0].model == "good"
    assert [r[1]["model"] for r in pair[1][2]] == ["bad", "bad", "good", "good"]


def test_an_unreachable_server_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    server = OpenAIServer().start()
    server.stop()
    pair = _both(server, monkeypatch, CallSpec(models=["m"], messages=MSGS,
                                               api_base=server.url, retries=1, backoff=0,
                                               timeout=2), [])
    _same(pair)
    assert pair[1][0].error_detail == \
        f"cannot reach the model server at {server.url} (connection refused)"


def test_the_key_the_trust_rules_chose_both_ways(openai_server: OpenAIServer, keys,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The route is decided once (``trust.route_agent`` through ``spec_for``): the user's
    endpoint key goes to the user's endpoint, a file's allowed endpoint gets the placeholder,
    and no provider's key goes anywhere, on either path."""
    env = {**keys, "PERCENT_AGENT_API_BASE": openai_server.url}
    mine = spec_for(Agent(name="a", models=["test-model"], source="environment"), MSGS, env=env)
    _same(_both(openai_server, monkeypatch, mine, ["hello"]))
    assert openai_server.chat_requests[-1].headers["authorization"] == \
        f"Bearer {keys['PERCENT_AGENT_API_KEY']}"
    import dataclasses

    from jupyter_percent_agent import trust
    from jupyter_percent_agent.trust.config import Endpoint

    monkeypatch.setenv("GPU_BOX_KEY", "sk-tied-to-this-host")
    config = trust.load_config()
    trust.save_config(dataclasses.replace(config, endpoints=(
        Endpoint(openai_server.url, "GPU_BOX_KEY"),)))
    files = spec_for(Agent(name="f", models=["test-model"], api_base=openai_server.url,
                           source="file"), MSGS,
                     env={**keys, "GPU_BOX_KEY": "sk-tied-to-this-host"})
    _same(_both(openai_server, monkeypatch, files, ["hello"]))
    assert openai_server.chat_requests[-1].headers["authorization"] == \
        "Bearer sk-tied-to-this-host"
    assert openai_server.received(
        {k: v for k, v in keys.items() if k != "PERCENT_AGENT_API_KEY"}) == []


@pytest.mark.parametrize("model", ["test-model", "llama3.1", "qwen2.5:7b", "mistral-nemo",
                                   "openai/anything", "gpt-4o-mini", "deepseek-chat",
                                   "claude-sonnet-4-5", "ollama/llama3.1",
                                   "anthropic/claude-3-5-sonnet-20240620", "gemini-2.0-flash"])
def test_only_what_litellm_routes_as_openai_goes_straight(model: str) -> None:
    from jupyter_percent_agent.litellm_setup import import_litellm

    wire = routing.openai_compatible(model, "http://127.0.0.1:9/v1")
    if wire is not None:  # litellm knows no provider for it, or it says openai/ itself
        assert routing.provider_of(import_litellm(), model) in (None, "openai")
        assert model in (wire, f"openai/{wire}")
    assert routing.openai_compatible(model, None) is None  # no api_base: litellm's routing


def test_a_call_straight_to_the_endpoint_never_imports_litellm(local_model) -> None:
    code = ("import asyncio, sys\n"
            "from jupyter_percent_agent.runtime.agents import environment_agent\n"
            "from jupyter_percent_agent.runtime.models import complete, prewarm, spec_for\n"
            "prewarm()\n"
            "res = asyncio.run(complete(spec_for(environment_agent(), "
            "[{'role': 'user', 'content': 'hi'}])))\n"
            "print(json.dumps([res.text, res.error, 'litellm' in sys.modules]))\n")
    local_model.script("straight back")
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["straight back", None, False]


def test_direct_off_sends_through_litellm(local_model,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERCENT_AGENT_DIRECT", "0")
    assert routing.openai_compatible("test-model", local_model.url) is None


def test_a_redirect_is_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The route (and the key with it) was decided for this api_base: a server that
    redirects elsewhere gets an error, and the other host gets nothing."""
    import http.server
    import threading

    with OpenAIServer() as elsewhere:
        class Redirect(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.send_response(307)
                self.send_header("Location", elsewhere.url + "/chat/completions")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            spec = CallSpec(models=["test-model"], messages=MSGS, api_key="sk-for-this-host",
                            api_base=f"http://127.0.0.1:{httpd.server_port}/v1", retries=0,
                            timeout=5)
            res = asyncio.run(complete(spec))
        finally:
            httpd.shutdown()
        assert res.error is not None and res.text == ""
        assert elsewhere.requests == []
