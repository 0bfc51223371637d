"""Where a conversation may be sent, and with which key.

Keys come from the user's environment and go only to the endpoint they belong to:

- no ``api_base`` anywhere: the provider's own endpoint, with the provider's own key (litellm
  resolves both from the model's name; ``runtime.routing`` keeps it from lending one
  provider's key to another), never ``PERCENT_AGENT_API_KEY``;
- ``PERCENT_AGENT_API_BASE`` (the user's server, Ollama, vLLM, a LiteLLM proxy) gets
  ``PERCENT_AGENT_API_KEY``, or the placeholder key when that is unset: never a provider's;
  with no such variable, the server stored in the user's config (``server.py``, ``tce keys
  server``) is the user's server, and gets the key stored for exactly its URL, or the
  placeholder;
- an ``api_base`` written in a file (an agent preset, a ``definition="agent"`` cell, a SOP
  folder's ``_agents.yaml``) is used only when it is on the user's allow-list (then with the
  key the user tied to it, if any) or when the file's folder is trusted (then with no key at
  all), and is otherwise refused. It is never handed a key the user did not tie to it: a
  placeholder key is sent instead, so that litellm does not fall back to one from the
  environment;
- a model name from a file that names a URL (``huggingface/https://host/v1``), or whose
  provider builds its host from the name, is such an ``api_base`` too (``route_agent``; the
  second kind is found by litellm, at the call).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from jupyter_percent_agent.trust.config import Config, Endpoint, load_config
from jupyter_percent_agent.trust.errors import TrustError
from jupyter_percent_agent.trust.folders import is_trusted
from jupyter_percent_agent.trust.server import user_server

NO_KEY = "no-key"
"""The key sent where no key of the user's may go (OpenAI-style clients insist on one)."""


@dataclass(frozen=True)
class Route:
    """Where one agent's calls go. ``api_base`` None: the provider's own endpoint.
    ``api_key`` None: the provider's own key (``runtime.routing`` says which).
    ``by_model``: the routes of models whose name named a URL (``route_agent``).
    ``file_folder``: the folder of the file that chose the agent's models ("": a file whose
    folder is not known, never trusted; None: the user chose them), so that a host the name
    makes litellm pick is judged as that file's."""

    api_base: str | None
    api_key: str | None
    source: str  # "provider", "environment", "config", "allow-list", "trusted folder"
    by_model: tuple[tuple[str, Route], ...] = ()
    file_folder: str | None = None
    key_env: str | None = None  # the variable ``api_key`` came from (None: none, or a placeholder)

    def for_model(self, model: str) -> Route:
        """The route of one of the agent's models."""
        return next((r for m, r in self.by_model if m == model), self)

    def describe(self) -> str:
        """Where the calls go, for ``tce list FILE/agent`` (never the key itself)."""
        where = public_url(self.api_base) if self.api_base else "the provider's own endpoint"
        if self.source == "environment":
            return f"{where} (PERCENT_AGENT_API_BASE)"
        if self.source == "config":
            return f"{where} (your server: tce keys server)"
        if self.source == "allow-list":
            return f"{where} (from the file; on your allow-list)"
        if self.source == "trusted folder":
            return f"{where} (from the file; trusted folder)"
        return where

    def key_name(self) -> str:
        """Which key goes with an ``api_base`` (the variable's name, never its value)."""
        if self.key_env:
            return self.key_env
        if self.source == "trusted folder":
            return "none (a trusted folder's api_base gets no key)"
        return "none (a placeholder key is sent)"


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment (a key sometimes travels there)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "(an api_base that is not a valid URL)"
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else url


def _key(url: str) -> tuple[str, str, int | None, str] | None:
    """What two URLs must share to be the same endpoint: scheme, host, port, path."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    port = port or (443 if scheme == "https" else 80)
    # "." and ".." segments (also written %2e): the HTTP client, or the server, takes them
    # away, so the path would not be the one compared; such a URL is no endpoint of anyone's
    if any(seg in (".", "..") for seg in unquote(parts.path).replace("\\", "/").split("/")):
        return None
    return scheme, parts.hostname.lower(), port, parts.path.rstrip("/")


def _matches(file_base: str, allowed: str) -> bool:
    a, b = _key(file_base), _key(allowed)
    if a is None or b is None or a[:3] != b[:3]:
        return False
    return a[3] == b[3] or a[3].startswith(b[3] + "/")


def allowed_endpoint(file_base: str, config: Config) -> Endpoint | None:
    """The allow-list entry covering ``file_base``, if any."""
    return next((e for e in config.endpoints if _matches(file_base, e.api_base)), None)


def route_for(file_base: str | None, *, folder: Path | None, agent: str,
              env: Mapping[str, str] | None = None, config: Config | None = None,
              asking: str | None = None) -> Route:
    """The endpoint and key for an agent whose file (in ``folder``) asks for ``file_base``.

    Raises :class:`TrustError` when the file asks for an endpoint it may not choose
    (``asking``: what asked, in the refusal; by default the agent's ``api_base``).
    """
    env = os.environ if env is None else env
    config = config or load_config()
    user = user_server(env, config)
    user_base = user.api_base if user else None
    user_key, user_key_env = (user.api_key, user.key_env) if user else (None, None)
    source = user.source if user else "environment"
    if not file_base:
        if user_base:  # with no key of its own it gets none: never a provider's
            return Route(user_base, user_key or NO_KEY, source, key_env=user_key_env)
        # PERCENT_AGENT_API_KEY belongs to PERCENT_AGENT_API_BASE: with no base, a file's
        # model (any provider, some of which take their host from the model's name) gets
        # only its provider's own key, by litellm's rules
        return Route(None, None, "provider")
    file_base = file_base.strip()
    if user_base and _key(file_base) is not None and _key(file_base) == _key(user_base):
        return Route(file_base, user_key or NO_KEY, source, key_env=user_key_env)
    entry = allowed_endpoint(file_base, config)
    if entry is not None:
        key = env.get(entry.key_env) if entry.key_env else None
        return Route(file_base, key or NO_KEY, "allow-list", key_env=entry.key_env if key else None)
    if folder is not None and is_trusted(folder, config):
        return Route(file_base, NO_KEY, "trusted folder")
    folder = Path(os.path.abspath(folder)) if folder is not None else None
    where = f" in {folder}" if folder is not None else ""
    trust_it = f"trust the folder (tce trust {folder}) or " if folder is not None else ""
    asking = asking or f"asks for api_base {public_url(file_base)}"
    raise TrustError(
        f"agent {agent!r} {asking}, and a file{where} may not "
        "choose where conversations (and keys) go",
        f"to allow it, {trust_it}add the endpoint to your allow-list "
        f"(tce trust --endpoint {public_url(file_base)})",
        kind="api_base", folder=folder)


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,]*")


def named_url(model: str) -> str | None:
    """The URL a model's name holds (``huggingface/https://host/v1`` -> ``https://host/v1``):
    some providers send the call there. None when it holds none."""
    found = _URL.search(model)
    return found.group(0) if found else None


def route_agent(agent: str, api_base: str | None, models: Sequence[str], *, from_file: bool,
                folder: Path | None, env: Mapping[str, str] | None = None,
                config: Config | None = None) -> Route:
    """Where an agent's calls go: ``route_for`` its ``api_base``; and, when its models come
    from a file (``from_file``), each model whose name names a URL is an ``api_base`` that
    file chose, under the same rules. Raises :class:`TrustError` for the first refused."""
    route = route_for(api_base, folder=folder, agent=agent, env=env, config=config)
    if not from_file:
        return route
    named = []
    for model in models:
        url = named_url(model)
        if url is not None:
            named.append((model, route_for(
                url, folder=folder, agent=agent, env=env, config=config,
                asking=f"model {model!r} names the host {public_url(url)}")))
    return replace(route, by_model=tuple(named),
                   file_folder=os.path.abspath(folder) if folder is not None else "")
