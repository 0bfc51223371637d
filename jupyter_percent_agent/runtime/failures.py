"""Why a model call failed, in words a user acts on: the pieces ``models.explain`` is made
of (the exception chain, the connection's low-level cause, a stream cut mid-reply), what is
decided before any call (an ``api_base`` carrying credentials, a refused route) and whether a
failure is worth another attempt. Nothing here imports litellm: it is passed in.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from jupyter_percent_agent import trust
from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.trust import public_url


@dataclass
class Failure:
    """Why one attempt failed, in words a user acts on. ``text`` is safe to record in a
    message file (no key, no ``api_base``); ``detail`` is for the terminal and may name the
    ``api_base``."""

    kind: str
    text: str
    detail: str


def chain_of(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    while exc is not None and exc not in out and len(out) < 16:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def connection_cause(chain: list[BaseException]) -> str | None:
    """The low-level reason a connection failed, or None when it is no connection failure."""
    import socket
    import ssl

    for e in chain:  # the most specific cause, wherever it is in the chain
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return "host not found"
        if isinstance(e, ssl.SSLError):
            return "TLS error: " + " ".join(str(e).split())[:120]
        if isinstance(e, ConnectionResetError):
            return "connection reset"
    for e in chain:
        if type(e).__name__ == "ClientConnectorDNSError":
            return "host not found"
        if isinstance(e, OSError) and e.errno is not None and e.strerror:
            return " ".join(e.strerror.lower().split())
    names = {type(e).__name__ for e in chain}
    if names & {"APIConnectionError", "ConnectError", "ClientConnectorError",
                "ServerDisconnectedError", "RemoteProtocolError", "ConnectionError"}:
        deepest = chain[-1]
        if type(deepest) is ValueError:  # e.g. a URL the HTTP client refuses
            return "connection error: " + " ".join(str(deepest).split())[:160]
        return "connection error"
    return None


# A stream that stopped after it had begun (litellm, aiohttp and httpx names).
MID_STREAM = frozenset({"MidStreamFallbackError", "ClientPayloadError", "TransferEncodingError",
                         "ContentLengthError", "IncompleteRead", "RemoteProtocolError"})


def malformed_stream(chain: list[BaseException]) -> bool:
    """Whether a failure came from a stream chunk that is not JSON (the server's fault), which
    clients report as a broken stream (``MidStreamFallbackError``, ``APIConnectionError``)."""
    import json

    for exc in chain:
        if isinstance(exc, json.JSONDecodeError):
            return True
        words = str(exc).lower()
        if "not json" in words or "jsondecodeerror" in words or "expecting value" in words:
            return True
    return False


def stored_keys() -> list[str]:
    """The user's stored keys, to mask in a failure's words (a call may have sent one)."""
    try:
        return list(trust.load_keys().values())
    except trust.KeysError:
        return []


def credentials_in(api_base: str | None) -> Failure | None:
    """The failure of an ``api_base`` that carries a user name or password, decided before
    any call: HTTP clients disagree on such a URL (aiohttp refuses it beside an API key, and
    its words changed between releases), and what it carries is a secret."""
    from urllib.parse import urlsplit

    if not api_base or "@" not in api_base:
        return None
    try:
        parts = urlsplit(api_base)
        if parts.username is None and parts.password is None:
            return None
    except ValueError:
        return None
    why = ("its api_base carries a user name or password, which is never sent: give the key "
           "as PERCENT_AGENT_API_KEY or tie one to the endpoint (tce trust --endpoint URL "
           "--key-env VAR)")
    return Failure("APIConnectionError",
                   f"cannot reach the model server at the configured api_base ({why})",
                   f"cannot reach the model server at {public_url(api_base)} ({why})")


def retryable(litellm: Any, exc: BaseException) -> bool:
    if isinstance(exc, Refused):
        return False
    if "credentials" in str(exc).lower() or "api_key" in str(exc).lower():
        return False  # a missing key does not come back by retrying
    kinds = tuple(getattr(litellm, n) for n in (
        "Timeout", "RateLimitError", "InternalServerError", "ServiceUnavailableError",
        "APIConnectionError", "BadGatewayError") if hasattr(litellm, n))
    if isinstance(exc, (*kinds, asyncio.TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


class Refused(PercentAgentError):
    """A call decided against before it was made (``failure`` says why)."""

    error_kind = Kind.MODEL

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.text)
        self.failure = failure
        self.reason = failure.detail  # for the terminal: names the endpoint and the key
        if failure.kind == "TrustError":
            self.error_kind = Kind.REFUSED
