"""A small MCP server with one tool that writes and one its annotations call read-only
(not a test module). ``python tests/mcp_servers/files_server.py`` speaks stdio.

``write_file(path, text)`` writes anywhere (no annotations: it may); ``read_thing()`` says
``readOnlyHint: true``.
"""

from __future__ import annotations

from pathlib import Path


def build():  # type: ignore[no-untyped-def]
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2.x
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP as Server
    from mcp.types import ToolAnnotations

    server = Server("etcode-files")

    @server.tool()
    def write_file(path: str, text: str) -> str:
        """Write text to a file."""
        Path(path).write_text(text, encoding="utf-8")
        return f"wrote {path}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def read_thing() -> str:
        """Return a fixed thing."""
        return "the thing"

    return server


if __name__ == "__main__":
    build().run("stdio")
