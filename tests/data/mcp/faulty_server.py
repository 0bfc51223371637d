"""An MCP server (the SDK's MCPServer) whose tools misbehave: one is slow, one kills it."""

import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("faulty")


@server.tool()
def slow(seconds: float) -> str:
    """Answer after some seconds."""
    time.sleep(seconds)
    return "late"


@server.tool()
def die() -> str:
    """End the server's process mid-call."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
