"""The ``Tool`` base class, the context a tool runs in, and tools from plain functions.

A tool declares a pydantic model of its parameters (the JSON schema the model sees is
generated from it), whether it is read-only (read-only calls may run concurrently),
and two one-line summary generators used by every front end:
``● Name (params_summary)`` and ``  └ result_summary``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, TypeAlias, cast, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from etcode.contract.tools import (
    PermissionCheck,
    PermissionDecide,
    PermissionDenied,
    ToolContext,
    ToolError,
    ToolParams,
    ToolResult,
)
from etcode.provider.types import ToolSchema
from etcode.util.json_types import JsonObject

__all__ = [
    "EmptyParams",
    "FunctionTool",
    "InstanceTool",
    "PermissionCheck",
    "PermissionDecide",
    "PermissionDenied",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "as_tool_result",
    "call_function",
    "tool",
]


#: ``create_model``'s field definitions as pydantic types them: ``{name: (annotation,
#: FieldInfo)}`` with ``Any`` values (its own keywords, ``__config__``…, share the mapping).
FieldDefinitions: TypeAlias = dict[str, Any]


class EmptyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tool:
    """Base class of every tool. Subclasses set ``name``, ``description``, ``Params``,
    ``is_read_only`` and implement :meth:`run`. The optional abilities the scheduler asks
    about (:class:`etcode.contract.tools.ToolAbilities`) have their defaults here:
    ``checks_permission`` and :meth:`is_read_only_call`."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Params: ClassVar[type[BaseModel]] = EmptyParams
    is_read_only: ClassVar[bool] = False
    #: True when :meth:`run` asks ``ctx.check_permission`` itself (with its own
    #: permission names and patterns). For every other tool the scheduler checks the
    #: tool's name with pattern ``"*"`` before running it (``"time_*": "allow"``).
    checks_permission: ClassVar[bool] = False

    def is_read_only_call(self, arguments: JsonObject) -> bool:
        """Whether this call may run alongside other read-only calls. Default:
        ``is_read_only``; a tool whose answer depends on the arguments overrides it."""
        return self.is_read_only

    def schema(self) -> ToolSchema:
        """The tool as the model sees it (computed once per tool object)."""
        cached = self.__dict__.get("_schema_cache")
        if cached is not None:
            return cast(ToolSchema, cached)
        schema = self._build_schema()
        self.__dict__["_schema_cache"] = schema
        return schema

    def _build_schema(self) -> ToolSchema:
        params = self.Params.model_json_schema()
        params.pop("title", None)
        params.setdefault("properties", {})
        params.setdefault("type", "object")
        return ToolSchema(self.name, self.description, params)

    def parse(self, arguments: JsonObject) -> BaseModel:
        """Validate raw arguments. Raises :class:`ToolError` with a readable message."""
        try:
            return self.Params.model_validate(arguments)
        except ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in err.errors()
            )
            raise ToolError(f"Invalid arguments for {self.name}: {problems}") from None

    async def run(self, params: ToolParams, ctx: ToolContext) -> ToolResult:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- the agent-loop design's Tool interface ---------------------------------------
    def to_openai_schema(self) -> JsonObject:
        """The tool in OpenAI's function-calling shape: ``{"type": "function", "function":
        {"name", "description", "parameters"}}``."""
        schema = self.schema()
        function: JsonObject = {
            "name": schema.name,
            "description": schema.description,
            "parameters": schema.parameters,
        }
        return {"type": "function", "function": function}

    async def execute(self, arguments: JsonObject, ctx: ToolContext | None = None) -> str:
        """Run the tool outside an agent, as the design's ``Tool.execute``: the arguments are
        validated (and coerced: ``"3"`` for an integer) as in a run, and a failure comes back
        as its text, not raised. ``ctx`` defaults to the current directory with every
        permission allowed: the caller is the one running it."""
        if ctx is None:
            here = Path.cwd()
            ctx = ToolContext(session_id="", call_id="", directory=here, worktree=here)
        try:
            result = await self.run(self.parse(arguments), ctx)
        except ToolError as err:
            return str(err) or f"{self.name} failed"
        except Exception as err:  # as the scheduler says it to the model
            return f"{self.name} failed: {type(err).__name__}: {err}"
        return result.output

    # ---- display -----------------------------------------------------------------
    def params_summary(self, params: JsonObject) -> str:
        """Text inside ``● Name (...)``. Default: the first short string argument."""
        for value in params.values():
            if isinstance(value, str) and value:
                return _one_line(value)
        return ""

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        """Text after ``└``. Default: the first line of the output, or its line count."""
        if result.summary:
            return result.summary
        if result.is_error:
            return _one_line(result.output) or "Error"
        lines = result.output.splitlines()
        if len(lines) <= 1:
            return _one_line(result.output) or "Done"
        return f"{len(lines)} lines of output"


def _one_line(text: str, width: int = 80) -> str:
    """The first line of ``text`` cut to ``width``, secrets redacted before the cut."""
    from etcode.security.redact import redact

    text = redact(text)
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[: width - 1] + "…"


# ---- tools from plain functions ---------------------------------------------------


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {param: description}) of a Google, NumPy, reST or Epydoc docstring
    (docstring-parser detects the style). A docstring it cannot read is all description."""
    if not doc.strip():
        return "", {}
    from docstring_parser import ParseError, parse

    try:
        parsed = parse(doc)
    except ParseError:
        return inspect.cleandoc(doc), {}
    parts = (parsed.short_description, parsed.long_description)
    description = "\n\n".join(part.strip() for part in parts if part and part.strip())
    params = {item.arg_name: " ".join(item.description.split()) for item in parsed.params if item.description}
    return description, params


class InstanceTool(Tool):
    """A tool whose name, description and read-only flag are set per object (``_name``,
    ``_description``, ``_read_only``) rather than per class: function and MCP tools."""

    _name: str = ""
    _description: str = ""
    _read_only: bool = False

    # Instance attributes shadow the ClassVars of Tool for this one object.
    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    @property
    def description(self) -> str:  # type: ignore[override]
        return self._description

    @property
    def is_read_only(self) -> bool:  # type: ignore[override]
        return self._read_only


class FunctionTool(InstanceTool):
    """A tool made from a typed Python function (sync or async)."""

    def __init__(
        self,
        func: Callable[..., object],
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
    ) -> None:
        self.func = func
        self._name = name or func.__name__
        doc_description, doc_params = _parse_docstring(func.__doc__ or "")
        self._description = description or doc_description or self._name
        self._read_only = read_only
        self._context_param: str | None = None
        hints = get_type_hints(func)
        fields: dict[str, tuple[object, FieldInfo]] = {}
        for pname, param in inspect.signature(func).parameters.items():
            annotation = hints.get(pname, object)  # unannotated: pydantic accepts anything for object
            if annotation is ToolContext:
                self._context_param = pname
                continue
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, Field(default, description=doc_params.get(pname)))
        definitions: FieldDefinitions = dict(fields)
        self._params_model: type[BaseModel] = create_model(
            f"{self._name}Params", __config__=ConfigDict(extra="forbid"), **definitions
        )

    @property
    def Params(self) -> type[BaseModel]:  # type: ignore[override]  # noqa: N802
        return self._params_model

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself (no validation, no context): a ``@tool`` function, and a
        ``@tool`` method as type checkers see it, stays callable as written."""
        return self.func(*args, **kwargs)

    @property
    def function(self) -> Callable[..., object]:
        """The function the tool calls (the design's name of :attr:`func`)."""
        return self.func

    @property
    def parameters(self) -> JsonObject:
        """The JSON schema of the arguments, as the model sees it."""
        return self.schema().parameters

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (a plain one runs in a thread)."""
        return inspect.iscoroutinefunction(self.func)

    async def run(self, params: BaseModel, ctx: ToolContext) -> ToolResult:
        # dict(model) keeps each field as validated: a pydantic-model parameter arrives as
        # that model's instance, not as a dict (model_dump would turn it into one).
        kwargs = dict(params)
        if self._context_param:
            kwargs[self._context_param] = ctx
        return as_tool_result(await call_function(self.func, kwargs))


async def call_function(func: Callable[..., object], kwargs: dict[str, object]) -> object:
    """Call a tool function: a coroutine function is awaited, a plain one runs in a worker
    thread (it may block)."""
    if inspect.iscoroutinefunction(func):
        return await cast(Awaitable[object], func(**kwargs))
    value = await asyncio.to_thread(func, **kwargs)
    return await value if inspect.isawaitable(value) else value


def as_tool_result(value: object) -> ToolResult:
    """What a tool function returned, as a :class:`ToolResult`: as it is, ``"Done"`` for
    None, a string as it is, anything else as JSON (else ``str``)."""
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult("Done")
    if isinstance(value, str):
        return ToolResult(value)
    import json

    try:
        return ToolResult(json.dumps(value, ensure_ascii=False, default=str))
    except TypeError:
        return ToolResult(str(value))


#: Set on a method ``@tool`` marked: ``{"name", "description", "read_only"}`` as given to it.
MARK = "_etcode_tool_options"
#: The design's own mark (``True``), kept for programs that look for it.
DESIGN_MARK = "_tool_marker"


def is_method(func: Callable[..., object]) -> bool:
    """Whether ``func``'s first parameter is ``self`` or ``cls`` (``@tool`` only marks it)."""
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0] in ("self", "cls")


def mark(func: Callable[..., object], options: dict[str, Any]) -> None:
    """Mark ``func`` as a tool method with ``@tool``'s options."""
    setattr(func, MARK, options)
    setattr(func, DESIGN_MARK, True)


@overload
def tool(
    func: Callable[..., object],
    *,
    name: str | None = ...,
    description: str | None = ...,
    read_only: bool = ...,
) -> FunctionTool: ...


@overload
def tool(
    func: None = None, *, name: str | None = ..., description: str | None = ..., read_only: bool = ...
) -> Callable[[Callable[..., object]], FunctionTool]: ...


def tool(
    func: Callable[..., object] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
) -> FunctionTool | Callable[[Callable[..., object]], FunctionTool]:
    """Make a :class:`Tool` from a typed function. Use as ``@tool`` or ``@tool(read_only=True)``.
    On a method (first parameter ``self`` or ``cls``) it only marks it as a tool of its class
    and returns it unchanged: ``Agent(tools=[MyTools()])`` offers the marked methods
    (``etcode/tools/class_tools.py``).

    The JSON schema comes from the signature, the description and per-parameter help
    from the docstring (``Args:`` section). A parameter annotated ``ToolContext`` receives
    the run context and is hidden from the model.
    """

    def wrap(f: Callable[..., object]) -> FunctionTool:
        if isinstance(f, (staticmethod, classmethod)):
            kind = type(f).__name__
            raise TypeError(f"@tool goes under @{kind}, not over it (on {f.__func__.__name__})")
        if is_method(f):  # a tool class's method: marked, returned as it is (tools/class_tools.py)
            mark(f, {"name": name, "description": description, "read_only": read_only})
            return cast(FunctionTool, f)
        return FunctionTool(f, name=name, description=description, read_only=read_only)

    return wrap(func) if func is not None else wrap
