"""Model calls through litellm's real client against the local server (never the internet)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from jupyter_percent_agent.litellm_setup import one_line
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.events import Delta, Event, Reasoning, Retry
from jupyter_percent_agent.runtime.models import CallSpec, complete, spec_for
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply

MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]


def _spec(server: OpenAIServer, models=("test-model",), **kw) -> CallSpec:
    kw.setdefault("timeout", 5)
    return CallSpec(models=list(models), messages=MSGS, api_base=server.url, backoff=0, **kw)


def _as_pair(event: Event) -> tuple[str, str]:
    """A typed event as the (kind, text) pair these tests were written against."""
    match event:
        case Delta(text=text):
            return "content", text
        case Reasoning(text=text):
            return "reasoning", text
        case Retry(reason=reason):
            return "retry", reason
    raise AssertionError(f"unexpected event {event!r}")


def _run(spec: CallSpec, events: list | None = None):
    if events is None:
        return asyncio.run(complete(spec))
    return asyncio.run(complete(spec, lambda e: events.append(_as_pair(e))))


def test_streams_and_measures(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply("streamed back to you", chunk_size=4))
    events: list = []
    res = _run(_spec(openai_server), events)
    assert res.error is None
    assert res.text == "streamed back to you"
    assert "".join(t for k, t in events if k == "content") == res.text
    assert len([e for e in events if e[0] == "content"]) > 2
    assert res.model == "test-model"
    assert res.tokens_out == 4 and res.tokens_in > 0
    body = openai_server.chat_requests[-1].body
    assert body["messages"] == MSGS
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_no_cost_is_made_up_for_a_server_of_the_users_own(openai_server: OpenAIServer) -> None:
    """litellm prices by model name: a local server answering as "gpt-4o-mini" charges
    nothing of the sort, so no cost is recorded unless the server reports one."""
    res = _run(_spec(openai_server, models=["gpt-4o-mini"]))
    assert res.error is None and res.tokens_out and res.cost is None


def test_a_cost_the_server_reports_is_recorded(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply("priced", headers={"x-litellm-response-cost": "0.00042"}))
    res = _run(_spec(openai_server, models=["gpt-4o-mini"]))
    assert res.error is None and res.cost == 0.00042


def test_cost_from_the_local_cost_map() -> None:
    """For the provider's own endpoint, litellm's local cost map prices the call."""
    from jupyter_percent_agent.litellm_setup import import_litellm
    from jupyter_percent_agent.runtime.models import list_price

    assert (list_price(import_litellm(), "gpt-4o-mini", 1000, 1000) or 0) > 0


def test_agent_settings_reach_the_server(openai_server: OpenAIServer) -> None:
    agent = Agent(name="a", models=["m1"], max_output_tokens=77, temperature=0.3)
    spec = spec_for(agent, MSGS, env={"PERCENT_AGENT_API_BASE": openai_server.url})
    assert _run(spec).error is None
    body = openai_server.chat_requests[-1].body
    assert body["max_tokens"] == 77 and body["temperature"] == 0.3
    no_temp = Agent(name="r", models=["m1"], use_temperature=False, temperature=0.3)
    _run(spec_for(no_temp, MSGS, env={"PERCENT_AGENT_API_BASE": openai_server.url}))
    assert "temperature" not in openai_server.chat_requests[-1].body


@pytest.mark.parametrize("fault", [Reply.http_error(429), Reply.http_error(500),
                                   Reply.http_error(503),
                                   Reply.disconnect("a long answer cut short", after=1)])
def test_retries_then_succeeds(openai_server: OpenAIServer, fault: Reply) -> None:
    openai_server.script(fault, "second time lucky")
    events: list = []
    res = _run(_spec(openai_server), events)
    assert res.error is None
    assert res.text == "second time lucky"
    assert len(openai_server.chat_requests) == 2
    assert any(k == "retry" for k, _ in events)


def test_timeout_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.slow(3.0), "fast now")
    res = _run(_spec(openai_server, timeout=0.5))
    assert res.text == "fast now"
    assert "did not answer within 0.5 s" in res.attempts[0]


def test_falls_over_to_the_next_model(openai_server: OpenAIServer) -> None:
    openai_server.responder = lambda body: (Reply.http_error(500) if body["model"] == "bad"
                                            else "from " + body["model"])
    res = _run(_spec(openai_server, models=["bad", "good"], retries=2))
    assert res.text == "from good"
    assert res.model == "good"
    assert [r.body["model"] for r in openai_server.chat_requests] == ["bad"] * 3 + ["good"]


def test_every_model_failing_is_an_error_not_an_exception(openai_server: OpenAIServer) -> None:
    openai_server.responder = lambda body: Reply.http_error(429, "slow down")
    res = _run(_spec(openai_server, models=["a", "b"], retries=1))
    assert res.text == ""
    assert res.error is not None and "slow down" in res.error
    assert "\n" not in res.error
    assert len(openai_server.chat_requests) == 4


def test_malformed_stream_is_an_error(openai_server: OpenAIServer) -> None:
    openai_server.responder = lambda body: Reply.garbage()
    res = _run(_spec(openai_server, retries=0))
    assert res.error is not None and res.text == ""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_names_the_api_base_and_the_cause() -> None:
    port = _closed_port()
    spec = CallSpec(models=["m"], messages=MSGS, api_base=f"http://127.0.0.1:{port}/v1",
                    retries=0, backoff=0, timeout=2)
    res = _run(spec)
    assert res.error_type == "APIConnectionError"
    assert res.error_detail == (f"cannot reach the model server at http://127.0.0.1:{port}/v1 "
                                "(connection refused)")
    # what is recorded in the file: the cause, not the api_base
    assert res.error == "cannot reach the model server at the configured api_base " \
                        "(connection refused)"
    assert res.attempts == [f"m: {res.error}"]


def test_stopped_local_server_is_connection_refused() -> None:
    server = OpenAIServer().start()
    url = server.url
    server.stop()
    res = _run(CallSpec(models=["test-model"], messages=MSGS, api_base=url, retries=1,
                        backoff=0, timeout=2))
    assert res.error_detail == f"cannot reach the model server at {url} (connection refused)"
    assert len(res.attempts) == 2  # a refused connection is retried


def test_unreachable_server_message_leaves_out_credentials_in_the_api_base() -> None:
    port = _closed_port()
    spec = CallSpec(models=["m"], messages=MSGS, api_key="sk-secret-key",
                    api_base=f"http://user:hunter2@127.0.0.1:{port}/v1?key=qs-secret",
                    retries=0, backoff=0, timeout=2)
    res = _run(spec)
    assert res.error_detail.startswith(
        f"cannot reach the model server at http://127.0.0.1:{port}/v1 (")
    for text in (res.error, res.error_detail, *res.attempts):
        assert "hunter2" not in text and "qs-secret" not in text and "sk-secret" not in text
        assert "\n" not in text


def test_credentials_in_the_api_base_are_refused_before_any_request(
        openai_server: OpenAIServer) -> None:
    # aiohttp refuses such a URL beside an API key in words that change between releases:
    # the message is ours, the same on each, and nothing is sent
    base = openai_server.url.replace("http://", "http://user:hunter2@")
    res = _run(CallSpec(models=["m"], messages=MSGS, api_key="sk-secret-key", api_base=base,
                        retries=2, backoff=0, timeout=2))
    assert res.error_detail.startswith(
        f"cannot reach the model server at {openai_server.url} (its api_base carries a user "
        "name or password, which is never sent")
    assert res.error.startswith("cannot reach the model server at the configured api_base (")
    assert openai_server.requests == [] and res.attempts == []


def test_no_model_server_named_by_provider_and_model_without_api_base(
        monkeypatch: pytest.MonkeyPatch) -> None:
    port = _closed_port()
    monkeypatch.setenv("OLLAMA_API_BASE", f"http://127.0.0.1:{port}")
    res = _run(CallSpec(models=["ollama/llama3.1"], messages=MSGS, retries=0, timeout=2))
    assert res.error_detail == res.error == (
        "cannot reach the ollama model server for ollama/llama3.1 (connection refused)")


def test_missing_key_says_which_variables_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    spec = CallSpec(models=["gpt-4o-mini"], messages=MSGS, retries=3, backoff=0, timeout=2)
    res = _run(spec)
    assert res.error == ("no API key found for gpt-4o-mini (openai): run tce keys set openai "
                         "or set OPENAI_API_KEY")
    assert res.error_type == "AuthenticationError"
    assert len(res.attempts) == 1  # a missing key is not retried
    res = _run(CallSpec(models=["anthropic/claude-3-5-sonnet-20240620"], messages=MSGS,
                        retries=0, timeout=2))
    assert res.error == ("no API key found for anthropic/claude-3-5-sonnet-20240620: run tce keys "
                         "set anthropic or set ANTHROPIC_API_KEY")


def test_one_line_removes_repeated_class_names() -> None:
    class InternalServerError(Exception):
        pass

    assert one_line(InternalServerError("litellm.InternalServerError: InternalServerError: x\ny")
                    ) == "InternalServerError: x y"


def test_reasoning_content_is_streamed_apart(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply("the answer", reasoning="let me think"))
    events: list = []
    res = _run(_spec(openai_server), events)
    assert res.text == "the answer"
    assert res.reasoning == "let me think"
    assert "".join(t for k, t in events if k == "reasoning") == "let me think"


def test_rejected_key_says_the_server_refused_it(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.http_error(401, "invalid key"))
    res = _run(_spec(openai_server, retries=0, api_key="sk-wrong-secret"))
    assert res.error_type == "AuthenticationError"
    assert res.error_detail == (f"the model server at {openai_server.url} refused the API key "
                                "(HTTP 401): set PERCENT_AGENT_API_KEY")
    assert "sk-wrong-secret" not in res.error + res.error_detail + "".join(res.attempts)
