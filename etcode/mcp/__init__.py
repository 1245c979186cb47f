"""MCP servers as tools: ``"mcp": {"name": {...}}`` in ``etcode.json``.

Nothing here imports the ``mcp`` SDK at module level: it is imported (in a worker
thread) only when a configured server is started, because it takes most of a second.
"""

from __future__ import annotations

from etcode.mcp.config import McpServerSpec, server_specs
from etcode.mcp.manager import McpManager, start_mcp
from etcode.mcp.naming import tool_name

__all__ = ["McpManager", "McpServerSpec", "server_specs", "start_mcp", "tool_name"]
