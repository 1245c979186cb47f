"""Tools given as dicts, in the agent-loop design's shape::

    {"name": "add", "description": "Add two numbers.",
     "parameters": {"type": "object", "properties": {"a": {"type": "number"}, ...}},
     "function": add}

The JSON schema is the model's as given; arguments are checked against it (``jsonschema``)
before the function (sync or async) is called with them as keywords.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

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

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

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
    design's shape, or a typed function (as ``@tool`` makes it). A tool class gives several:
    :func:`as_tools`."""
    tools = as_tools(item)
    if len(tools) != 1:
        raise TypeError(f"{_shown(item)} gives {len(tools)} tools, not one: use as_tools")
    return tools[0]


def as_tools(item: object) -> list[Tool]:
    """The tools one item of ``tools=`` gives: a Tool as it is, a dict in the design's shape, a
    typed function (as ``@tool`` makes it), or a tool class or an object of one (its ``@tool``
    methods, ``tools/class_tools.py``)."""
    from etcode.tools.class_tools import class_tools, has_tool_methods

    if isinstance(item, Tool):
        return [item]
    if isinstance(item, dict):
        return [DictTool(item)]
    if isinstance(item, type):
        if issubclass(item, Tool):
            raise TypeError(
                f"tools= takes Tool objects, not the class {item.__name__}: pass {item.__name__}()"
            )
        return class_tools(item)
    if has_tool_methods(type(item)):
        return class_tools(item)
    if callable(item):
        return [FunctionTool(item)]
    raise TypeError(
        f"a tool must be a Tool, a dict, a function or a tool class (with @tool methods), "
        f"not {type(item).__name__}"
    )


def tools_from(items: Iterable[object], taken: Iterable[Tool] = ()) -> list[Tool]:
    """The tools of every item of ``tools=``; ``TypeError`` when two of them (or one and a tool
    of ``taken``, those given before) have the same name."""
    seen = {t.name: t for t in taken}
    tools: list[Tool] = []
    for item in items:
        for made in as_tools(item):
            other = seen.get(made.name)
            if other is not None and other is not made:
                raise TypeError(f"two tools are named {made.name!r}: {_origin(other)} and {_origin(made)}")
            seen[made.name] = made
            tools.append(made)
    return tools


def _origin(made: Tool) -> str:
    """Where a tool comes from, for an error: its function's qualified name, else its class."""
    func = getattr(made, "function", None)
    qualname = getattr(func, "__qualname__", None)
    return str(qualname) if isinstance(qualname, str) else type(made).__name__


def _shown(item: object) -> str:
    return item.__name__ if isinstance(item, type) else type(item).__name__
