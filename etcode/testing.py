"""Models for your own tests: no network, no keys.

``ScriptedModel`` answers with the replies you script, in order; ``TestModel`` calls the
tools on offer with minimal valid arguments, then answers. Both record what they were asked::

    from etcode import Agent
    from etcode.testing import ScriptedModel, call, reply

    model = ScriptedModel(reply(None, call("add", a=2, b=3)), "5")
    agent = Agent(llm=model, builtin_tools=False, tools=[add])
    assert agent.run_sync("2 + 3?").text == "5"
    assert model.requests[1].messages[-1]["role"] == "tool"
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from etcode.provider.chat_client import BaseLLMClient, LLMResponse, TokenUsage, ToolCall
from etcode.util.json_types import JsonArray, JsonObject, JsonValue

__all__ = [
    "ModelRequestRecord",
    "ScriptExhausted",
    "ScriptedModel",
    "TestModel",
    "arguments_for_schema",
    "call",
    "reply",
]

#: A scripted reply: a text answer, a whole response, or a function of the request.
Reply = str | LLMResponse | Callable[[list[JsonObject], list[JsonObject] | None], object]


@dataclass
class ModelRequestRecord:
    """One request a test model received (copies: later changes do not show here)."""

    messages: list[JsonObject]
    tools: list[JsonObject] | None
    kwargs: JsonObject = field(default_factory=dict)

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools or []]


class ScriptExhausted(RuntimeError):
    """A scripted model was asked more often than it has replies."""


def call(name: str, /, **arguments: JsonValue) -> ToolCall:
    """A tool call for a script (its id is filled in when it is sent)."""
    return ToolCall("", name, arguments)


def reply(text: str | None = None, *calls: ToolCall) -> LLMResponse:
    """A scripted answer: ``text`` and/or tool calls."""
    return LLMResponse(text, list(calls), TokenUsage.zero())


def _usage(messages: list[JsonObject], answer: LLMResponse) -> TokenUsage:
    """A rough count (words), so usage totals move in tests."""
    prompt = sum(len(str(m.get("content") or "").split()) for m in messages)
    completion = len((answer.content or "").split()) + sum(
        1 + len(json.dumps(c.arguments).split()) for c in answer.tool_calls
    )
    return TokenUsage(prompt, completion, prompt + completion)


class _Recording(BaseLLMClient):
    """Records requests and gives tool calls without an id one (``call_<n>``)."""

    def __init__(self) -> None:
        self.requests: list[ModelRequestRecord] = []
        self._ids = 0

    def _record(self, messages: list[JsonObject], tools: list[JsonObject] | None, kwargs: JsonObject) -> None:
        self.requests.append(ModelRequestRecord(copy.deepcopy(messages), copy.deepcopy(tools), dict(kwargs)))

    def _with_ids(self, answer: LLMResponse) -> LLMResponse:
        calls = []
        for c in answer.tool_calls:
            if not c.id:
                c = ToolCall(f"call_{self._ids}", c.name, c.arguments)
            self._ids += 1
            calls.append(c)
        return LLMResponse(answer.content, calls, answer.usage, answer.raw)


class ScriptedModel(_Recording):
    """Answers each request with the next of ``replies`` (``str``, :class:`LLMResponse`, or
    ``f(messages, tools)`` returning either, possibly async). Running out raises
    :class:`ScriptExhausted` (the run ends with an error naming it)."""

    def __init__(self, *replies: Reply) -> None:
        super().__init__()
        self.replies: list[Reply] = list(replies)

    async def chat(
        self, messages: list[JsonObject], tools: list[JsonObject] | None = None, **kwargs: JsonValue
    ) -> LLMResponse:
        self._record(messages, tools, kwargs)
        number = len(self.requests)
        if number > len(self.replies):
            raise ScriptExhausted(f"request {number}, but only {len(self.replies)} replies were scripted")
        scripted = self.replies[number - 1]
        answer = scripted(messages, tools) if callable(scripted) else scripted
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, str):
            answer = LLMResponse(answer, [], TokenUsage.zero())
        if not isinstance(answer, LLMResponse):
            raise TypeError(f"reply {number} gave {type(answer).__name__}, not a str or LLMResponse")
        if answer.usage == TokenUsage.zero():
            answer = LLMResponse(answer.content, answer.tool_calls, _usage(messages, answer), answer.raw)
        return self._with_ids(answer)


# ---- arguments from a JSON schema ---------------------------------------------------------


def _resolve(schema: JsonObject, root: JsonObject) -> JsonObject:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: JsonValue = root
        for key in ref[2:].split("/"):
            target = target.get(key, {}) if isinstance(target, dict) else {}
        return target if isinstance(target, dict) else {}
    return schema


def _value(schema: JsonValue, root: JsonObject, depth: int = 0) -> JsonValue:
    """A valid value for ``schema``: its constant, its first enum value, its first
    alternative that is not null, else the least value of its type (null past depth 20)."""
    if not isinstance(schema, dict) or depth > 20:
        return None
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    options = _options(schema)
    if options:
        return _value(options[0], root, depth + 1)
    return _value_of_type(schema, root, depth)


def _value_of_type(schema: JsonObject, root: JsonObject, depth: int) -> JsonValue:
    """The least value of the schema's type (an object when it has properties)."""
    kind = _kind(schema)
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return scalar(schema)
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [_value(schema.get("items", {}), root, depth + 1) for _ in range(count)]
    if kind == "object" or "properties" in schema:
        return arguments_for_schema(schema, root, depth + 1)
    return None if kind == "null" else "a"


def _options(schema: JsonObject) -> JsonArray:
    """The alternatives of the first ``anyOf``/``oneOf``/``allOf``, those not null if any."""
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            typed = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
            return typed or options
    return []


def _kind(schema: JsonObject) -> str:
    """The schema's type; of a list of types the first that is not null ("" for none)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return kind if isinstance(kind, str) else ""


def _string(schema: JsonObject) -> JsonValue:
    return "a" * max(1, int(schema.get("minLength", 1)))


def _number(schema: JsonObject) -> JsonValue:
    """The smallest number allowed, if positive (one above an exclusive minimum), else 0."""
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    if isinstance(low, int | float) and low > 0:
        return low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
    return 0


def _false(_schema: JsonObject) -> JsonValue:
    return False


#: The value made for a scalar type.
_SCALARS: dict[str, Callable[[JsonObject], JsonValue]] = {
    "string": _string,
    "integer": _number,
    "number": _number,
    "boolean": _false,
}


def arguments_for_schema(schema: JsonObject, root: JsonObject | None = None, depth: int = 0) -> JsonObject:
    """Minimal valid arguments for an object schema: required properties only (strings
    ``"a"``, numbers 0, booleans False, enums their first value, arrays [], objects alike)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    return {name: _value(properties.get(name, {}), root, depth) for name in required}


class TestModel(_Recording):
    """Calls the offered tools once (all, or those named in ``call_tools``) with arguments
    made from their schemas, then answers with ``custom_output_text`` or a JSON object of
    the tool results by name. Every new user message starts over."""

    __test__ = False  # not a pytest class

    def __init__(
        self, *, call_tools: Sequence[str] | Literal["all"] = "all", custom_output_text: str | None = None
    ) -> None:
        super().__init__()
        self.call_tools = call_tools
        self.custom_output_text = custom_output_text

    async def chat(
        self, messages: list[JsonObject], tools: list[JsonObject] | None = None, **kwargs: JsonValue
    ) -> LLMResponse:
        self._record(messages, tools, kwargs)
        if messages and messages[-1].get("role") == "tool":
            answer = LLMResponse(self.custom_output_text or self._summary(messages), [])
        else:
            chosen = [t["function"] for t in tools or [] if self._wanted(t["function"]["name"])]
            calls = [ToolCall("", f["name"], arguments_for_schema(f.get("parameters") or {})) for f in chosen]
            text = None if calls else (self.custom_output_text or "success (no tool calls)")
            answer = LLMResponse(text, calls)
        answer.usage = _usage(messages, answer)
        return self._with_ids(answer)

    def _wanted(self, name: str) -> bool:
        return self.call_tools == "all" or name in self.call_tools

    @staticmethod
    def _summary(messages: list[JsonObject]) -> str:
        """The results of the last round of calls, by tool name."""
        names: dict[str, str] = {}
        for m in messages:
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
        results: JsonObject = {}
        for m in reversed(messages):
            if m.get("role") != "tool":
                break
            call_id: str = m["tool_call_id"]
            results[names.get(call_id, call_id)] = m.get("content")
        return json.dumps(dict(reversed(results.items())))
