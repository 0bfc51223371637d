"""What the user's own server (Ollama, vLLM, a LiteLLM proxy) serves: ``GET {api_base}/models``,
as ``tce models``, ``tce keys server`` and JupyterLab's "Set up a model" ask it.

Standard library only (``urllib``, a real HTTP client, with a timeout), so ``tce models``
imports nothing heavy. The key goes to that server only: a redirect is never followed (the
client would carry the key to wherever it points).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from jupyter_percent_agent.errors import Kind, PercentAgentError

__all__ = ["ServerUnreachable", "connect_server", "served_name", "server_models"]


class ServerUnreachable(PercentAgentError, OSError):
    """The server does not answer, or answers what is not a model list: one line saying
    which (never the key)."""

    error_kind = Kind.MODEL


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: urllib would carry the key to wherever it points."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def server_models(api_base: str, api_key: str | None, timeout: float = 10.0) -> list[str]:
    """The model ids an OpenAI-compatible server reports at ``/models``, in its order.
    ``api_key`` goes to that server only (the caller chose it: ``trust.route_for``).
    :class:`ServerUnreachable` for no answer within ``timeout`` seconds, an HTTP error, or an
    answer that is not an OpenAI model list."""
    request = urllib.request.Request(api_base.rstrip("/") + "/models",
                                     headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=timeout) as response:
            raw = response.read(1 << 22)
    except urllib.error.HTTPError as exc:
        why = ("refused the key" if exc.code in (401, 403) else
               "has no /models there (is this the API's URL, e.g. .../v1?)" if exc.code == 404
               else "redirects elsewhere (give the URL it redirects to)"
               if 300 <= exc.code < 400 else "answered an error")
        raise ServerUnreachable(f"HTTP {exc.code}: the server {why}") from None
    except TimeoutError:
        raise ServerUnreachable(f"no answer within {timeout:g} s") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        text = (f"no answer within {timeout:g} s" if isinstance(reason, TimeoutError)
                else getattr(reason, "strerror", None) or str(reason))
        raise ServerUnreachable(f"cannot connect ({text})") from None
    except (OSError, ValueError) as exc:  # a broken connection, a malformed answer
        raise ServerUnreachable(f"the connection failed ({type(exc).__name__})") from None
    try:
        body = json.loads(raw)
    except ValueError:
        raise ServerUnreachable("the answer is not JSON (is this an OpenAI-compatible API's "
                                "URL, e.g. .../v1?)") from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ServerUnreachable("the answer is not an OpenAI model list (no \"data\" list)")
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]


def served_name(model: str) -> str:
    """The id a server knows ``model`` by: the name without its ``openai/`` prefix (both
    spellings call the user's server, ``routing.openai_compatible``)."""
    return model.strip().removeprefix("openai/")


def connect_server(url: str, key: str | None, *,
                   default_model: str | None = None) -> tuple[str, list[str], str | None]:
    """Check that the server at ``url`` answers with its model list (sent ``key``, or when
    ``key`` is None the key already stored for exactly that URL), and that it serves
    ``default_model``; then store it as the user's server (``trust.set_server``). Nothing is
    stored on any failure: a bad URL or key (``KeysError``), a server that does not answer
    or serves no such model (:class:`ServerUnreachable`). Returns the stored URL, the
    models it serves and the plain-http warning, if any."""
    from jupyter_percent_agent import trust

    url = trust.check_server_url(url)
    if key:
        key = trust.keys.check_key(key, f"the server at {url}")
    sent = key if key is not None else trust.load_keys().get(url)
    try:
        models = server_models(url, sent or None)
    except ServerUnreachable as exc:
        raise ServerUnreachable(f"cannot list the models at {trust.public_url(url)}: {exc}; "
                                "nothing stored") from None
    if default_model and models and served_name(default_model) not in models:
        shown = ", ".join(models[:8]) + (", ..." if len(models) > 8 else "")
        raise ServerUnreachable(f"the server at {trust.public_url(url)} serves no model "
                                f"{served_name(default_model)!r} (it serves {shown}); "
                                "nothing stored")
    stored, warning = trust.set_server(url, key, default_model=default_model)
    return stored, models, warning
