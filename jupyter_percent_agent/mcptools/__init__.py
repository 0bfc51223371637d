"""MCP servers' tools as ours: the user's servers (``config``), their connections (``host``),
and their tools as ``tools.Tool`` objects the sandbox's bridge calls like any other
(``schema``).

An agent selects servers by name in its ``tools`` list; :func:`server_tools` starts the ones
not running yet (once per process and conversation folder), lists their tools and makes each
a tool whose call goes to the server through the SDK's client session. An image in a
result is shown by the run that called the tool (``tools.show_image``): an image output of
the call's record, the model's code getting a small dict naming it. Importing this
package is cheap: the SDK is imported when a server is first started.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent.mcptools.config import (
    McpConfigError,
    ServerSpec,
    add_server,
    add_servers,
    check_name,
    load_servers,
    read_json_file,
    remove_server,
    servers_from_json,
    servers_path,
)
from jupyter_percent_agent.mcptools.host import (
    HOST,
    ListedTool,
    McpServerError,
    McpToolError,
    log_path,
)
from jupyter_percent_agent.mcptools.schema import make_tool, python_name, result_value, tool_names
from jupyter_percent_agent.tools import show_image

__all__ = [
    "HOST",
    "ListedTool",
    "McpConfigError",
    "McpServerError",
    "McpToolError",
    "ServerSpec",
    "add_server",
    "add_servers",
    "check_name",
    "list_tools",
    "load_servers",
    "log_path",
    "python_name",
    "read_json_file",
    "remove_server",
    "server_tools",
    "servers_from_json",
    "servers_path",
    "stop_all",
]


def list_tools(spec: ServerSpec, root: Path | None = None) -> list[ListedTool]:
    """The tools ``spec`` lists (the server is started if it is not running)."""
    return HOST.connect(spec, root).tools


def server_tools(
    specs: Iterable[ServerSpec], root: Path | None, taken: Iterable[str] = ()
) -> list[Any]:
    """The tools of these servers as ``tools.Tool`` objects (module: the server's name).

    ``taken``: names other tools already have; an MCP tool of the same name, or one two
    servers share, is named ``server_tool``. ``McpServerError`` names a server that did not
    start.
    """
    conns = {spec.name: HOST.connect(spec, root) for spec in specs}
    listings: Mapping[str, list[str]] = {n: [t.name for t in c.tools] for n, c in conns.items()}
    names = tool_names(listings, taken)
    out = []
    for server, conn in conns.items():
        for listed in conn.tools:
            out.append(
                make_tool(
                    server,
                    listed.name,
                    listed.description,
                    listed.input_schema,
                    listed.output_schema,
                    _caller(conn),
                    shown_name=names[(server, listed.name)],
                )
            )
    return out


def _caller(conn: Any) -> Any:
    async def call(name: str, arguments: dict[str, Any]) -> Any:
        result, output_schema = await HOST.acall(conn, name, arguments)
        # Here, in the caller's task: an image goes to the run that called the tool.
        tool = f"{conn.spec.name}.{name}"
        return result_value(result, output_schema, lambda mime, data: show_image(mime, data, tool))

    return call


def stop_all() -> None:
    """Stop every MCP server this process started."""
    HOST.stop_all()
