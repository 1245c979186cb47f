"""An MCP server's tool as an etcode ``Tool`` (``<server>_<tool>``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from etcode.mcp.results import input_schema, is_read_only, to_tool_result
from etcode.permission.rules import DEFAULTS_LAYER, Rule, Ruleset
from etcode.provider.types import ToolSchema
from etcode.tools.base import InstanceTool, Tool, ToolContext, ToolError, ToolResult
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.mcp.client import McpServer


class McpTool(InstanceTool):
    """Routes calls to the server that owns the tool. The JSON schema is the server's
    own; it is read-only only when the server marks it ``readOnlyHint``. Permissions
    are checked by the scheduler under the exposed name (``"time_*": "allow"``); one
    that is not read-only asks by default (:func:`ask_rules`)."""

    def __init__(self, server: McpServer, definition: JsonObject, exposed_name: str) -> None:
        self.server = server
        self.definition = definition
        self.remote_name = str(definition.get("name", ""))
        self._name = exposed_name
        text = definition.get("description") or definition.get("title") or self.remote_name
        self._description = f"{text.strip()}\n\n(MCP server: {server.name})"
        self._read_only = is_read_only(definition)

    def _build_schema(self) -> ToolSchema:
        return ToolSchema(self._name, self._description, input_schema(self.definition))

    def parse(self, arguments: JsonObject) -> JsonObject:  # type: ignore[override]
        """Arguments go to the server as they are (it validates them against its schema)."""
        if not isinstance(arguments, dict):
            raise ToolError(f"Invalid arguments for {self._name}: expected a JSON object")
        return arguments

    async def run(self, params: JsonObject, ctx: ToolContext) -> ToolResult:
        from etcode.mcp.client import McpCallError

        try:
            result = await self.server.call(self.remote_name, dict(params))
        except McpCallError as err:
            raise ToolError(str(err)) from None
        return to_tool_result(result, self.server.name, self.remote_name)


def ask_rules(tools: Iterable[Tool]) -> Ruleset:
    """Default rules that make each MCP tool of ``tools`` not marked ``readOnlyHint`` ask: it
    may write anywhere, and its server is not etcode's to judge. They follow the built-in
    defaults in the defaults layer, so any rule of the config or the agent that matches the
    tool's name (``"docs_write_file": "allow"``, ``"docs_*": "allow"``) decides instead."""
    return [
        Rule(tool.name, "*", "ask", DEFAULTS_LAYER)
        for tool in tools
        if isinstance(tool, McpTool) and not tool.is_read_only
    ]
