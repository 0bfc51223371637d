"""Calls to an OpenAI-compatible endpoint (Ollama, vLLM, a LiteLLM proxy, the test server)
straight over HTTP, without importing litellm.

``import litellm`` costs seconds and a hundred megabytes; for a model litellm would itself
send as ``openai/NAME`` to the ``api_base`` the trust rules chose (``routing.openai_compatible``
says which), this module makes the same request with httpx (already a dependency of litellm,
a tenth of a second to import) and reads the server-sent events back. Everything around the
call stays where it is: where it goes and with which key (``models.call_route``), retries,
fallbacks and failures in words (``models.complete`` and ``models.explain``). The failures
raised here carry the names litellm gives the same failures, so that a file records the same
``[error]`` whichever path made the call (``tests/integration/test_runtime_direct.py`` sends
the same conversations and faults through both).
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError

COST_HEADER = "x-litellm-response-cost"
"""The header a LiteLLM proxy reports a call's cost in."""


class ModelCallError(PercentAgentError):
    """A failure of a call made here; ``models.explain`` words it by its (litellm's) name."""

    error_kind = Kind.MODEL


class Timeout(ModelCallError, TimeoutError):
    """The server did not answer in time (litellm: ``Timeout``)."""


class APIConnectionError(ModelCallError, ConnectionError):
    """The server could not be reached (litellm: ``APIConnectionError``)."""


class MidStreamFallbackError(ModelCallError, ConnectionError):
    """The stream broke off, or stopped making sense, after it had begun (litellm's name)."""


class StatusError(ModelCallError):
    """The server answered with an HTTP error; the class is named as litellm names it."""

    status_code = 0

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(f"OpenAIException - {message}")
        self.status_code = status_code


_STATUS_NAMES = {400: "BadRequestError", 401: "AuthenticationError",
                 403: "PermissionDeniedError", 404: "NotFoundError",
                 422: "UnprocessableEntityError", 429: "RateLimitError",
                 500: "InternalServerError", 502: "BadGatewayError",
                 503: "ServiceUnavailableError"}
_STATUS_CLASSES = {code: type(name, (StatusError,), {}) for code, name in _STATUS_NAMES.items()}


def status_error(status: int, body: bytes) -> Exception:
    """The exception for an HTTP error answer: its ``error.message`` (or its text)."""
    text = body.decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    message = message if isinstance(message, str) and message else text.strip()
    if status in (408, 504):
        return Timeout(f"OpenAIException - {message}")
    cls = _STATUS_CLASSES.get(status) or (_STATUS_CLASSES[500] if status >= 500 else
                                          type("APIError", (StatusError,), {}))
    return cls(message, status)


@dataclass
class Streamed:
    """What one streamed call returned besides its text: the usage the server reported
    (``None`` when it sent none) and the cost it reported (``COST_HEADER``)."""

    text: str = ""
    reasoning: str = ""
    usage: dict[str, Any] | None = None
    cost_header: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = \
    weakref.WeakKeyDictionary()


def _client() -> Any:
    """One HTTP client per event loop (a kernel's loop keeps its connections warm)."""
    import httpx

    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = _clients[loop] = httpx.AsyncClient()
    return client


def prewarm() -> None:
    """Import what a direct call loads (a tenth of a second), before anyone waits on it."""
    import httpx  # noqa: F401


async def stream_chat(api_base: str, api_key: str, body: dict[str, Any], *, timeout: float,
                      on_text: Callable[[str], None],
                      on_reasoning: Callable[[str], None]) -> Streamed:
    """POST ``body`` to ``api_base``'s chat completions with ``stream: true`` and read the
    events back, handing each piece of text and reasoning on as it arrives. Raises the
    exceptions above for a failure."""
    import httpx

    out = Streamed()
    url = api_base.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"}
    try:
        async with _client().stream("POST", url, json=body, headers=headers,
                                    timeout=timeout or None) as response:
            if response.status_code >= 300:  # a redirect is not followed: the route was decided
                raise status_error(response.status_code, await response.aread())
            out.cost_header = response.headers.get(COST_HEADER)
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise MidStreamFallbackError("the stream sent data that is not JSON") \
                        from None
                if not isinstance(chunk, dict):
                    raise MidStreamFallbackError("the stream sent an event that is no object")
                if isinstance(chunk.get("error"), dict):
                    raise status_error(500, json.dumps(chunk).encode())
                if chunk.get("usage"):
                    out.usage = chunk["usage"]
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    reasoning = delta.get("reasoning_content")
                    if reasoning:
                        out.reasoning += reasoning
                        on_reasoning(reasoning)
                    content = delta.get("content")
                    if content:
                        out.text += content
                        on_text(content)
    except httpx.TimeoutException as exc:
        raise Timeout(f"OpenAIException - {type(exc).__name__}") from exc
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise MidStreamFallbackError(" ".join(str(exc).split()) or type(exc).__name__) \
            from exc
    except (httpx.TransportError, httpx.InvalidURL) as exc:
        raise APIConnectionError(" ".join(str(exc).split()) or type(exc).__name__) from exc
    return out
