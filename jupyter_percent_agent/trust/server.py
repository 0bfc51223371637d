"""The user's own model server (Ollama, vLLM, a LiteLLM proxy), kept in their config directory:
``tce keys server URL`` and JupyterLab's "Set up a model".

Its URL is ``api_base`` in ``config.toml``; its key, if it has one, is kept with the provider
keys (``keys.json``, 0600), under the URL itself: the key is tied to exactly that URL (scheme,
host, port and path). Another URL, set later or named by a file, never gets it; setting a new
URL forgets the old URL's key.

The server takes the calls ``PERCENT_AGENT_API_BASE`` would (every call whose file names no
``api_base``), so that a desktop-launched JupyterLab, which sees no environment variable of
the shell, reaches it; ``PERCENT_AGENT_API_BASE`` set in the environment wins over it, with
``PERCENT_AGENT_API_KEY`` and never the stored key of another URL (``user_server``).

Standard library only: every ``tce`` command reads it.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from jupyter_percent_agent.trust.config import Config, load_config, save_config
from jupyter_percent_agent.trust.keys import (
    SERVER_KEY_NAME,
    KeysError,
    check_key,
    is_server_entry,
    keys_path,
    load_keys,
    save_keys,
)


@dataclass(frozen=True)
class UserServer:
    """The server that takes calls no file routes elsewhere, and its key.

    ``source``: ``"environment"`` (``PERCENT_AGENT_API_BASE``) or ``"config"`` (stored);
    ``key_env``: where the key comes from, a name and never the key (None: no key)."""

    api_base: str
    api_key: str | None
    source: str
    key_env: str | None


def check_server_url(url: str) -> str:
    """``url`` as a server URL may be stored (trimmed, no final ``/``), or :class:`KeysError`
    (one line): http or https, a host, no user name or password (a key goes in the key
    field, tied to the URL), no query or fragment, no ``.``/``..`` segment."""
    text = url.strip().rstrip("/")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError:
        raise KeysError(f"{url!r} is not a URL: nothing stored") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise KeysError(f"{url!r} is not an http:// or https:// URL of a server: nothing stored")
    if parts.username is not None or parts.password is not None:
        raise KeysError("the server URL holds a user name or password, which is never stored "
                        "or sent: give the URL without it, and the key as the key")
    if parts.query or parts.fragment:
        raise KeysError(f"the server URL {parts.scheme}://{parts.netloc}{parts.path} holds a "
                        "query or fragment: give the URL of the API only (e.g. .../v1)")
    if any(seg in (".", "..") for seg in unquote(parts.path).replace("\\", "/").split("/")):
        raise KeysError(f"the server URL {text!r} holds a . or .. segment: nothing stored")
    return text


def plain_http_warning(url: str, has_key: bool) -> str | None:
    """The warning for a key sent over plain http to a host that is not this machine (it
    crosses the network readable by anyone on the way), else None. Stored all the same: a
    server on a private network the user trusts is theirs to choose."""
    parts = urlsplit(url)
    if not has_key or parts.scheme.lower() != "http" or is_loopback(parts.hostname or ""):
        return None
    return (f"warning: the key for {parts.scheme}://{parts.netloc} goes over plain http, "
            "readable on the network; use https unless the network is yours")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def stored_server(config: Config | None = None, path: Path | None = None) -> UserServer | None:
    """The server stored in the user's config, with the key stored for exactly its URL."""
    config = config or load_config()
    if not config.api_base:
        return None
    key = load_keys(path or keys_path()).get(config.api_base)
    return UserServer(config.api_base, key, "config", SERVER_KEY_NAME if key else None)


def user_server(env: Mapping[str, str] | None = None,
                config: Config | None = None) -> UserServer | None:
    """The user's own server: ``PERCENT_AGENT_API_BASE`` (with ``PERCENT_AGENT_API_KEY``
    only), else the stored one (with its own stored key only), else None. A stored server
    that cannot be read (a broken keys file) is :class:`KeysError`."""
    env = os.environ if env is None else env
    base = (env.get("PERCENT_AGENT_API_BASE") or "").strip() or None
    if base:
        key = env.get("PERCENT_AGENT_API_KEY") or None
        return UserServer(base, key, "environment", "PERCENT_AGENT_API_KEY" if key else None)
    return stored_server(config)


def set_server(url: str, key: str | None, *, default_model: str | None = None,
               path: Path | None = None) -> tuple[str, str | None]:
    """Store ``url`` as the user's server and ``key`` (None or "": none) as its key, and
    ``default_model`` as the default model when given; every value is checked before
    anything is written. The URL stored before keeps its key when ``key`` is None (the same
    URL again); ``""`` forgets it; the key of any other URL is forgotten. Returns the stored
    URL and the plain-http warning, if any."""
    url = check_server_url(url)
    if key:
        key = check_key(key, f"the server at {url}")
    path = path or keys_path()
    keys = load_keys(path)
    kept = {name: value for name, value in keys.items()
            if not is_server_entry(name) or (name == url and key is None)}
    if key:
        kept[url] = key
    if kept != keys:
        save_keys(kept, path)
    config = load_config()
    config = replace(config, api_base=url)
    if default_model:
        config = replace(config, default_model=default_model)
    save_config(config)
    return url, plain_http_warning(url, bool(kept.get(url)))


def remove_server(path: Path | None = None) -> str | None:
    """Forget the stored server and its key; the URL it had, or None when there was none."""
    config = load_config()
    if not config.api_base:
        return None
    path = path or keys_path()
    keys = load_keys(path)
    if keys.pop(config.api_base, None) is not None:
        save_keys(keys, path)
    save_config(replace(config, api_base=None))
    return config.api_base
