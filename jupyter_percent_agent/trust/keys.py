"""The user's stored API keys: ``tce keys set PROVIDER`` and JupyterLab's "Set up a model".

One file, ``keys.json`` in the user's config directory (``config.config_dir``, never in a
project), mode 0600 in a 0700 folder, written atomically: ``{"openai": "sk-..."}``, one key
per litellm provider, and the key of the user's own server under its URL
(``{"http://gpu-box:8000/v1": "..."}``, ``trust.server``: no provider name holds ``://``).
A key in the environment wins over a stored one, as in ``llm``.

This module only keeps the keys; which key goes to which call is decided in one place,
``runtime.routing.resolve``, by litellm's routing of the model's name: a stored key goes only
to its own provider's endpoint, exactly as that provider's environment variable would, and
never to an ``api_base`` (a file's, or the user's own server's: those get the key the user
tied to them, ``trust.route_for``).

Nothing here prints or logs a key: errors name the file and the provider, never a value.
Standard library only, so ``tce keys list`` starts fast.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Collection, Mapping
from pathlib import Path

from jupyter_percent_agent import masking
from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.trust.config import (
    ACP_AGENTS_NAME,
    CONFIG_NAME,
    MCP_SERVERS_NAME,
    config_dir,
    load_config,
)

KEYS_NAME = "keys.json"

PROVIDER_ALIASES = {"text-completion-openai": "openai", "aiohttp_openai": "openai"}
"""litellm providers that are another provider's endpoint, and so use its key."""

COMMON_PROVIDERS = ("openai", "anthropic", "gemini", "mistral", "groq", "deepseek", "xai",
                    "openrouter", "together_ai")
"""The providers JupyterLab's "Set up a model" dialog offers (litellm's names); ``tce keys set``
takes any provider litellm knows."""

SERVER_KEY_NAME = "your server's key"
"""How the stored key of the user's own server is named where a key is named (never shown)."""

_PROVIDER = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


class KeysError(PercentAgentError, ValueError):
    """A key or provider name that cannot be stored, or a keys file that cannot be read: one
    line naming the file or the provider, never a key."""

    error_kind = Kind.USAGE


def keys_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the stored keys live (the file need not exist)."""
    return config_dir(env) / KEYS_NAME  # type: ignore[arg-type]


def key_variable(provider: str) -> str:
    """The environment variable that holds ``provider``'s key by litellm's convention
    (``openai`` -> ``OPENAI_API_KEY``); one set there wins over the stored key."""
    provider = PROVIDER_ALIASES.get(provider, provider)
    return re.sub(r"[^A-Z0-9]", "_", provider.upper()) + "_API_KEY"


def check_provider(provider: str) -> str:
    """``provider`` as a name a key may be stored under (lower case), or :class:`KeysError`.
    Whether litellm knows it is the caller's question (it costs litellm's import)."""
    name = provider.strip().lower()
    if not _PROVIDER.fullmatch(name):
        raise KeysError(f"{provider!r} is not a provider name (letters, digits, - _ .)")
    return PROVIDER_ALIASES.get(name, name)


def check_key(key: str, provider: str) -> str:
    """``key`` without its final newline, or :class:`KeysError` (never quoting the key)."""
    key = key.removesuffix("\n").removesuffix("\r")
    if not key:
        raise KeysError(f"no key given for {provider}: nothing stored")
    if any(c.isspace() for c in key) or not key.isprintable():
        raise KeysError(f"the key given for {provider} holds spaces, newlines or control "
                        "characters: nothing stored")
    return key


def load_keys(path: Path | None = None) -> dict[str, str]:
    """The stored keys (provider -> key); none when there is no file. :class:`KeysError`
    when the file is not this user's alone, cannot be read, or is not a JSON object of
    strings."""
    path = path or keys_path()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise KeysError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() \
                or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise KeysError(f"{path}: not a private file of this user (mode "
                            f"{stat.filemode(st.st_mode)}): run chmod 600 {path}")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(1 << 20)
    except OSError as exc:
        raise KeysError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    try:
        keys = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (UnicodeDecodeError, ValueError):
        raise KeysError(f"{path}: not a keys file (JSON); fix or remove it, then run "
                        "tce keys set PROVIDER") from None
    if not isinstance(keys, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in keys.items()):
        raise KeysError(f"{path}: must map provider names to keys; fix or remove it")
    return keys


def is_server_entry(name: str) -> bool:
    """Whether a name in the keys file is a server's URL (``trust.server``), not a provider."""
    return "://" in name


def save_keys(keys: Mapping[str, str], path: Path) -> None:
    """Write ``keys`` to ``path``: atomic, this user's alone (0600 in a 0700 folder)."""
    from jupyter_percent_agent.format import write_text

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_text(path, json.dumps(dict(sorted(keys.items())), indent=2) + "\n", mode=0o600)
    os.chmod(path, 0o600)  # a file someone loosened: stored keys are this user's alone


def set_key(provider: str, key: str, path: Path | None = None) -> Path:
    """Store ``key`` for ``provider`` (both checked first: nothing is stored on bad input)."""
    provider = check_provider(provider)
    key = check_key(key, provider)
    path = path or keys_path()
    keys = load_keys(path)
    keys[provider] = key
    save_keys(keys, path)
    return path


def remove_key(provider: str, path: Path | None = None) -> bool:
    """Forget ``provider``'s stored key; False when there was none."""
    provider = check_provider(provider)
    path = path or keys_path()
    keys = load_keys(path)
    if keys.pop(provider, None) is None:
        return False
    save_keys(keys, path)
    return True


def stored_key(provider: str | None, path: Path | None = None) -> str | None:
    """The stored key of ``provider`` (litellm's name for it), read afresh: a key saved a
    moment ago, by another process, is used by the next call. :class:`KeysError` as
    :func:`load_keys`."""
    if not provider:
        return None
    return load_keys(path).get(PROVIDER_ALIASES.get(provider, provider))


def key_sources(env: Mapping[str, str] | None = None, path: Path | None = None, *,
                known: Collection[str] = ()) -> dict[str, str]:
    """Which providers have a key and where it comes from, never the key: ``"environment
    (OPENAI_API_KEY)"`` (which wins), or ``"config (PATH)"``. Providers whose variable is set
    are found by the convention of :func:`key_variable`, among the ``known`` provider names
    (litellm's: ``SERPAPI_API_KEY`` is no model provider's)."""
    env = os.environ if env is None else env
    path = path or keys_path(env)
    found: dict[str, str] = {}
    for name, value in env.items():
        provider = name.removesuffix("_API_KEY").lower()
        if name.endswith("_API_KEY") and value and provider in known:
            found[provider] = f"environment ({name})"
    for provider in load_keys(path):
        if is_server_entry(provider):
            continue
        variable = key_variable(provider)
        found[provider] = (f"environment ({variable}), over the stored key"
                           if env.get(variable) else f"config ({path})")
    return dict(sorted(found.items()))


_seen: dict[str, tuple[tuple[int, int, int], dict[str, str]]] = {}  # path -> (stat, masked)


def known_secrets() -> dict[str, str]:
    """What the runtime knows to be secret beyond the environment's ``*_KEY`` and friends, for
    ``masking``: the stored keys (named by their provider's variable), the value of every
    variable an allowed endpoint takes its key from, and the credentials of the user's MCP
    servers (:func:`mcp_secrets`). The files are read again only when they change; a file
    that cannot be read names nothing."""
    found: dict[str, str] = {}
    folder = config_dir()
    for name in (KEYS_NAME, CONFIG_NAME, MCP_SERVERS_NAME, ACP_AGENTS_NAME):
        path = folder / name
        try:
            st = os.stat(path)
        except OSError:
            continue
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = _seen.get(str(path))
        if cached is None or cached[0] != stamp:
            try:
                if name == KEYS_NAME:
                    names = {SERVER_KEY_NAME if is_server_entry(p) else key_variable(p): k
                             for p, k in load_keys(path).items()}
                elif name in (MCP_SERVERS_NAME, ACP_AGENTS_NAME):
                    names = mcp_secrets(path)
                else:
                    names = {e.key_env: "" for e in load_config(path).endpoints if e.key_env}
            except PercentAgentError:
                names = {}
            cached = _seen[str(path)] = (stamp, names)
        for variable, value in cached[1].items():
            found[variable] = value or os.environ.get(variable, "")
    return found


def mcp_secrets(path: Path) -> dict[str, str]:
    """The credentials in the user's ``mcp.json``: the ``env`` values of a server whose names
    say secret (``masking.sensitive_name``, as for the environment) and every header's value,
    with the credential after its scheme (``Bearer TOKEN``) on its own. A server quoting its
    own credential (an upstream error passed on) must not put it into a message file or a
    model's context. ``{}`` for a file that is not such JSON."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    table = data.get("mcpServers", data.get("servers", data.get("acpAgents"))) \
        if isinstance(data, dict) else None
    found: dict[str, str] = {}
    servers = table.items() if isinstance(table, dict) else ()
    for server, entry in servers:
        if not isinstance(entry, dict):
            continue
        env, headers = entry.get("env"), entry.get("headers")
        values = [(name, value) for name, value in (env or {}).items()
                  if masking.sensitive_name(str(name))] if isinstance(env, dict) else []
        for name, value in headers.items() if isinstance(headers, dict) else ():
            values.append((name, value))
            if isinstance(value, str) and " " in value.strip():
                values.append((name, value.strip().split(None, 1)[1]))
        for name, value in values:
            if isinstance(value, str) and value.strip() and value not in found.values():
                found[str(name) if str(name) not in found else f"{name} ({server})"] = value
    return found


masking.add_source(known_secrets)
