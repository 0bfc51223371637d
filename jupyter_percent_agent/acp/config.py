"""The external agents the user added (``tce acp add``): one ``acp.json`` in their config folder.

::

    {"acpAgents": {
        "coder": {"command": "claude-agent-acp", "args": [], "env": {"K": "V"},
                  "permissions": "ask"}
    }}

It lives beside the user's keys, trusted folders and MCP servers (``trust.config_dir``),
never in a project: a message file names an agent by its name only (``agents: {coder: {acp:
coder}}``), so a cloned file cannot make anything run that the user did not add. It may hold
secrets (``env``), so it is written private (0600) through the one atomic write, and its
secret-looking ``env`` values are masked like MCP servers' (``trust.keys``). Standard library
only: ``tce acp list`` and the kernel read it without paying for the SDK.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.masking import sensitive_name
from jupyter_percent_agent.mcptools.config import NAME_RULE, read_json_file
from jupyter_percent_agent.trust import config_dir
from jupyter_percent_agent.trust.config import ACP_AGENTS_NAME

TABLE_KEY = "acpAgents"

PERMISSIONS = ("ask", "allow", "reject")
"""How an agent's permission requests are answered: ``ask`` the person (rejected when there
is none: no terminal, ``tce exec``, nbclient), ``allow`` or ``reject`` without asking."""


class AcpConfigError(PercentAgentError, ValueError):
    """An ACP agent's definition that is wrong (a bad name, no command, a name taken, an
    ``acp.json`` that is not one), or a name the user never added; says which and what."""

    error_kind = Kind.USAGE


@dataclass(frozen=True)
class AcpAgentSpec:
    """How to start one external agent: the user's command, never a file's."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    permissions: str = "ask"  # one of PERMISSIONS

    @property
    def target(self) -> str:
        """The command line, as ``tce acp list`` shows it."""
        return " ".join([self.command, *self.args])

    @property
    def described(self) -> str:
        """The command line, its environment (a secret's value as ``***``) and the
        permission setting, in one line."""
        parts = [self.target]
        if self.env:
            parts.append("env: " + " ".join(
                f"{k}={'***' if sensitive_name(k) else v}" for k, v in self.env.items()))
        parts.append(f"permissions: {self.permissions}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"command": self.command, "args": list(self.args)}
        if self.env:
            out["env"] = dict(self.env)
        out["permissions"] = self.permissions
        return out


def check_name(name: Any) -> str:
    """``name`` if it can name an ACP agent (the same rule as MCP servers' names)."""
    if not isinstance(name, str) or not NAME_RULE.fullmatch(name):
        raise AcpConfigError(f"{str(name)[:80]!r} cannot name an ACP agent: use letters, "
                             "digits, '_' and '-', starting with a letter")
    return name


def spec_from_json(name: str, entry: Any) -> AcpAgentSpec:
    """One ``acpAgents`` entry as an :class:`AcpAgentSpec` (``AcpConfigError`` says what is
    wrong)."""
    check_name(name)
    if not isinstance(entry, Mapping):
        raise AcpConfigError(f"ACP agent {name!r}: its entry must be a JSON object")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise AcpConfigError(f"ACP agent {name!r}: needs a command")
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise AcpConfigError(f"ACP agent {name!r}: args must be a list of strings")
    env = entry.get("env") or {}
    if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise AcpConfigError(f"ACP agent {name!r}: env must map names to strings")
    permissions = entry.get("permissions", "ask")
    if permissions not in PERMISSIONS:
        raise AcpConfigError(f"ACP agent {name!r}: permissions must be one of "
                             + ", ".join(PERMISSIONS))
    return AcpAgentSpec(name, command, tuple(args), dict(env), permissions)


def agents_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the user's ACP agents are kept (it need not exist yet)."""
    return config_dir(env) / ACP_AGENTS_NAME  # type: ignore[arg-type]


def load_agents(path: Path | None = None) -> dict[str, AcpAgentSpec]:
    """The user's ACP agents by name (none when there is no file)."""
    path = path or agents_path()
    if not path.exists():
        return {}
    try:
        data = read_json_file(path)
    except PercentAgentError as exc:
        raise AcpConfigError(str(exc)) from None
    if data == {}:
        return {}
    table = data.get(TABLE_KEY) if isinstance(data, Mapping) else None
    if not isinstance(table, Mapping):
        raise AcpConfigError(f'{path}: has no "{TABLE_KEY}" object')
    return {name: spec_from_json(name, entry) for name, entry in table.items()}


def find_agent(name: str, path: Path | None = None) -> AcpAgentSpec:
    """The user's agent ``name``; ``AcpConfigError`` naming how to add it when there is none."""
    agents = load_agents(path)
    if name not in agents:
        known = ", ".join(sorted(agents)) or "none"
        raise AcpConfigError(f"no ACP agent named {name!r} (yours: {known}); add it: "
                             f"tce acp add {name} -- COMMAND [ARGS...]")
    return agents[name]


def save_agents(agents: Iterable[AcpAgentSpec], path: Path | None = None) -> Path:
    """Write the user's ACP agents (atomically, private to the user)."""
    from jupyter_percent_agent.format import write_text

    path = path or agents_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    table = {s.name: s.to_json() for s in sorted(agents, key=lambda s: s.name)}
    write_text(path, json.dumps({TABLE_KEY: table}, indent=2) + "\n", mode=0o600)
    os.chmod(path, 0o600)
    return path


def add_agent(spec: AcpAgentSpec, *, replace: bool = False, path: Path | None = None) -> Path:
    """Add (or with ``replace``, change) one agent; ``AcpConfigError`` if the name is taken
    (then nothing is written)."""
    agents = load_agents(path)
    check_name(spec.name)
    if spec.name in agents and not replace:
        raise AcpConfigError(f"an ACP agent named {spec.name!r} exists: remove it first, or "
                             "pass --replace")
    agents[spec.name] = spec
    return save_agents(agents.values(), path)


def remove_agent(name: str, path: Path | None = None) -> bool:
    """Forget one agent; False when there was none of that name."""
    agents = load_agents(path)
    if agents.pop(name, None) is None:
        return False
    save_agents(agents.values(), path)
    return True
