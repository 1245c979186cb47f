"""All configured MCP servers of a session: started together, closed together."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path

from etcode.mcp.client import McpServer
from etcode.mcp.config import McpServerSpec, server_specs
from etcode.mcp.naming import tool_name
from etcode.mcp.tool import McpTool
from etcode.util.json_types import JsonObject, JsonValue


class McpManager:
    """``await start()`` connects every enabled server concurrently, each bounded by its
    own timeout counted from the same moment; failures become :meth:`warnings`."""

    def __init__(self, specs: list[McpServerSpec], directory: Path | None = None) -> None:
        self.servers = [McpServer(spec, directory) for spec in specs]
        self._tools: list[McpTool] | None = None

    async def start(self) -> None:
        """Start every enabled server; returns when each is connected, failed or timed out."""
        began = time.monotonic()
        enabled = [server for server in self.servers if server.spec.enabled]
        await asyncio.gather(*(server.start(began + server.spec.timeout) for server in enabled))

    def warnings(self) -> list[str]:
        """One line per server that failed to start."""
        return [
            f"MCP server '{server.name}' skipped: {server.error or 'failed'}"
            for server in self.servers
            if server.status == "failed"
        ]

    def tools(self) -> list[McpTool]:
        """The tools of every connected server, as ``<server>_<tool>``, in config order."""
        if self._tools is None:
            taken: set[str] = set()
            self._tools = [
                McpTool(server, definition, tool_name(server.name, str(definition.get("name", "")), taken))
                for server in self.servers
                if server.status == "connected"
                for definition in server.tools
            ]
        return list(self._tools)

    def status(self) -> list[JsonObject]:
        """Per server: name, type, target, status, error and the exposed tool names."""
        exposed: dict[str, list[McpTool]] = {}
        for item in self.tools():
            exposed.setdefault(item.server.name, []).append(item)
        return [
            {
                "name": server.name,
                "type": server.spec.type,
                "target": server.spec.describe(),
                "status": server.status,
                "error": server.error,
                "tools": [
                    {
                        "name": t.name,
                        "tool": t.remote_name,
                        "read_only": t.is_read_only,
                        "description": t.definition.get("description") or "",
                    }
                    for t in exposed.get(server.name, [])
                ],
            }
            for server in self.servers
        ]

    async def aclose(self) -> None:
        """Close every session and stop every local server (bounded, never raises)."""
        await asyncio.gather(*(server.aclose() for server in self.servers), return_exceptions=True)


async def start_mcp(
    mcp_config: Mapping[str, JsonValue] | None, directory: Path | None = None
) -> McpManager | None:
    """Start the configured servers; None (and no SDK import) when none is enabled."""
    specs = server_specs(mcp_config)
    if not any(spec.enabled for spec in specs):
        return None
    manager = McpManager(specs, directory)
    try:
        await manager.start()
    except asyncio.CancelledError:  # nobody will get the manager to close it
        await asyncio.shield(manager.aclose())
        raise
    return manager
