"""A built-in tool offered from its catalog entry and imported on its first use."""

from __future__ import annotations

from pydantic import BaseModel

from etcode.provider.types import ToolSchema
from etcode.tools.base import InstanceTool, Tool, ToolContext, ToolResult
from etcode.tools.builtin_catalog import CatalogEntry, load_class
from etcode.util.json_types import JsonObject


class LazyTool(InstanceTool):
    """What the model and the scheduler need before a call — name, description, schema,
    read-only, whether it checks its own permissions — comes from the catalog; everything
    else imports the tool's module, builds the tool once and asks it (its own methods and
    attributes included)."""

    def __init__(self, entry: CatalogEntry) -> None:
        self.entry = entry
        self._name = entry.name
        self._description = entry.description
        self._read_only = entry.is_read_only
        self._tool: Tool | None = None

    @property
    def checks_permission(self) -> bool:  # type: ignore[override]
        return self.entry.checks_permission

    def is_read_only_call(self, arguments: JsonObject) -> bool:
        return self.tool.is_read_only_call(arguments)

    @property
    def tool(self) -> Tool:
        """The real tool (its module is imported on first access)."""
        if self._tool is None:
            self._tool = load_class(self.entry.cls)()
        return self._tool

    @property
    def Params(self) -> type[BaseModel]:  # type: ignore[override]  # noqa: N802
        return self.tool.Params

    def _build_schema(self) -> ToolSchema:
        return ToolSchema(self.entry.name, self.entry.description, self.entry.parameters)

    def parse(self, arguments: JsonObject) -> BaseModel:
        return self.tool.parse(arguments)

    async def run(self, params: BaseModel, ctx: ToolContext) -> ToolResult:
        return await self.tool.run(params, ctx)

    def params_summary(self, params: JsonObject) -> str:
        return self.tool.params_summary(params)

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        return self.tool.result_summary(params, result)

    def __getattr__(self, attribute: str) -> object:
        # Only called for what LazyTool itself lacks: a built-in tool's own extras.
        if attribute.startswith("_") or attribute in ("entry", "tool"):
            raise AttributeError(attribute)
        return getattr(self.tool, attribute)
