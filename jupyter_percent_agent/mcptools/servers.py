"""The user's MCP servers' tools as ``tools.Tool`` objects: started (once per process and
conversation folder) through ``host``, listed, each made a tool by ``schema``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent.mcptools.config import ServerSpec
from jupyter_percent_agent.mcptools.host import HOST, ListedTool
from jupyter_percent_agent.mcptools.schema import make_tool, result_value, tool_names
from jupyter_percent_agent.tools import show_image


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
