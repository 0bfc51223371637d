"""An MCP server (the SDK's MCPServer) that quotes its own credential, as API wrappers do when
they pass an upstream refusal on: ``lookup`` answers with the token from its ``env``."""

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("token")


@server.tool()
def lookup(name: str) -> str:
    """Look ``name`` up upstream."""
    return f"upstream refused {name}: token {os.environ['SERVICE_TOKEN']} expired"


if __name__ == "__main__":
    server.run("stdio")
