"""The Anthropic Messages adapter: captured transcripts and the fake server over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from etcode.provider.anthropic import AnthropicProvider, to_anthropic_messages
from etcode.provider.errors import ContextOverflowError, ProviderError
from etcode.provider.factory import make_provider
from etcode.provider.spec import ProviderSpec, RetryConfig
from etcode.provider.types import (
    Message,
    ModelRequest,
    ReasoningDelta,
    ReasoningPart,
    RetryNotice,
    StreamChunk,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    ToolResultPart,
    ToolSchema,
)
from tests.fake_llm import Call, FakeLLM, Fault, Reply

FIXTURES = Path(__file__).parent / "fixtures" / "sse"
FAST = RetryConfig(max_retries=2, initial_delay=0.01, max_delay=0.05)
TOOLS = [
    ToolSchema(
        "ReadFile", "Read a file.", {"type": "object", "properties": {"file_path": {"type": "string"}}}
    ),
    ToolSchema("Glob", "Find files.", {"type": "object", "properties": {"pattern": {"type": "string"}}}),
]
EPHEMERAL = {"type": "ephemeral"}


def request(
    *messages: Message, system: list[str] | None = None, tools: list[ToolSchema] | None = None
) -> ModelRequest:
    return ModelRequest(
        model="claude-test",
        system=["You are etcode.", "Environment: linux"] if system is None else system,
        messages=list(messages) or [Message.user("hi")],
        tools=TOOLS if tools is None else tools,
    )


async def collect(
    provider: AnthropicProvider, req: ModelRequest | None = None
) -> tuple[list[StreamChunk], StreamEnd]:
    chunks = [c async for c in provider.stream(req or request())]
    ends = [c for c in chunks if isinstance(c, StreamEnd)]
    assert len(ends) == 1 and chunks[-1] is ends[0]
    return chunks, ends[0]


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
async def provider(llm: FakeLLM):
    p = make_provider(llm.spec("anthropic", api_key="sk-ant-secret"), FAST)
    yield p
    await p.aclose()


# ---- captured transcripts ------------------------------------------------------------


def replay(name: str, chunk: int = 9) -> AnthropicProvider:
    raw = (FIXTURES / name).read_bytes()

    async def body():
        for i in range(0, len(raw), chunk):
            yield raw[i : i + chunk]

    def handler(req: httpx.Request) -> httpx.Response:
        assert str(req.url) == "https://api.example/v1/messages"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    spec = ProviderSpec(
        id="anthropic", type="anthropic", base_url="https://api.example", model="m", api_key="k"
    )
    return AnthropicProvider(spec, RetryConfig(max_retries=0), client)


async def test_fixture_text_with_cache_usage() -> None:
    chunks, end = await collect(replay("anthropic_text.sse"))
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == [
        "Hello",
        "! How can",
        " I help",
        " you today?",
    ]
    assert end.message.parts == [TextPart("Hello! How can I help you today?")]
    assert end.stop_reason == "end_turn"
    u = end.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        472,
        12,
        2048,
        1024,
    )


async def test_fixture_text_then_parallel_tool_use() -> None:
    chunks, end = await collect(replay("anthropic_tool_use.sse", chunk=4))
    assert [(c.index, c.name) for c in chunks if isinstance(c, ToolCallStarted)] == [
        (0, "ReadFile"),
        (1, "Glob"),
    ]
    assert "".join(c.fragment for c in chunks if isinstance(c, ToolCallArgsDelta) and c.index == 0) == (
        '{"file_path": "src/main.py"}'
    )
    assert [type(p) for p in end.message.parts] == [TextPart, ToolCallPart, ToolCallPart]
    assert [c.parsed_arguments() for c in end.message.tool_calls] == [
        {"file_path": "src/main.py"},
        {"pattern": "**/*.md"},
    ]
    assert end.message.tool_calls[0].id == "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
    assert end.stop_reason == "tool_use" and end.usage.output_tokens == 89


async def test_fixture_thinking_signature_and_redacted() -> None:
    chunks, end = await collect(replay("anthropic_thinking.sse"))
    thinking = "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3"
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningDelta)) == thinking
    assert end.message.parts == [
        ReasoningPart(thinking, signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"),
        ReasoningPart("", redacted_data="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"),
        TextPart("27 * 453 = 12,231"),
    ]


async def test_fixture_error_event() -> None:
    texts: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in replay("anthropic_error_overloaded.sse").stream(request()):
            texts.append(getattr(chunk, "text", ""))
    assert texts == ["Working on"]
    assert str(info.value) == "anthropic: overloaded_error: Overloaded"
    assert info.value.kind == "overloaded"


async def test_fixture_cut_stream() -> None:
    with pytest.raises(ProviderError) as info:
        await collect(replay("anthropic_cut.sse"))
    assert info.value.kind == "stream" and "message_stop" in str(info.value)


# ---- request conversion --------------------------------------------------------------


def test_body_system_tools_cache_control_and_max_tokens() -> None:
    spec = ProviderSpec(id="anthropic", type="anthropic", base_url="http://h", model="m")
    body = AnthropicProvider(spec).build_body(request())
    assert body["system"] == [
        {"type": "text", "text": "You are etcode."},
        {"type": "text", "text": "Environment: linux", "cache_control": EPHEMERAL},
    ]
    assert "cache_control" not in body["tools"][0] and body["tools"][-1]["cache_control"] == EPHEMERAL
    assert body["tools"][0]["input_schema"] == TOOLS[0].parameters
    assert body["max_tokens"] == 8192 and body["stream"] is True
    assert "system" not in AnthropicProvider(spec).build_body(request(system=[]))
    assert "tools" not in AnthropicProvider(spec).build_body(request(tools=[]))


def test_max_tokens_sources() -> None:
    def max_tokens(req_max: int | None = None, **spec_kw: object) -> int:
        spec = ProviderSpec(id="a", type="anthropic", base_url="http://h", model="m", **spec_kw)  # type: ignore[arg-type]
        req = request()
        req.max_tokens = req_max
        return AnthropicProvider(spec).build_body(req)["max_tokens"]

    assert max_tokens() == 8192
    assert max_tokens(1000) == 1000
    assert max_tokens(options={"max_tokens": 4096}) == 4096
    assert max_tokens(model_info={"limit": {"output": 64000}}) == 64000
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 10000}}
    assert max_tokens(options=thinking) > 10000


def test_messages_conversion_merges_roles_and_keeps_thinking() -> None:
    history = [
        Message.user("fix it"),
        Message.user("please"),
        Message(
            "assistant",
            [
                ReasoningPart("plan", signature="sig-1"),
                ReasoningPart("", redacted_data="opaque"),
                ReasoningPart("unsigned from another provider"),
                TextPart(""),
                ToolCallPart("t1", "ReadFile", '{"file_path": "a"}'),
                ToolCallPart("t2", "ReadFile", '{"file_path": '),
            ],
        ),
        Message(
            "tool",
            [ToolResultPart("t1", "ReadFile", "text"), ToolResultPart("t2", "ReadFile", "bad json", True)],
        ),
        Message.user("and then?"),
    ]
    out = to_anthropic_messages(history)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert out[0]["content"] == [{"type": "text", "text": "fix it"}, {"type": "text", "text": "please"}]
    assert out[1]["content"] == [
        {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "t1", "name": "ReadFile", "input": {"file_path": "a"}},
        {"type": "tool_use", "id": "t2", "name": "ReadFile", "input": {}},
    ]
    assert out[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "text"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "bad json", "is_error": True},
        {"type": "text", "text": "and then?", "cache_control": EPHEMERAL},
    ]


# ---- against the fake server ------------------------------------------------------------


async def test_plain_text_and_headers(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Reply(text="Hello from a fake Claude.", chunk_size=4, usage=(50, 9, 30, 20)))
    chunks, end = await collect(provider)
    assert len([c for c in chunks if isinstance(c, TextDelta)]) > 3
    assert end.message.text == "Hello from a fake Claude." and end.stop_reason == "end_turn"
    u = end.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (50, 9, 30, 20)
    (rec,) = llm.requests
    assert rec.path == "/v1/messages"
    assert rec.headers["x-api-key"] == "sk-ant-secret"
    assert rec.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in rec.headers
    assert rec.body["system"][-1]["cache_control"] == EPHEMERAL
    assert rec.body["tools"][-1]["cache_control"] == EPHEMERAL
    assert rec.body["max_tokens"] == 8192


async def test_thinking_signature_round_trip(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(
        Reply(
            reasoning="I should read the file first.",
            signature="sig-XYZ",
            calls=[Call("ReadFile", {"file_path": "a"})],
        ),
        Reply(text="It says hello."),
    )
    chunks, first = await collect(provider)
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningDelta)) == "I should read the file first."
    assert first.message.parts[0] == ReasoningPart("I should read the file first.", signature="sig-XYZ")
    call = first.message.tool_calls[0]
    results = Message("tool", [ToolResultPart(call.id, call.name, "hello")])
    await collect(provider, request(Message.user("what does a say?"), first.message, results))
    sent = llm.requests[1].body["messages"]
    assert sent[1]["role"] == "assistant"
    assert sent[1]["content"][0] == {
        "type": "thinking",
        "thinking": "I should read the file first.",
        "signature": "sig-XYZ",
    }
    assert sent[1]["content"][1] == {
        "type": "tool_use",
        "id": call.id,
        "name": "ReadFile",
        "input": {"file_path": "a"},
    }
    assert sent[2]["content"][0]["type"] == "tool_result" and sent[2]["content"][0]["tool_use_id"] == call.id


async def test_tool_call_fragments_and_parallel_calls(llm: FakeLLM, provider: AnthropicProvider) -> None:
    calls = [
        Call("ReadFile", {"file_path": "one/two/three.py"}),
        Call("Glob", {"pattern": "**/*.md"}, id="toolu_x"),
    ]
    llm.script(Reply(text="Reading.", calls=calls))
    chunks, end = await collect(provider)
    started = [c for c in chunks if isinstance(c, ToolCallStarted)]
    assert [(s.index, s.name) for s in started] == [(0, "ReadFile"), (1, "Glob")] and started[
        1
    ].id == "toolu_x"
    assert len([c for c in chunks if isinstance(c, ToolCallArgsDelta) and c.index == 0]) >= 3
    assert [c.parsed_arguments() for c in end.message.tool_calls] == [c.arguments for c in calls]
    assert end.stop_reason == "tool_use"


async def test_raw_invalid_arguments_kept(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Reply(calls=[Call("ReadFile", "{not json")]))
    _, end = await collect(provider)
    assert end.message.tool_calls[0].arguments == "{not json"


async def test_429_with_retry_after_then_success(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Fault(status=429, headers={"retry-after-ms": "20"}), Reply(text="ok"))
    chunks, end = await collect(provider)
    (notice,) = [c for c in chunks if isinstance(c, RetryNotice)]
    assert notice.delay == 0.02 and notice.reason.startswith("anthropic: 429 rate_limit_error")
    assert end.message.text == "ok" and len(llm.requests) == 2


async def test_529_overloaded_then_success(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Fault(status=529), Reply(text="ok"))
    chunks, end = await collect(provider)
    (notice,) = [c for c in chunks if isinstance(c, RetryNotice)]
    assert notice.reason == "anthropic: 529 overloaded_error: Overloaded"
    assert end.message.text == "ok" and len(llm.requests) == 2


async def test_500_then_success(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Fault(status=500), Reply(text="ok"))
    _, end = await collect(provider)
    assert end.message.text == "ok" and len(llm.requests) == 2


async def test_401_fails_fast(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Fault(status=401), Reply(text="never"))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert str(info.value) == "anthropic: 401 authentication_error: invalid x-api-key"
    assert len(llm.requests) == 1


async def test_403_and_404_fail_fast(llm: FakeLLM, provider: AnthropicProvider) -> None:
    for status, kind in ((403, "permission"), (404, "not_found"), (400, "bad_request")):
        llm.script(Fault(status=status, headers={"x-should-retry": "true"}))
        with pytest.raises(ProviderError) as info:
            await collect(provider)
        assert info.value.kind == kind
    assert len(llm.requests) == 3


async def test_x_should_retry_false(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Fault(status=529, headers={"x-should-retry": "false"}), Reply(text="never"))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.kind == "overloaded" and len(llm.requests) == 1


async def test_error_event_mid_stream(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Fault(error_event={"type": "overloaded_error", "message": "Overloaded"}), Reply(text="never"))
    seen: list[StreamChunk] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(request()):
            seen.append(chunk)
    assert seen and all(isinstance(c, TextDelta) for c in seen)
    assert info.value.kind == "overloaded" and len(llm.requests) == 1


async def test_error_event_before_output_is_retried(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(
        Fault(error_event={"type": "overloaded_error", "message": "Overloaded"}, reply=Reply()),
        Reply(text="ok"),
    )
    chunks, end = await collect(provider)
    assert isinstance(chunks[0], RetryNotice) and end.message.text == "ok"


async def test_cut_stream(llm: FakeLLM, provider: AnthropicProvider) -> None:
    # message_start, content_block_start, ping, 2 deltas -> output yielded, then cut: no retry
    llm.script(Fault(cut_after=5, reply=Reply(text="abcdefgh", chunk_size=2)), Reply(text="never"))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.kind == "stream" and len(llm.requests) == 1


async def test_cut_inside_tool_arguments(llm: FakeLLM, provider: AnthropicProvider) -> None:
    # message_start, block start, ping, "" delta, fragment 1 -> cut
    llm.script(
        Fault(cut_after=5, reply=Reply(calls=[Call("WriteFile", {"file_path": "a", "content": "x" * 30})]))
    )
    seen: list[StreamChunk] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(request()):
            seen.append(chunk)
    assert info.value.kind == "stream"
    assert [type(c) for c in seen] == [ToolCallStarted, ToolCallArgsDelta]


async def test_cut_before_output_is_retried(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Fault(cut_after=2), Reply(text="fine"))
    _, end = await collect(provider)
    assert end.message.text == "fine" and len(llm.requests) == 2


async def test_prompt_too_long_is_context_overflow(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Fault(status=400, body="prompt is too long: 212000 tokens > 200000 maximum"))
    with pytest.raises(ContextOverflowError) as info:
        await collect(provider)
    assert (
        str(info.value)
        == "anthropic: 400 invalid_request_error: prompt is too long: 212000 tokens > 200000 maximum"
    )
    assert len(llm.requests) == 1


async def test_slow_stream_with_delays(llm: FakeLLM, provider: AnthropicProvider) -> None:
    llm.script(Reply(text="slow but steady", chunk_size=5, delay=0.005))
    _, end = await collect(provider)
    assert end.message.text == "slow but steady"
    assert json.loads(llm.requests[0].raw)["model"] == "claude-test"
