"""An MCP server (the SDK's MCPServer) whose tools return images: PNGs of the size asked,
drawn with Pillow."""

import io
import os

from mcp.server.mcpserver import Image, MCPServer
from PIL import Image as Picture

server = MCPServer("camera")


@server.tool()
def snapshot(width: int, height: int) -> Image:
    """A red picture of the size asked, as a PNG."""
    out = io.BytesIO()
    Picture.new("RGB", (width, height), "red").save(out, format="PNG")
    return Image(data=out.getvalue(), format="png")


@server.tool()
def noise(width: int, height: int) -> Image:
    """A picture of random pixels (a PNG that does not compress)."""
    out = io.BytesIO()
    Picture.frombytes("RGB", (width, height), os.urandom(width * height * 3)).save(out, "PNG")
    return Image(data=out.getvalue(), format="png")


if __name__ == "__main__":
    server.run("stdio")
