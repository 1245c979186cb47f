"""Tools given as dicts, in the agent-loop design's shape::

    {"name": "add", "description": "Add two numbers.",
     "parameters": {"type": "object", "properties": {"a": {"type": "number"}, ...}},
     "function": add}

The JSON schema is the model's as given; arguments are checked against it (``jsonschema``)
before the function (sync or async) is called with them as keywords.
"""

from __future__ import annotations

from collections.abc import Callable

from etcode.provider.types import ToolSchema
from etcode.tools.base import (
    FunctionTool,
    InstanceTool,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    as_tool_result,
    call_function,
)
from etcode.util.json_types import JsonObject

EMPTY_OBJECT: JsonObject = {"type": "object", "properties": {}}


class DictTool(InstanceTool):
    """A tool from a ``{"name", "description", "parameters", "function"}`` dict."""

    def __init__(self, spec: JsonObject) -> None:
        name = spec.get("name")
        function = spec.get("function")
        if not isinstance(name, str) or not name:
            raise TypeError('a tool dict needs a "name" (a non-empty string)')
        if not callable(function):
            raise TypeError(f'tool {name!r}: "function" must be a callable')
        parameters = spec.get("parameters", EMPTY_OBJECT)
        if not isinstance(parameters, dict):
            raise TypeError(f'tool {name!r}: "parameters" must be a JSON schema object')
        unknown = set(spec) - {"name", "description", "parameters", "function", "read_only"}
        if unknown:
            raise TypeError(f"tool {name!r}: unknown keys {sorted(unknown)}")
        from jsonschema import validators  # type: ignore[import-untyped]

        validator_class = validators.validator_for(parameters)
        try:
            validator_class.check_schema(parameters)
        except Exception as err:  # jsonschema.SchemaError: say which tool, in one line
            raise TypeError(
                f'tool {name!r}: "parameters" is not a valid JSON schema: {err.args[0]}'
            ) from None
        self._name = name
        self._description = str(spec.get("description") or name)
        self._read_only = bool(spec.get("read_only", False))
        self.function: Callable[..., object] = function
        self.parameters = {**EMPTY_OBJECT, **parameters}
        self._validator = validator_class(self.parameters)

    def _build_schema(self) -> ToolSchema:
        return ToolSchema(self._name, self._description, self.parameters)

    def parse(self, arguments: JsonObject) -> JsonObject:  # type: ignore[override]
        problems = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.path))
        if problems:
            where = ["/".join(str(p) for p in e.path) or "arguments" for e in problems]
            text = "; ".join(f"{w}: {e.message}" for w, e in zip(where, problems, strict=True))
            raise ToolError(f"Invalid arguments for {self._name}: {text}")
        return dict(arguments)

    async def run(self, params: JsonObject, ctx: ToolContext) -> ToolResult:
        return as_tool_result(await call_function(self.function, dict(params)))


def as_tool(item: Tool | JsonObject | Callable[..., object]) -> Tool:
    """A :class:`Tool` from what a caller passes in ``tools=``: a Tool as it is, a dict in the
    design's shape, or a typed function (as ``@tool`` makes it)."""
    if isinstance(item, Tool):
        return item
    if isinstance(item, dict):
        return DictTool(item)
    if callable(item):
        return FunctionTool(item)
    raise TypeError(f"a tool must be a Tool, a dict or a function, not {type(item).__name__}")
