"""MCP servers a client passes with ``session/new``/``session/load``, added to the
session's config beside the configured ones (a client server wins on a name clash)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeAlias

from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer

from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.config.schema import Config

log = logging.getLogger("etcode.acp")

#: An MCP server as ``session/new`` describes it.
McpServer: TypeAlias = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio

#: Start-up limit for a server the editor passes (ms). ACP gives the editor no way to set
#: one, and a server started through ``npx``/``uvx`` often needs more than the 5 s that
#: suits a configured server on first start, or on a loaded machine.
CLIENT_SERVER_TIMEOUT_MS = 30_000


def server_entry(server: McpServer) -> JsonObject | None:
    """etcode's ``"mcp"`` entry for one ACP server description (None: a kind not supported)."""
    if isinstance(server, McpServerStdio):
        return {
            "type": "local",
            "command": [server.command, *server.args],
            "environment": {item.name: item.value for item in server.env},
            "timeout": CLIENT_SERVER_TIMEOUT_MS,
        }
    if isinstance(server, HttpMcpServer):
        return {
            "type": "remote",
            "url": server.url,
            "headers": {item.name: item.value for item in server.headers},
            "timeout": CLIENT_SERVER_TIMEOUT_MS,
        }
    return None


def with_client_servers(config: Config, servers: list[McpServer]) -> Config:
    """``config`` with the client's servers in its ``mcp`` section (a copy; same when none)."""
    if not servers:
        return config
    from etcode.config.schema import McpServerConfig

    merged = dict(config.mcp or {})
    for server in servers:
        entry = server_entry(server)
        if entry is None:
            log.warning("acp: MCP server %s of type %s is not supported; left out", server.name, server.type)
            continue
        merged[server.name] = McpServerConfig.model_validate(entry)
    return config.model_copy(update={"mcp": merged})
