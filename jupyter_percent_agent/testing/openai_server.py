"""A local OpenAI-compatible model server for tests and demos.

``OpenAIServer`` listens on 127.0.0.1 (stdlib ``http.server`` in a thread) and implements
``POST /v1/chat/completions`` (streamed as server-sent events or not), ``POST /v1/embeddings``
and ``GET /v1/models``.
Replies are scripted: a queue (``server.script("a", Reply.http_error(429), ...)``), or a
function of the request body (``server.responder = fn``); with neither, a canned reply.
Faults are replies too: an HTTP status, a delay before the first byte, a connection cut
mid-stream, malformed SSE data. Every request body is recorded in ``server.requests`` so
tests can assert on the history that was actually sent.

Embeddings are computed by ``server.embedder`` (texts to vectors; by default
:func:`hashed_embedding`, a deterministic bag of hashed words and character bigrams, so
texts that share words are near), or fail as ``server.embedding_reply`` says (a ``Reply``
with an error status or a delay).

Run it for a demo, and point ``tce chat`` at it with ``PERCENT_AGENT_API_BASE`` (or an
agent's ``api_base``); any model name will do::

    python -m jupyter_percent_agent.testing.openai_server --port 8765 --reply "Hello!" &
    PERCENT_AGENT_API_BASE=http://127.0.0.1:8765/v1 PERCENT_AGENT_MODEL=test tce chat demo -m hi
"""

from __future__ import annotations

import argparse
import base64
import collections
import hashlib
import json
import math
import struct
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jupyter_percent_agent.testing.openai_replies import (
    DEFAULT_REPLY,
    Reply,
    completion_body,
    split_text,
    tool_call_deltas,
    usage_of,
)

__all__ = ["Headers", "OpenAIServer", "RecordedRequest", "Reply", "hashed_embedding"]

class Headers(dict):
    """Request headers as received, looked up by name in any case (HTTP field names are
    case-insensitive: the OpenAI SDK sends ``authorization``, curl ``Authorization``)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self._folded = {k.lower(): k for k in self}

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(self._folded.get(name.lower(), name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._folded

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[name] if name in self else default


@dataclass
class RecordedRequest:
    """What the server received: method, path, headers (any case) and the parsed JSON body."""

    method: str
    path: str
    headers: Headers
    body: dict[str, Any]
    usage: dict[str, int] | None = None
    """The token counts the server answered with (a chat completion's ``usage``)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))


Responder = Callable[[dict[str, Any]], "Reply | str"]
Embedder = Callable[[list[str]], list[list[float]]]

EMBEDDING_DIM = 64


def hashed_embedding(texts: list[str], dim: int = EMBEDDING_DIM) -> list[list[float]]:
    """Unit vectors of hashed words and character bigrams: deterministic, and texts that
    share words or characters are near (a stand-in model for the test server)."""
    out = []
    for text in texts:
        vec = [0.0] * dim
        lowered = text.lower()
        feats = lowered.split() + [lowered[i:i + 2] for i in range(len(lowered) - 1)]
        for feat in feats:
            h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
            vec[h % dim] += 1.0 if h >> 63 else -1.0
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        out.append([x / norm for x in vec])
    return out


class OpenAIServer:
    """The server; use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(self, port: int = 0, *, default: Reply | str = DEFAULT_REPLY,
                 models: list[str] | None = None) -> None:
        self._port = port
        self.default = default
        self.models = models or ["test-model"]
        self.responder: Responder | None = None
        self.embedder: Embedder = hashed_embedding
        self.embedding_reply: Reply | None = None
        self.requests: list[RecordedRequest] = []
        self._queue: collections.deque[Reply | str] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        handler = type("Handler", (_Handler,), {"server_state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The api_base to give a client: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------

    def script(self, *replies: Reply | str) -> OpenAIServer:
        """Queue replies, answered in order; after them the responder or the default."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def received(self, secrets: Mapping[str, str]) -> list[str]:
        """The names of ``secrets`` (name -> value) whose value reached this server, in any
        header or body: what a test of a hostile file expects to be empty."""
        seen: list[str] = []
        for request in list(self.requests):
            blob = json.dumps(dict(request.headers)) + json.dumps(request.body)
            seen += [name for name, value in secrets.items() if value in blob]
        return seen

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.responder = None
            self.embedder = hashed_embedding
            self.embedding_reply = None

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        return len(self._queue)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    @property
    def last_messages(self) -> list[dict[str, Any]]:
        """The messages of the last chat request."""
        return self.chat_requests[-1].messages

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            item = self._queue.popleft() if self._queue else None
        if item is None:
            item = self.responder(body) if self.responder else self.default
        return Reply(content=item) if isinstance(item, str) else item

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)


class _Handler(BaseHTTPRequestHandler):
    server_state: OpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def handle(self) -> None:
        # A client that gives up (timeout, cancelled stream) resets the connection: not an error.
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError, TimeoutError):
            pass

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        state = self.server_state
        state._record(RecordedRequest("GET", self.path, Headers(self.headers.items()), {}))
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "local"}
                for m in state.models]})
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        state = self.server_state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "bad_request"}})
            return
        recorded = RecordedRequest("POST", self.path, Headers(self.headers.items()), body)
        state._record(recorded)
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(body)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})
            return
        reply = state._next_reply(body)
        if reply.delay and state._stopping.wait(reply.delay):
            return
        if reply.status != 200:
            kind = "rate_limit_error" if reply.status == 429 else "server_error"
            self._send_json(reply.status, {"error": {"message": reply.error, "type": kind,
                                                     "code": str(reply.status)}},
                            {"Retry-After": "0", **reply.headers})
            return
        model = body.get("model", state.models[0])
        usage = recorded.usage = usage_of(body, reply)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(reply, model, usage if include_usage else None)
        else:
            self._send_json(200, completion_body(reply, model, usage), reply.headers)

    def _embeddings(self, body: dict[str, Any]) -> None:
        state = self.server_state
        reply = state.embedding_reply
        if reply is not None and reply.delay and state._stopping.wait(reply.delay):
            return
        if reply is not None and reply.status != 200:
            self._send_json(reply.status, {"error": {"message": reply.error,
                                                     "type": "server_error",
                                                     "code": str(reply.status)}})
            return
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self._send_json(400, {"error": {"message": "input must be a string or a list of "
                                            "strings", "type": "invalid_request_error"}})
            return
        vectors = state.embedder(texts)
        as_base64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i,
                 "embedding": (base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
                               if as_base64 else v)}
                for i, v in enumerate(vectors)]
        tokens = sum(len(t.split()) for t in texts)
        self._send_json(200, {"object": "list", "data": data,
                              "model": body.get("model", state.models[0]),
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    # -- streaming with chunked transfer encoding, so a cut connection is detectable --

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, payload: Any) -> None:
        self._write_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _stream(self, reply: Reply, model: str, usage: dict[str, int] | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"id": cid, "object": "chat.completion.chunk", "created": created,
                    "model": model, "choices": [{"index": 0, "delta": delta,
                                                 "finish_reason": finish}]}

        try:
            if reply.malformed:
                self._write_chunk(b"data: {this is not json\n\n")
                self._write_chunk(b"data: [DONE]\n\n")
                self._write_chunk(b"")
                return
            self._event(chunk({"role": "assistant", "content": ""}))
            pieces = split_text(reply.reasoning, reply.chunk_size)
            for piece in pieces:
                self._event(chunk({"reasoning_content": piece}))
            sent = 0
            for piece in split_text(reply.content, reply.chunk_size):
                if reply.disconnect_after is not None and sent >= reply.disconnect_after:
                    self.close_connection = True
                    self.connection.shutdown(2)  # cut without the terminating chunk
                    return
                if reply.chunk_delay and self.server_state._stopping.wait(reply.chunk_delay):
                    return
                self._event(chunk({"content": piece}))
                sent += 1
            if reply.disconnect_after is not None:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            for delta in tool_call_deltas(reply):
                self._event(chunk(delta))
            self._event(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
            if usage is not None:
                self._event({"id": cid, "object": "chat.completion.chunk", "created": created,
                             "model": model, "choices": [], "usage": usage})
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


def main(argv: list[str] | None = None) -> None:
    """Serve a canned reply until Ctrl-C."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--reply", default=DEFAULT_REPLY, help="the text every request gets")
    parser.add_argument("--echo", action="store_true", help="answer with the last user message")
    args = parser.parse_args(argv)
    server = OpenAIServer(args.port, default=args.reply)
    if args.echo:
        server.responder = lambda body: str((body.get("messages") or [{}])[-1].get("content"))
    server.start()
    print(f"OpenAI-compatible server on {server.url} (Ctrl-C to stop); try:\n"
          f"  PERCENT_AGENT_API_BASE={server.url} PERCENT_AGENT_MODEL=test tce chat demo -m hi",
          flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
