"""What the local OpenAI-compatible server answers: a scripted ``Reply`` and the JSON the
OpenAI API sends for it (a chat completion, or the deltas of a streamed one, tool calls
included), with the token counts it reports. The server (``openai_server``) does the HTTP."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_REPLY", "Reply", "completion_body", "split_text", "tool_call_deltas",
           "usage_of"]

DEFAULT_REPLY = "Hello from the local test server."


@dataclass
class Reply:
    """One scripted answer: text, or a fault.

    ``status`` other than 200 answers with an OpenAI-style error body. ``delay`` waits before
    the first byte (longer than the client's timeout = a timeout). ``disconnect_after`` cuts
    the connection after that many content chunks. ``malformed`` sends a chunk that is not
    JSON. ``reasoning`` is streamed as ``reasoning_content`` before the content.
    """

    content: str = DEFAULT_REPLY
    status: int = 200
    error: str = ""
    delay: float = 0.0
    chunk_delay: float = 0.0
    chunk_size: int = 8
    disconnect_after: int | None = None
    malformed: bool = False
    reasoning: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Function calls to answer with (``{"name": ..., "arguments": {...}}``), as a model
    driving tools with JSON function calling does; streamed as OpenAI streams them (the id
    and name first, then the arguments in pieces) when the request asks for a stream."""

    @classmethod
    def http_error(cls, status: int, message: str = "", **kw: Any) -> Reply:
        """An HTTP error (429 rate limit, 500, 503...)."""
        return cls(status=status, error=message or f"injected error {status}", **kw)

    @classmethod
    def slow(cls, seconds: float, content: str = DEFAULT_REPLY) -> Reply:
        """Wait ``seconds`` before answering: a timeout for a client that waits less."""
        return cls(content=content, delay=seconds)

    @classmethod
    def disconnect(cls, content: str = DEFAULT_REPLY, after: int = 1) -> Reply:
        """Stream ``after`` chunks of ``content``, then drop the connection."""
        return cls(content=content, disconnect_after=after)

    @classmethod
    def garbage(cls) -> Reply:
        """A stream whose data is not JSON."""
        return cls(content="", malformed=True)


def split_text(text: str, size: int) -> list[str]:
    """Split text into pieces of about ``size`` characters (a stream of several chunks)."""
    size = max(1, size)
    return [text[i:i + size] for i in range(0, len(text), size)]


def _count_words(body: dict[str, Any]) -> int:
    """The prompt's size in words: every message, the function calls in it, and the tool
    schemas sent along (they are part of what a model reads)."""
    n = len(json.dumps(body["tools"]).split()) if body.get("tools") else 0
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        n += len(str(content or "").split()) + 4
        for call in m.get("tool_calls") or []:
            n += len(json.dumps(call.get("function", {})).split())
    return n


def usage_of(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    """The token counts answered for ``reply`` to the request ``body`` (words, or the
    reply's own counts)."""
    p = reply.prompt_tokens if reply.prompt_tokens is not None else _count_words(body)
    c = (reply.completion_tokens if reply.completion_tokens is not None
         else len(reply.content.split()) + len(json.dumps(reply.tool_calls).split())
         * bool(reply.tool_calls))
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def tool_call_deltas(reply: Reply) -> list[dict[str, Any]]:
    """The ``delta`` objects of a streamed reply's function calls: for each call its index,
    id and name with empty arguments, then its arguments' JSON in ``chunk_size`` pieces."""
    deltas: list[dict[str, Any]] = []
    for index, call in enumerate(reply.tool_calls):
        deltas.append({"tool_calls": [{"index": index, "id": _call_id(), "type": "function",
                                       "function": {"name": call["name"], "arguments": ""}}]})
        for piece in split_text(json.dumps(call.get("arguments", {})), reply.chunk_size * 4):
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    return deltas


def completion_body(reply: Reply, model: str, usage: dict[str, int]) -> dict[str, Any]:
    """A whole (not streamed) chat completion for ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.malformed:
        message = {"role": "assistant", "content": None, "garbage": "{not json"}
    finish = "stop"
    if reply.tool_calls:
        message["content"] = reply.content or None
        message["tool_calls"] = [
            {"id": _call_id(), "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
            for c in reply.tool_calls]
        finish = "tool_calls"
    return {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage}
