"""The local OpenAI-compatible server, spoken to with the standard library's HTTP client."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
import urllib.request

import pytest

from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply


def _post(server: OpenAIServer, body: dict) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    try:
        return resp.status, resp.read()
    finally:
        conn.close()


def _events(raw: bytes) -> list:
    out = []
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            data = line[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


MSGS = [{"role": "user", "content": "hello there"}]


def test_non_stream_reply_and_record(openai_server: OpenAIServer) -> None:
    openai_server.script("first answer")
    status, raw = _post(openai_server, {"model": "m", "messages": MSGS})
    assert status == 200
    body = json.loads(raw)
    assert body["choices"][0]["message"]["content"] == "first answer"
    assert body["usage"]["completion_tokens"] == 2
    assert openai_server.last_messages == MSGS
    assert openai_server.chat_requests[0].body["model"] == "m"


def test_recorded_headers_are_found_by_name_in_any_case(openai_server: OpenAIServer) -> None:
    # HTTP field names are case-insensitive: the OpenAI SDK 3.x sends "authorization"
    conn = http.client.HTTPConnection("127.0.0.1", openai_server.port, timeout=5)
    conn.request("POST", "/v1/chat/completions", json.dumps({"messages": MSGS}),
                 {"content-type": "application/json", "authorization": "Bearer sk-x"})
    conn.getresponse().read()
    conn.close()
    headers = openai_server.requests[-1].headers
    assert headers["Authorization"] == headers.get("AUTHORIZATION") == "Bearer sk-x"
    assert "Content-Type" in headers and headers.get("X-Missing") is None
    assert json.loads(json.dumps(headers))["authorization"] == "Bearer sk-x"


def test_stream_chunks_and_usage(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply("a fairly long streamed answer", chunk_size=5))
    status, raw = _post(openai_server, {"model": "m", "messages": MSGS, "stream": True,
                                        "stream_options": {"include_usage": True}})
    assert status == 200
    events = _events(raw)
    assert events[-1] == "[DONE]"
    text = "".join(e["choices"][0]["delta"].get("content") or ""
                   for e in events[:-1] if e["choices"])
    assert text == "a fairly long streamed answer"
    assert len([e for e in events[:-1] if e["choices"]]) > 3
    assert events[-2]["usage"]["completion_tokens"] == 5


def test_stream_without_usage_option_has_no_usage(openai_server: OpenAIServer) -> None:
    _, raw = _post(openai_server, {"model": "m", "messages": MSGS, "stream": True})
    assert not any(isinstance(e, dict) and "usage" in e for e in _events(raw))


def test_queue_then_responder_then_default(openai_server: OpenAIServer) -> None:
    openai_server.script("one")
    openai_server.responder = lambda body: "model " + body["model"]
    assert json.loads(_post(openai_server, {"model": "x", "messages": MSGS})[1])[
        "choices"][0]["message"]["content"] == "one"
    assert json.loads(_post(openai_server, {"model": "x", "messages": MSGS})[1])[
        "choices"][0]["message"]["content"] == "model x"


@pytest.mark.parametrize("status", [429, 500, 503])
def test_http_errors(openai_server: OpenAIServer, status: int) -> None:
    openai_server.script(Reply.http_error(status, "boom"))
    got, raw = _post(openai_server, {"model": "m", "messages": MSGS})
    assert got == status
    assert json.loads(raw)["error"]["message"] == "boom"


def test_disconnect_mid_stream(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.disconnect("abcdefghijklmnopqrstuvwxyz", after=1))
    with pytest.raises(http.client.IncompleteRead):
        _post(openai_server, {"model": "m", "messages": MSGS, "stream": True})


def test_malformed_stream(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.garbage())
    _, raw = _post(openai_server, {"model": "m", "messages": MSGS, "stream": True})
    with pytest.raises(json.JSONDecodeError):
        _events(raw)


def test_delay_outlasts_a_short_client_timeout(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply.slow(2.0))
    conn = http.client.HTTPConnection("127.0.0.1", openai_server.port, timeout=0.3)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": MSGS}))
    with pytest.raises(TimeoutError):
        conn.getresponse()
    conn.close()


def test_models_endpoint() -> None:
    with OpenAIServer(models=["a", "b"]) as server:
        with urllib.request.urlopen(server.url + "/models", timeout=5) as resp:
            ids = [m["id"] for m in json.load(resp)["data"]]
    assert ids == ["a", "b"]


def test_runnable_as_module(tmp_path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "jupyter_percent_agent.testing.openai_server",
                             "--port", str(port), "--reply", "canned!"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert "127.0.0.1" in proc.stdout.readline()
        body = json.dumps({"model": "m", "messages": MSGS}).encode()
        for _ in range(50):
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                             body, {"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=5) as resp:
                    answer = json.load(resp)
                break
            except ConnectionError:
                time.sleep(0.1)
        assert answer["choices"][0]["message"]["content"] == "canned!"
    finally:
        proc.terminate()
        proc.wait(5)


def test_scripted_function_calls_and_the_usage_they_are_counted_with(
        openai_server: OpenAIServer) -> None:
    """A model that drives tools with JSON function calls (the peer of ATTP code mode in
    benchmarks/bench_mcp.py): its calls come back as tool_calls, and the tool schemas and
    calls sent count in the prompt."""
    openai_server.script(Reply("", tool_calls=[{"name": "git_log",
                                                "arguments": {"repo_path": "/r"}}]))
    tools = [{"type": "function", "function": {"name": "git_log", "description": "Show the log",
                                               "parameters": {"type": "object"}}}]
    status, raw = _post(openai_server, {"model": "m", "tools": tools,
                                        "messages": [{"role": "user", "content": "log please"}]})
    assert status == 200
    reply = json.loads(raw)
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["function"] == {"name": "git_log", "arguments": '{"repo_path": "/r"}'}
    without_tools = 2 + 4  # "log please" and a message's overhead
    assert reply["usage"]["prompt_tokens"] > without_tools
    assert openai_server.chat_requests[-1].usage == reply["usage"]


def test_scripted_function_calls_stream_as_openai_streams_them(
        openai_server: OpenAIServer) -> None:
    """An agent that streams (fast-agent, most harnesses) gets scripted function calls as
    the OpenAI SDK's own stream reader assembles them: two calls, each whole, after the
    text, and the stream ends for tool calls."""
    import openai

    openai_server.script(Reply("Reading first.", tool_calls=[
        {"name": "read_text_file", "arguments": {"path": "/w/a.txt"}},
        {"name": "write_text_file", "arguments": {"path": "/w/a.txt",
                                                  "content": "a longer text " * 5}}]))
    client = openai.OpenAI(base_url=openai_server.url, api_key="none", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=MSGS, stream=True)
    text, calls, finish = "", {}, None
    for chunk in stream:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for part in delta.tool_calls or []:
            call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += part.id or ""
            call["name"] += (part.function and part.function.name) or ""
            call["arguments"] += (part.function and part.function.arguments) or ""
        finish = chunk.choices[0].finish_reason or finish
    assert text == "Reading first."
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("read_text_file", {"path": "/w/a.txt"}),
        ("write_text_file", {"path": "/w/a.txt", "content": "a longer text " * 5})]
    assert all(c["id"].startswith("call_") for c in calls.values())
    assert finish == "tool_calls"
