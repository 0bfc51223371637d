"""The user's own settings: where they live, and reading and writing them.

The config directory belongs to the user, never to a project, so a cloned folder cannot trust
itself: ``$PERCENT_AGENT_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/jupyter-percent-agent``, else
``~/.config/jupyter-percent-agent``. It holds ``config.toml``::

    max_steps = 8                         # the ATTP step limit a file may lower, never raise
    tool_timeout = 30                     # ... and every other budget a file may set (limits.py)
    trusted = ["/home/me/work/notes"]     # folders whose toolbox/ and api_base are used
    default_model = "gpt-4o"              # when neither a file nor PERCENT_AGENT_MODEL names one
    history_model = "gpt-4o-mini"         # scores history="auto" cells (else a local scorer)
    api_base = "http://localhost:11434/v1"  # your own server (server.py; its key: keys.json)

    [[endpoints]]                         # model servers a file's api_base may name
    api_base = "http://gpu-box:8000/v1"
    key_env = "GPU_BOX_API_KEY"           # optional: the key that goes to it, and only to it

API keys are kept beside it, in a file of their own (``keys.py``).

Reading uses the standard library only (``tomllib``), so every ``tce`` command can afford it.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.trust.limits import LIMITS, number, user_limit

CONFIG_NAME = "config.toml"
MCP_SERVERS_NAME = "mcp.json"
"""The user's MCP servers (``tce mcp add``), in the config folder: their ``env`` and headers
may hold credentials (``trust.keys.known_secrets`` masks them)."""
ACP_AGENTS_NAME = "acp.json"
"""The user's external agents over ACP (``tce acp add``), in the config folder: the commands
a file may name by their name only; their ``env`` may hold credentials, masked as MCP's."""


class ConfigError(PercentAgentError, ValueError):
    """The user's config file does not parse or holds a wrong value; names file and key."""

    error_kind = Kind.BAD_FILE

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None) -> None:
        super().__init__(message)
        if path is not None:  # the file at fault: not the message file a command was given
            self.path = os.fspath(path)


def config_dir(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """The user's config directory (it need not exist yet)."""
    env = os.environ if env is None else env
    explicit = env.get("PERCENT_AGENT_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "jupyter-percent-agent"


def cache_dir(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """The user's cache directory (it need not exist yet): what can be made again, kept out of
    every project (history relevance's embeddings). ``$PERCENT_AGENT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/jupyter-percent-agent``, else ``~/.cache/jupyter-percent-agent``."""
    env = os.environ if env is None else env
    explicit = env.get("PERCENT_AGENT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "jupyter-percent-agent"


def config_path() -> Path:
    return config_dir() / CONFIG_NAME


@dataclass(frozen=True)
class Endpoint:
    """A model server the user allowed files to name, and the variable holding its key."""

    api_base: str
    key_env: str | None = None


@dataclass(frozen=True)
class Config:
    """The parsed ``config.toml`` (defaults when there is none)."""

    trusted: tuple[Path, ...] = ()
    endpoints: tuple[Endpoint, ...] = ()
    limits: dict[str, int | float] = field(default_factory=dict)
    """The user's own limits (``limits.LIMITS`` names them); those not set are the defaults."""
    default_model: str | None = None
    """The model used when neither a file nor ``PERCENT_AGENT_MODEL`` names one."""
    history_model: str | None = None
    """The small model that scores ``history: auto`` cells (None: the local scorer)."""
    api_base: str | None = None
    """The user's own model server (``server.py``), as ``PERCENT_AGENT_API_BASE`` would be."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def max_steps(self) -> int:
        """The user's ATTP step limit."""
        return int(user_limit("max_steps", self.limits, {}) or 0)


def load_config(path: Path | None = None) -> Config:
    """Read the user's config; a missing file is the defaults."""
    path = path or config_path()
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        return Config()
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}", path=path) from None
    return _parse(raw, path)


def _parse(raw: dict[str, Any], path: Path) -> Config:
    trusted = raw.get("trusted", [])
    if not isinstance(trusted, list) or not all(isinstance(t, str) for t in trusted):
        raise ConfigError(f"{path}: 'trusted' must be a list of folder paths", path=path)
    endpoints = []
    for i, entry in enumerate(raw.get("endpoints", []) or []):
        base = entry.get("api_base") if isinstance(entry, dict) else None
        key_env = entry.get("key_env") if isinstance(entry, dict) else None
        if not isinstance(base, str) or not base.strip():
            raise ConfigError(f"{path}: endpoints[{i}] needs an api_base", path=path)
        if key_env is not None and not isinstance(key_env, str):
            raise ConfigError(f"{path}: endpoints[{i}].key_env must be a variable name", path=path)
        endpoints.append(Endpoint(base.strip(), key_env or None))
    limits: dict[str, int | float] = {}
    for name, limit in LIMITS.items():
        if name in raw:
            value = number(raw[name], integer=limit.integer, least=limit.least) \
                if not isinstance(raw[name], str) else None
            if value is None:
                kind = "a positive integer" if limit.integer else "a positive number"
                raise ConfigError(f"{path}: {name} ({limit.what}) must be {kind}", path=path)
            limits[name] = min(value, limit.hard)
    default_model = raw.get("default_model")
    if default_model is not None and (not isinstance(default_model, str)
                                      or not default_model.strip()):
        raise ConfigError(f"{path}: default_model must be a model name", path=path)
    history_model = raw.get("history_model")
    if history_model is not None and (not isinstance(history_model, str)
                                      or not history_model.strip()):
        raise ConfigError(f"{path}: history_model must be a model name", path=path)
    api_base = raw.get("api_base")
    if api_base is not None and (not isinstance(api_base, str) or not api_base.strip()):
        raise ConfigError(f"{path}: api_base must be your server's URL", path=path)
    return Config(trusted=tuple(Path(t) for t in trusted), endpoints=tuple(endpoints),
                  limits=limits, default_model=default_model.strip() if default_model else None,
                  history_model=history_model.strip() if history_model else None,
                  api_base=api_base.strip() if api_base else None, raw=raw)


def save_config(config: Config, path: Path | None = None) -> Path:
    """Write ``config`` back, keeping keys this module does not know (atomic, mode 0600)."""
    from jupyter_percent_agent.format import write_text

    path = path or config_path()
    raw = dict(config.raw)
    raw["trusted"] = [str(p) for p in config.trusted]
    if config.endpoints:
        raw["endpoints"] = [{"api_base": e.api_base, **({"key_env": e.key_env}
                                                        if e.key_env else {})}
                            for e in config.endpoints]
    else:
        raw.pop("endpoints", None)
    raw.update(config.limits)
    if config.default_model:
        raw["default_model"] = config.default_model
    else:
        raw.pop("default_model", None)
    if config.api_base:
        raw["api_base"] = config.api_base
    else:
        raw.pop("api_base", None)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_text(path, _dumps(raw), mode=0o600)
    return path


def _dumps(raw: dict[str, Any]) -> str:
    import tomlkit

    doc = tomlkit.document()
    doc.add(tomlkit.comment("jupyter-percent-agent: your settings (see docs/security.md)"))
    for key, value in raw.items():
        if key == "endpoints":
            tables = tomlkit.aot()
            for entry in value:
                table = tomlkit.table()
                table.update(entry)
                tables.append(table)
            doc.add(key, tables)
        else:
            doc.add(key, value)
    return tomlkit.dumps(doc)
