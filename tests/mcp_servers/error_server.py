"""A small MCP server for the error cases of the MCP tests (not a test module).

    python tests/mcp_servers/error_server.py [stdio|http PORT|hang|crash]

``stdio``/``http``: tools that answer, fail, return structured content, die mid-call;
``hang``: never answers ``initialize``; ``crash``: exits at once with a message.
"""

from __future__ import annotations

import os
import sys
import time


def build():  # type: ignore[no-untyped-def]
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2.x
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP as Server
    from mcp.types import ToolAnnotations

    server = Server("etcode-test")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return f"echo: {text}"

    @server.tool()
    def add(a: int, b: int) -> dict[str, int]:
        """Add two numbers (structured result)."""
        return {"sum": a + b}

    @server.tool()
    def fail(reason: str = "broken on purpose") -> str:
        """Always fails."""
        raise ValueError(reason)

    @server.tool(name="weird.name/tool")
    def weird() -> str:
        """A tool whose name needs sanitising."""
        return "weird ok"

    @server.tool()
    def die() -> str:
        """Kills the server in the middle of the call."""
        sys.stderr.write("error_server: dying mid-call\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    def slow(seconds: float = 30.0) -> str:
        """Sleeps before answering."""
        time.sleep(seconds)
        return "slept"

    return server


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "hang":
        while True:  # reads nothing, answers nothing
            time.sleep(3600)
    if mode == "crash":
        sys.stderr.write("error_server: missing API token, giving up\n")
        sys.exit(2)
    server = build()
    if mode == "http":
        port = int(sys.argv[2])
        try:
            server.run("streamable-http", host="127.0.0.1", port=port)
        except TypeError:  # mcp 1.x: transport settings live on the server
            server.settings.host, server.settings.port = "127.0.0.1", port
            server.run("streamable-http")
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
