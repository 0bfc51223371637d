"""An MCP server (the SDK's MCPServer) whose tool returns an image: a PNG of the size asked,
drawn with Pillow."""

import io

from mcp.server.mcpserver import Image, MCPServer
from PIL import Image as Picture

server = MCPServer("camera")


@server.tool()
def snapshot(width: int, height: int) -> Image:
    """A red picture of the size asked, as a PNG."""
    out = io.BytesIO()
    Picture.new("RGB", (width, height), "red").save(out, format="PNG")
    return Image(data=out.getvalue(), format="png")


if __name__ == "__main__":
    server.run("stdio")
