"""The trust boundary: what a message file, its folder and a model may make happen.

Untrusted by default: the text of a file, what ships beside it (its folder), and everything a
model writes. Trusted: the user, their environment, their config directory (``config.py``),
and installed packages. A folder becomes trusted only when the user says so (``tce trust``,
or the JupyterLab dialog), recorded in the user's config, never in the project. See
docs/security.md.

Standard library only (plus the format core's atomic write when the config is saved), so
every front end can afford to ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent.trust.config import (
    Config,
    ConfigError,
    Endpoint,
    cache_dir,
    config_dir,
    config_path,
    load_config,
    save_config,
)
from jupyter_percent_agent.trust.endpoints import (
    NO_KEY,
    Route,
    named_url,
    public_url,
    route_agent,
    route_for,
)
from jupyter_percent_agent.trust.errors import TrustError
from jupyter_percent_agent.trust.folders import (
    auto_runs,
    clone_below_trust,
    is_trusted,
    nested_clones,
    trust_folder,
    trusted_folders,
    untrust_folder,
)
from jupyter_percent_agent.trust.keys import (
    KeysError,
    key_sources,
    key_variable,
    keys_path,
    load_keys,
    remove_key,
    set_key,
    stored_key,
)
from jupyter_percent_agent.trust.limits import LIMITS, Bounded, Limit, clamp
from jupyter_percent_agent.trust.paths import PATH_RULE, TOOLBOX, private_dir, resolve_inside
from jupyter_percent_agent.trust.server import (
    UserServer,
    check_server_url,
    remove_server,
    set_server,
    stored_server,
    user_server,
)

__all__ = [
    "LIMITS",
    "NO_KEY",
    "PATH_RULE",
    "TOOLBOX",
    "Bounded",
    "Config",
    "ConfigError",
    "Endpoint",
    "KeysError",
    "Limit",
    "Route",
    "TrustError",
    "UserServer",
    "auto_runs",
    "bound",
    "cache_dir",
    "check_server_url",
    "clone_below_trust",
    "config_dir",
    "config_path",
    "is_trusted",
    "key_sources",
    "key_variable",
    "keys_path",
    "load_config",
    "load_keys",
    "named_url",
    "nested_clones",
    "private_dir",
    "public_url",
    "refuse_toolbox",
    "remove_key",
    "remove_server",
    "resolve_inside",
    "route_agent",
    "route_for",
    "save_config",
    "set_key",
    "set_server",
    "stored_key",
    "stored_server",
    "trust_folder",
    "trusted_folders",
    "untrust_folder",
    "user_server",
]


def bound(name: str, asked: Any, *, folder: Path | None, config: Config | None = None,
          env: Mapping[str, str] | None = None) -> Bounded:
    """What a run uses for the budget ``name`` (``LIMITS``: ``max_steps``, ``tool_timeout``...)
    when a file in ``folder`` asks for ``asked``: a file may lower the user's limit, never
    raise it; in a trusted folder it may raise it up to the hard cap."""
    config = config or load_config()
    trusted = folder is not None and is_trusted(folder, config)
    return clamp(name, asked, trusted=trusted, limits=config.limits, env=env)


def refuse_toolbox(folder: Path, what: str) -> TrustError:
    """The refusal for ``toolbox/`` code beside a file in an untrusted folder."""
    return TrustError(f"{what} would import the toolbox/ code beside the file, with your "
                      "keys, and its folder is not trusted",
                      f"to allow it: tce trust {folder}", kind="toolbox", folder=folder)
