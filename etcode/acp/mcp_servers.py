"""MCP servers a client passes with ``session/new``/``session/load``, added to the
session's config beside the configured ones (a client server wins on a name clash)."""

from __future__ import annotations

import logging
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio

log = logging.getLogger("etcode.acp")


def server_entry(server: Any) -> dict[str, Any] | None:
    """etcode's ``"mcp"`` entry for one ACP server description (None: a kind not supported)."""
    if isinstance(server, McpServerStdio):
        return {
            "type": "local",
            "command": [server.command, *server.args],
            "environment": {item.name: item.value for item in server.env},
        }
    if isinstance(server, HttpMcpServer):
        return {
            "type": "remote",
            "url": server.url,
            "headers": {item.name: item.value for item in server.headers},
        }
    return None


def with_client_servers(config: Any, servers: list[Any]) -> Any:
    """``config`` with the client's servers in its ``mcp`` section (a copy; same when none)."""
    if not servers:
        return config
    from etcode.config.schema import McpServerConfig

    merged = dict(getattr(config, "mcp", None) or {})
    for server in servers:
        entry = server_entry(server)
        if entry is None:
            log.warning("acp: MCP server %s of type %s is not supported; left out", server.name, server.type)
            continue
        merged[server.name] = McpServerConfig.model_validate(entry)
    return config.model_copy(update={"mcp": merged})
