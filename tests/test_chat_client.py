"""A user's own LLM client (BaseLLMClient) driving a real etcode Agent, and etcode.testing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from etcode.api import Agent
from etcode.contract.events import Event
from etcode.contract.results import AgentResult
from etcode.provider.chat_client import (
    BaseLLMClient,
    ChatClientProvider,
    LLMResponse,
    TokenUsage,
    ToolCall,
    messages_from_openai,
    messages_to_openai,
)
from etcode.provider.errors import ProviderError
from etcode.provider.spec import RetryConfig
from etcode.provider.types import (
    Message,
    ModelRequest,
    RetryNotice,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    ToolResultPart,
    ToolSchema,
)
from etcode.testing import ScriptedModel, TestModel, arguments_for_schema, call, reply
from tests.fake_llm import without_environment

FAST = RetryConfig(max_retries=2, initial_delay=0.001, max_delay=0.001)


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


class Recorder(BaseLLMClient):
    """Answers from a list; remembers what it was sent."""

    def __init__(self, *answers: LLMResponse | BaseException) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]] = []

    async def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> LLMResponse:
        self.calls.append((messages, tools, kwargs))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


class MyLLM(Recorder):
    pass


def make_agent(client: Any, project: Path, retry: RetryConfig | None = None, **kw: Any) -> Agent:
    return Agent(
        "custom/my-model",
        provider=ChatClientProvider(client, retry),
        directory=project,
        store=False,
        builtin_tools=False,
        tools=[lookup],
        **kw,
    )


async def events_of(agent: Agent, task: str) -> tuple[list[Event], AgentResult]:
    events = [event async for event in agent.stream(task)]
    assert agent.last_result is not None
    return events, agent.last_result


def usage(prompt: int, completion: int) -> TokenUsage:
    return TokenUsage(prompt, completion, prompt + completion)


# ---- the design's types ---------------------------------------------------------------


def test_types_in_the_designs_shape() -> None:
    total = usage(3, 4) + usage(10, 1)
    assert total == TokenUsage(13, 5, 18)
    assert TokenUsage.zero() == TokenUsage(0, 0, 0)
    positional = LLMResponse("hi", [ToolCall("c1", "f", {"x": 1})], usage(1, 2), {"id": "raw"})
    assert positional.has_tool_calls and positional.raw == {"id": "raw"}
    assert not LLMResponse("hi").has_tool_calls
    with pytest.raises(TypeError):
        BaseLLMClient()  # type: ignore[abstract]


# ---- through an Agent -----------------------------------------------------------------


def test_plain_text_answer_with_run_sync(project: Path) -> None:
    client = MyLLM(LLMResponse("Hello from my model.", [], usage(7, 3)))
    result = make_agent(client, project).run_sync("say hello")
    assert result.text == "Hello from my model."
    assert result.stop_reason == "end_turn"
    messages, _, _ = client.calls[0]
    assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
    assert without_environment(messages[-1]["content"]) == "say hello"  # the <env> block leads it


async def test_plain_text_answer(project: Path) -> None:
    client = MyLLM(LLMResponse("Hello from my model.", [], usage(7, 3)))
    _, result = await events_of(make_agent(client, project, temperature=0.2, top_p=0.5), "say hello")
    assert result.text == "Hello from my model." and result.stop_reason == "end_turn"
    messages, tools, kwargs = client.calls[0]
    system = [m for m in messages if m["role"] == "system"]
    assert len(system) == 1 and messages[0] is system[0]
    assert [m["role"] for m in messages[1:]] == ["user"]
    assert without_environment(messages[1]["content"]) == "say hello"
    assert "<env>" in messages[1]["content"]  # the environment block, after the stable system text
    assert kwargs["temperature"] == 0.2 and kwargs["top_p"] == 0.5
    assert "model" not in kwargs


async def test_tool_call_round_trip_in_openai_format(project: Path) -> None:
    client = MyLLM(
        LLMResponse("Looking it up.", [ToolCall("call_abc", "lookup", {"key": "k1"})], usage(5, 2)),
        LLMResponse("It is value-of-k1.", [], usage(9, 4)),
    )
    events, result = await events_of(make_agent(client, project), "what is k1?")
    assert result.text == "It is value-of-k1."
    assert len(client.calls) == 2
    first_tools = client.calls[0][1]
    assert first_tools is not None
    by_name = {t["function"]["name"]: t for t in first_tools}
    assert by_name["lookup"]["type"] == "function"
    assert by_name["lookup"]["function"]["description"] == "Look a key up."
    assert by_name["lookup"]["function"]["parameters"]["required"] == ["key"]
    second = client.calls[1][0]
    assert second[-2] == {
        "role": "assistant",
        "content": "Looking it up.",
        "tool_calls": [
            {
                "id": "call_abc",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"key": "k1"}'},
            }
        ],
    }
    assert second[-1] == {"role": "tool", "tool_call_id": "call_abc", "content": "value-of-k1"}
    types = [e.type for e in events]
    assert "text_delta" in types and "tool_call_start" in types and "tool_result" in types
    assert types[-1] == "done"
    assert types.count("done") == 1
    result_event = next(e for e in events if e.type == "tool_result")
    assert result_event.call_id == "call_abc" and result_event.output == "value-of-k1"  # type: ignore[attr-defined]


async def test_usage_totals_come_from_token_usage(project: Path) -> None:
    client = MyLLM(
        LLMResponse(None, [ToolCall("c1", "lookup", {"key": "a"})], usage(100, 20)),
        LLMResponse("done", [], usage(150, 5)),
    )
    _, result = await events_of(make_agent(client, project), "go")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (250, 25)
    assert result.total_tokens == TokenUsage(250, 25, 275)


async def test_connection_errors_are_retried(project: Path) -> None:
    client = MyLLM(ConnectionError("refused"), ConnectionError("refused"), LLMResponse("ok at last"))
    events, result = await events_of(make_agent(client, project, FAST), "go")
    assert result.text == "ok at last" and result.stop_reason == "end_turn"
    retries = [e for e in events if e.type == "retry"]
    assert [r.attempt for r in retries] == [1, 2]  # type: ignore[attr-defined]
    assert retries[0].reason == "MyLLM.chat failed: ConnectionError: refused"  # type: ignore[attr-defined]
    assert len(client.calls) == 3


async def test_retries_run_out(project: Path) -> None:
    client = MyLLM(TimeoutError("slow"), TimeoutError("slow"), TimeoutError("slow"), LLMResponse("never"))
    _, result = await events_of(make_agent(client, project, FAST), "go")
    assert result.stop_reason == "error"
    assert result.error == "MyLLM.chat failed: TimeoutError: slow"
    assert len(client.calls) == 3  # the first try and max_retries=2 more


async def test_a_client_that_never_answers_times_out(project: Path) -> None:
    """A hung ``chat`` must not hang the run: it times out (retryable), then the run ends."""
    never = asyncio.Event()

    class Hung(BaseLLMClient):
        async def chat(self, messages: Any, tools: Any = None, **kwargs: Any) -> LLMResponse:
            await never.wait()
            return LLMResponse("never")

    agent = Agent(
        "custom/m",
        provider=ChatClientProvider(Hung(), RetryConfig(max_retries=1, initial_delay=0.001), timeout=0.05),
        directory=project,
        store=False,
    )
    events, result = await events_of(agent, "go")
    await agent.aclose()
    assert result.stop_reason == "error"
    assert result.error is not None and result.error.startswith("Hung.chat failed: TimeoutError")
    assert len([e for e in events if e.type == "retry"]) == 1


async def test_other_errors_end_the_run_with_one_line(project: Path) -> None:
    client = MyLLM(ValueError("bad\nthing"), LLMResponse("never"))
    events, result = await events_of(make_agent(client, project, FAST), "go")
    assert result.stop_reason == "error"
    assert result.error == "MyLLM.chat failed: ValueError: bad thing"
    assert len(client.calls) == 1  # not retried
    assert not [e for e in events if e.type == "retry"]
    assert [e.message for e in events if e.type == "error"] == [result.error]  # type: ignore[attr-defined]


async def test_a_client_returning_something_else_is_a_clear_error(project: Path) -> None:
    class Sloppy(BaseLLMClient):
        async def chat(self, messages: Any, tools: Any = None, **kwargs: Any) -> Any:
            return {"content": "a dict"}

    _, result = await events_of(make_agent(Sloppy(), project), "go")
    assert result.stop_reason == "error"
    assert result.error is not None and result.error.startswith(
        "Sloppy.chat returned dict, not an LLMResponse"
    )


# ---- the provider on its own ----------------------------------------------------------


async def chunks_of(provider: ChatClientProvider, request: ModelRequest) -> list[Any]:
    return [chunk async for chunk in provider.stream(request)]


def a_request(**kw: Any) -> ModelRequest:
    return ModelRequest(
        model="my-model",
        system=["one", "", "two"],
        messages=[Message.user("hi")],
        tools=[ToolSchema("f", "F.", {"type": "object", "properties": {}})],
        **kw,
    )


async def test_stream_chunks_for_calls_with_string_arguments_and_no_ids() -> None:
    answer = LLMResponse(
        "text",
        [
            ToolCall("", "f", '{"x": 1}'),  # type: ignore[arg-type]  # a sloppy client's JSON string
            ToolCall("", "f", {"y": [1, 2]}),
        ],
        usage(3, 2),
    )
    client = Recorder(answer)
    chunks = await chunks_of(
        ChatClientProvider(client), a_request(temperature=0.0, max_tokens=77, extra={"seed": 5})
    )
    assert chunks[0] == TextDelta("text")
    assert chunks[1:5] == [
        ToolCallStarted(0, "call_0", "f"),
        ToolCallArgsDelta(0, '{"x": 1}'),
        ToolCallStarted(1, "call_1", "f"),
        ToolCallArgsDelta(1, '{"y": [1, 2]}'),
    ]
    ends = [c for c in chunks if isinstance(c, StreamEnd)]
    assert len(ends) == 1 and chunks[-1] is ends[0]
    end = ends[0]
    assert end.stop_reason == "tool_use"
    assert end.message.parts == [
        TextPart("text"),
        ToolCallPart("call_0", "f", '{"x": 1}'),
        ToolCallPart("call_1", "f", '{"y": [1, 2]}'),
    ]
    assert (end.usage.input_tokens, end.usage.output_tokens) == (3, 2)
    messages, tools, kwargs = client.calls[0]
    assert messages == [{"role": "system", "content": "one\n\ntwo"}, {"role": "user", "content": "hi"}]
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "f",
                "description": "F.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert kwargs == {"temperature": 0.0, "max_tokens": 77, "seed": 5}


async def test_no_tools_no_content() -> None:
    client = Recorder(LLMResponse(None, [], usage(1, 0)))
    request = ModelRequest(model="m", system=[], messages=[Message.user("hi")])
    chunks = await chunks_of(ChatClientProvider(client), request)
    assert len(chunks) == 1 and isinstance(chunks[0], StreamEnd)
    assert chunks[0].stop_reason == "end_turn" and chunks[0].message.parts == []
    assert client.calls[0][1] is None  # no tools: None, as OpenAI clients expect
    assert client.calls[0][0] == [{"role": "user", "content": "hi"}]  # no empty system message


async def test_retry_notice_before_each_wait() -> None:
    client = Recorder(OSError("reset"), LLMResponse("fine"))
    chunks = await chunks_of(ChatClientProvider(client, FAST), a_request())
    assert isinstance(chunks[0], RetryNotice)
    assert chunks[0].attempt == 1 and chunks[0].reason == "Recorder.chat failed: OSError: reset"
    assert chunks[1] == TextDelta("fine")


async def test_bad_arguments_are_a_provider_error() -> None:
    client = Recorder(LLMResponse(None, [ToolCall("c", "f", ["not", "a", "dict"])]))  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match=r"^Recorder.chat returned arguments for f of type list"):
        await chunks_of(ChatClientProvider(client), a_request())


async def test_aclose_closes_the_client_when_it_can() -> None:
    class Async(Recorder):
        closed = 0

        async def aclose(self) -> None:
            self.closed += 1

    class Sync(Recorder):
        closed = 0

        def close(self) -> None:
            self.closed += 1

    first, second = Async(), Sync()
    await ChatClientProvider(first).aclose()
    await ChatClientProvider(second).aclose()
    await ChatClientProvider(Recorder()).aclose()  # nothing to close: fine
    assert (first.closed, second.closed) == (1, 1)


# ---- message conversion ---------------------------------------------------------------


def test_messages_round_trip() -> None:
    history = [
        Message.user("read a.txt and b.txt"),
        Message(
            "assistant",
            [
                TextPart("Reading."),
                ToolCallPart("c1", "ReadFile", '{"file_path": "a.txt"}'),
                ToolCallPart("c2", "ReadFile", '{"file_path": "b.txt"}'),
            ],
        ),
        Message(
            "tool", [ToolResultPart("c1", "ReadFile", "hello"), ToolResultPart("c2", "ReadFile", "boom")]
        ),
        Message("assistant", [ToolCallPart("c3", "Glob", '{"pattern": "*"}')]),
        Message("tool", [ToolResultPart("c3", "Glob", "a.txt")]),
        Message("assistant", [TextPart("Done.")]),
    ]
    dicts = messages_to_openai(history)
    assert [d["role"] for d in dicts] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert dicts[3] == {"role": "tool", "tool_call_id": "c2", "content": "boom"}
    assert dicts[4]["content"] is None
    assert messages_from_openai([{"role": "system", "content": "ignored"}, *dicts]) == history


def test_messages_from_design_style_history() -> None:
    items = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
        },
        {"role": "tool", "tool_call_id": "x", "content": "42"},
    ]
    out = messages_from_openai(items)
    assert out == [
        Message("user", [TextPart("hi there")]),
        Message("assistant", [ToolCallPart("x", "f", '{"a": 1}')]),
        Message("tool", [ToolResultPart("x", "f", "42")]),
    ]
    with pytest.raises(ValueError, match="message 0: unknown role 'robot'"):
        messages_from_openai([{"role": "robot", "content": "beep"}])
    with pytest.raises(ValueError, match="tool_call_id"):
        messages_from_openai([{"role": "tool", "content": "orphan"}])


# ---- etcode.testing -------------------------------------------------------------------


async def test_scripted_model_through_an_agent(project: Path) -> None:
    model = ScriptedModel(
        reply("Let me look.", call("lookup", key="k9")),
        lambda messages, tools: f"got {messages[-1]['content']} with {len(tools or [])} tools",
    )
    _, result = await events_of(make_agent(model, project), "k9?")
    assert result.text == "got value-of-k9 with 2 tools"  # lookup and TodoWrite
    assert len(model.requests) == 2
    sent = model.requests[1].messages
    call_id = sent[-2]["tool_calls"][0]["id"]
    assert call_id and sent[-1] == {"role": "tool", "tool_call_id": call_id, "content": "value-of-k9"}
    assert "lookup" in model.requests[0].tool_names
    assert model.requests[0].kwargs.get("max_tokens") is not None or model.requests[0].kwargs == {}
    assert result.usage.input_tokens > 0  # scripted replies get a rough count


async def test_scripted_model_running_out(project: Path) -> None:
    model = ScriptedModel("only one")
    agent = make_agent(model, project)
    _, first = await events_of(agent, "a")
    assert first.text == "only one"
    _, second = await events_of(agent, "b")
    assert second.stop_reason == "error"
    assert (
        second.error
        == "ScriptedModel.chat failed: ScriptExhausted: request 2, but only 1 replies were scripted"
    )


async def test_test_model_calls_every_tool_then_summarises(project: Path) -> None:
    model = TestModel()
    events, result = await events_of(make_agent(model, project), "go")
    called = [e.name for e in events if e.type == "tool_call_start"]  # type: ignore[attr-defined]
    assert sorted(called) == ["TodoWrite", "lookup"]
    assert json.loads(result.text)["lookup"] == "value-of-a"
    assert model.requests[1].messages[-1]["role"] == "tool"


async def test_test_model_chosen_tools_and_text(project: Path) -> None:
    model = TestModel(call_tools=["lookup"], custom_output_text="all good")
    events, result = await events_of(make_agent(model, project), "go")
    assert [e.name for e in events if e.type == "tool_call_start"] == ["lookup"]  # type: ignore[attr-defined]
    assert result.text == "all good"
    _, again = await events_of(make_agent(TestModel(call_tools=[]), project), "go")
    assert again.text == "success (no tool calls)"


def test_arguments_for_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "n": {"type": "number"},
            "i": {"type": "integer", "minimum": 3},
            "b": {"type": "boolean"},
            "e": {"enum": ["x", "y"]},
            "arr": {"type": "array", "items": {"type": "string"}},
            "opt": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
            "obj": {"$ref": "#/$defs/Inner"},
            "skipped": {"type": "string"},
        },
        "required": ["s", "n", "i", "b", "e", "arr", "opt", "obj"],
        "$defs": {"Inner": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]}},
    }
    assert arguments_for_schema(schema) == {
        "s": "a",
        "n": 0,
        "i": 3,
        "b": False,
        "e": "x",
        "arr": [],
        "opt": 0,
        "obj": {"k": "a"},
    }


def test_arguments_for_schema_less_common_shapes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "c": {"const": 7, "type": "string"},
            "either": {"type": ["null", "string"], "minLength": 2},
            "above": {"type": "number", "exclusiveMinimum": 5},
            "pair": {"type": "array", "minItems": 2, "items": {"type": "boolean"}},
            "nothing": {"type": "null"},
            "odd": {"type": "date"},
            "untyped": {"properties": {"k": {"type": "integer"}}, "required": ["k"]},
            "all": {"allOf": [{"$ref": "#/$defs/Node"}]},
        },
        "required": ["c", "either", "above", "pair", "nothing", "odd", "untyped", "all"],
        "$defs": {
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}, "required": ["next"]}
        },
    }
    arguments = arguments_for_schema(schema)
    node = arguments.pop("all")
    assert arguments == {
        "c": 7,
        "either": "aa",
        "above": 6,
        "pair": [False, False],
        "nothing": None,
        "odd": "a",
        "untyped": {"k": 0},
    }
    depth = 0  # a schema that refers to itself ends in null, not in a RecursionError
    while isinstance(node, dict):
        node, depth = node["next"], depth + 1
    assert node is None and 5 < depth < 25
