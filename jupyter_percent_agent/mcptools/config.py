"""The MCP servers the user configured: one ``mcp.json`` in the user's config directory.

The file has the ``mcpServers`` shape that Claude Desktop, Cursor and VS Code use, so it can
be read by them and written by ``tce mcp add``::

    {"mcpServers": {
        "clock": {"command": "mcp-server-time", "args": [], "env": {"TZ": "UTC"}},
        "issues": {"url": "http://127.0.0.1:9000/mcp", "headers": {"Authorization": "..."}}
    }}

It lives beside the user's keys and trusted folders (``trust.config_dir``), never in a
project: a cloned folder cannot add a server. It may hold secrets (``env``, ``headers``), so
it is written private (0600). Standard library only: ``tce mcp list`` and the kernel read it
without paying for the SDK.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.masking import sensitive_name
from jupyter_percent_agent.trust import config_dir
from jupyter_percent_agent.trust.config import MCP_SERVERS_NAME

SERVERS_NAME = MCP_SERVERS_NAME
UNTRUSTED_OK_KEY = "untrustedOk"  # an entry's mark: usable from untrusted folders too
MAX_DEPTH = 100  # levels of nesting a JSON configuration may have
NAME_RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


class McpConfigError(PercentAgentError, ValueError):
    """A server definition that is wrong (a bad name, no command or URL, a file that is not
    an ``mcpServers`` JSON); says which server and what."""

    error_kind = Kind.USAGE


@dataclass(frozen=True)
class ServerSpec:
    """How to reach one MCP server: a command (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None  # seconds for one call; None: the default
    # the user's word that files in folders they did not trust may use it (``--untrusted-ok``)
    untrusted_ok: bool = False

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    @property
    def target(self) -> str:
        """The command line or the URL, as ``tce mcp list`` shows it."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args])

    @property
    def described(self) -> str:
        """The target and everything else that decides what runs or is sent: the environment
        the command starts with (a secret's value, by its name, as ``***``) and the names of
        the headers sent, as ``tce mcp import`` asks about them."""
        parts = [f"{self.transport}: {self.target}"]
        if self.env:
            parts.append(
                "env: "
                + " ".join(f"{k}={'***' if sensitive_name(k) else v}" for k, v in self.env.items())
            )
        if self.headers:
            parts.append("headers: " + ", ".join(self.headers))
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.url:
            out["url"] = self.url
            if self.headers:
                out["headers"] = dict(self.headers)
        else:
            out["command"] = self.command
            out["args"] = list(self.args)
            if self.env:
                out["env"] = dict(self.env)
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.untrusted_ok:
            out[UNTRUSTED_OK_KEY] = True
        return out


def check_name(name: str) -> str:
    """``name`` if it can name a server (and be selected in an agent's ``tools``)."""
    if not isinstance(name, str) or not NAME_RULE.fullmatch(name):
        raise McpConfigError(
            f"{str(name)[:80]!r} cannot name an MCP server: use letters, "
            "digits, '_' and '-', starting with a letter"
        )
    return name


def _strings(value: Any, what: str, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"MCP server {name!r}: {what} must map names to strings")
    return dict(value)


def spec_from_json(name: str, entry: Any) -> ServerSpec:
    """One ``mcpServers`` entry as a :class:`ServerSpec` (``McpConfigError`` says what is
    wrong)."""
    check_name(name)
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"MCP server {name!r}: its entry must be a JSON object")
    url, command = entry.get("url") or entry.get("serverUrl"), entry.get("command")
    timeout = entry.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise McpConfigError(f"MCP server {name!r}: timeout must be a positive number")
    untrusted_ok = entry.get(UNTRUSTED_OK_KEY, False)
    if not isinstance(untrusted_ok, bool):
        raise McpConfigError(f"MCP server {name!r}: {UNTRUSTED_OK_KEY} must be true or false")
    if url is not None:
        if not isinstance(url, str) or not re.match(r"https?://", url):
            raise McpConfigError(f"MCP server {name!r}: url must start with http:// or https://")
        return ServerSpec(
            name,
            url=url,
            headers=_strings(entry.get("headers"), "headers", name),
            timeout=timeout,
            untrusted_ok=untrusted_ok,
        )
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(f"MCP server {name!r}: needs a command or a url")
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(f"MCP server {name!r}: args must be a list of strings")
    return ServerSpec(
        name,
        command=command,
        args=tuple(args),
        env=_strings(entry.get("env"), "env", name),
        timeout=timeout,
        untrusted_ok=untrusted_ok,
    )


def server_table(data: Any, where: str) -> Mapping[Any, Any]:
    """The name -> entry table of an ``mcpServers`` document (VS Code's ``servers`` too),
    entries unchecked."""
    if not isinstance(data, Mapping):
        raise McpConfigError(f"{where}: not an mcpServers JSON object")
    table = data.get("mcpServers", data.get("servers"))
    if table is None and "mcp" in data and isinstance(data["mcp"], Mapping):
        table = data["mcp"].get("servers")  # VS Code's settings.json
    if not isinstance(table, Mapping):
        raise McpConfigError(f'{where}: has no "mcpServers" object')
    return table


def servers_from_json(data: Any, where: str) -> dict[str, ServerSpec]:
    """The servers of an ``mcpServers`` document (VS Code's ``servers`` too)."""
    return {name: spec_from_json(name, entry) for name, entry in server_table(data, where).items()}


def servers_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the user's servers are kept (it need not exist yet)."""
    return config_dir(env) / SERVERS_NAME  # type: ignore[arg-type]


def read_json_file(path: Path) -> Any:
    """A JSON file's value; ``McpConfigError`` naming the file and line when it is not JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise McpConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(text) if text.strip() else {}
    except RecursionError:  # nested far past any configuration: the parser gave up
        value = None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise McpConfigError(
            f"{path}"
            + (f", line {line}" if line else "")
            + f": not JSON ({getattr(exc, 'msg', exc)})"
        ) from None
    if value is None or _deeper_than(value, MAX_DEPTH):
        raise McpConfigError(f"{path}: nested deeper than {MAX_DEPTH} levels")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels (no recursion:
    the value may be as deep as the parser allows)."""
    level = [value]
    for _ in range(limit):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not any(isinstance(item, dict | list) for item in level):
            return False
    return any(isinstance(item, dict | list) for item in level)


def load_servers(path: Path | None = None) -> dict[str, ServerSpec]:
    """The user's servers by name (none when there is no file)."""
    path = path or servers_path()
    if not path.exists():
        return {}
    data = read_json_file(path)
    if data == {}:
        return {}
    return servers_from_json(data, str(path))


def save_servers(servers: Iterable[ServerSpec], path: Path | None = None) -> Path:
    """Write the user's servers (atomically, private to the user)."""
    from jupyter_percent_agent.format import write_text

    path = path or servers_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    table = {s.name: s.to_json() for s in sorted(servers, key=lambda s: s.name)}
    write_text(path, json.dumps({"mcpServers": table}, indent=2) + "\n", mode=0o600)
    os.chmod(path, 0o600)
    return path


def add_server(spec: ServerSpec, *, replace: bool = False, path: Path | None = None) -> Path:
    """Add (or with ``replace``, change) one server; ``McpConfigError`` if the name is taken."""
    return add_servers([spec], replace=replace, path=path)


def add_servers(
    specs: Iterable[ServerSpec], *, replace: bool = False, path: Path | None = None
) -> Path:
    """Add (or with ``replace``, change) these servers in one write; ``McpConfigError`` if
    a name is taken (then nothing is written)."""
    servers = load_servers(path)
    for spec in specs:
        check_name(spec.name)
        if spec.name in servers and not replace:
            raise McpConfigError(
                f"an MCP server named {spec.name!r} exists: remove it first, or pass --replace"
            )
        servers[spec.name] = spec
    return save_servers(servers.values(), path)


def mark_untrusted_ok(name: str, path: Path | None = None) -> ServerSpec | None:
    """Mark the user's server ``name`` as usable from untrusted folders (its definition
    unchanged); None when there is no server of that name."""
    servers = load_servers(path)
    if name not in servers:
        return None
    servers[name] = dataclasses.replace(servers[name], untrusted_ok=True)
    save_servers(servers.values(), path)
    return servers[name]


def remove_server(name: str, path: Path | None = None) -> bool:
    """Forget one server; False when there was none of that name."""
    servers = load_servers(path)
    if servers.pop(name, None) is None:
        return False
    save_servers(servers.values(), path)
    return True


PROJECT_FILE = ".mcp.json"
FRONT_MATTER_KEY = "mcp"


def _block_table(block: Any) -> Any:
    """A file's ``mcp:`` block as an ``mcpServers`` document (both shapes are taken)."""
    return block if isinstance(block, Mapping) and "mcpServers" in block else {"mcpServers": block}


def defined_names(front_matter: Mapping[str, Any], folder: Path | None) -> dict[str, str]:
    """The names of the servers a file and its folder define (``.mcp.json`` beside it, the
    file's ``mcp:`` block), each with what defines it in words; read without judging the
    entries, for a folder whose configuration is ignored. A configuration that cannot be
    read names nothing."""
    found: dict[str, str] = {}
    sources = []
    if folder is not None and (folder / PROJECT_FILE).is_file():
        sources.append((f"the {PROJECT_FILE} beside the file",
                        lambda: read_json_file(folder / PROJECT_FILE)))
    if front_matter.get(FRONT_MATTER_KEY) is not None:
        sources.append(("the file's mcp: block",
                        lambda: _block_table(front_matter[FRONT_MATTER_KEY])))
    for words, read in sources:
        try:
            table = server_table(read(), words)
        except McpConfigError:
            continue
        for name in table:
            if isinstance(name, str) and NAME_RULE.fullmatch(name):
                found[name] = words  # the file's block wins, as in file_servers
    return found


def file_servers(front_matter: Mapping[str, Any], folder: Path | None) -> dict[str, ServerSpec]:
    """The servers a file and its folder define (only ever asked for a trusted folder):
    ``.mcp.json`` beside the file, then the file's ``mcp:`` block (``{NAME: {...}}`` or
    ``{mcpServers: {...}}``), a later one replacing an earlier one of the same name."""
    out: dict[str, ServerSpec] = {}
    if folder is not None and (folder / PROJECT_FILE).is_file():
        out.update(
            servers_from_json(read_json_file(folder / PROJECT_FILE), str(folder / PROJECT_FILE))
        )
    block = front_matter.get(FRONT_MATTER_KEY)
    if block is not None:
        if not isinstance(block, Mapping):
            raise McpConfigError("the file's mcp: block must map server names to entries")
        out.update(servers_from_json(_block_table(block), "the file's mcp: block"))
    return out
