"""Where a conversation may be sent, and with which key.

Keys come from the user's environment and go only to the endpoint they belong to:

- no ``api_base`` anywhere: the provider's own endpoint, with the provider's key (litellm's
  own rules, e.g. ``OPENAI_API_KEY`` for OpenAI), never ``PERCENT_AGENT_API_KEY``;
- ``PERCENT_AGENT_API_BASE`` (the user's server, Ollama, vLLM, a LiteLLM proxy) gets
  ``PERCENT_AGENT_API_KEY``;
- an ``api_base`` written in a file (an agent preset, a ``definition="agent"`` cell, a SOP
  folder's ``_agents.yaml``) is used only when it is on the user's allow-list (then with the
  key the user tied to it, if any) or when the file's folder is trusted (then with no key at
  all), and is otherwise refused. It is never handed a key the user did not tie to it: a
  placeholder key is sent instead, so that litellm does not fall back to one from the
  environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from jupyter_percent_agent.trust.config import Config, Endpoint, load_config
from jupyter_percent_agent.trust.errors import TrustError
from jupyter_percent_agent.trust.folders import is_trusted

NO_KEY = "no-key"
"""The key sent where no key of the user's may go (OpenAI-style clients insist on one)."""


@dataclass(frozen=True)
class Route:
    """Where one agent's calls go. ``api_base`` None: the provider's own endpoint.
    ``api_key`` None: litellm's own choice (the provider's key from the environment)."""

    api_base: str | None
    api_key: str | None
    source: str  # "provider", "environment", "allow-list", "trusted folder"

    def describe(self) -> str:
        """One line for ``tce list FILE/agent`` (never the key itself)."""
        where = _public(self.api_base) if self.api_base else "the provider's own endpoint"
        if self.source == "environment":
            return f"{where} (PERCENT_AGENT_API_BASE)"
        if self.source == "allow-list":
            return f"{where} (from the file; on your allow-list)"
        if self.source == "trusted folder":
            return f"{where} (from the file; trusted folder, no key sent)"
        return where


def _public(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an api_base that is not a valid URL)"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


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
              env: Mapping[str, str] | None = None, config: Config | None = None) -> Route:
    """The endpoint and key for an agent whose file (in ``folder``) asks for ``file_base``.

    Raises :class:`TrustError` when the file asks for an endpoint it may not choose.
    """
    env = os.environ if env is None else env
    user_base = (env.get("PERCENT_AGENT_API_BASE") or "").strip() or None
    user_key = env.get("PERCENT_AGENT_API_KEY") or None
    if not file_base:
        if user_base:
            return Route(user_base, user_key, "environment")
        # PERCENT_AGENT_API_KEY belongs to PERCENT_AGENT_API_BASE: with no base, a file's
        # model (any provider, some of which take their host from the model's name) gets
        # only its provider's own key, by litellm's rules
        return Route(None, None, "provider")
    file_base = file_base.strip()
    if user_base and _key(file_base) is not None and _key(file_base) == _key(user_base):
        return Route(file_base, user_key or NO_KEY, "environment")
    config = config or load_config()
    entry = allowed_endpoint(file_base, config)
    if entry is not None:
        key = env.get(entry.key_env) if entry.key_env else None
        return Route(file_base, key or NO_KEY, "allow-list")
    if folder is not None and is_trusted(folder, config):
        return Route(file_base, NO_KEY, "trusted folder")
    folder = Path(os.path.abspath(folder)) if folder is not None else None
    where = f" in {folder}" if folder is not None else ""
    trust_it = f"trust the folder (tce trust {folder}) or " if folder is not None else ""
    raise TrustError(
        f"agent {agent!r} asks for api_base {_public(file_base)}, and a file{where} may not "
        "choose where conversations (and keys) go",
        f"to allow it, {trust_it}add the endpoint to your allow-list "
        f"(tce trust --endpoint {_public(file_base)})",
        kind="api_base", folder=folder)
