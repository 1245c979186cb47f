"""The OpenAI Chat Completions adapter: captured transcripts and the fake server over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from etcode.provider.errors import ContextOverflowError, ProviderError
from etcode.provider.factory import make_provider
from etcode.provider.openai import OpenAIProvider, to_openai_messages
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
    )
]


def request(
    *messages: Message, system: list[str] | None = None, tools: list[ToolSchema] | None = None
) -> ModelRequest:
    return ModelRequest(
        model="fake-model",
        system=["You are etcode."] if system is None else system,
        messages=list(messages) or [Message.user("hi")],
        tools=TOOLS if tools is None else tools,
    )


async def collect(
    provider: OpenAIProvider, req: ModelRequest | None = None
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
    p = make_provider(llm.spec("openai", api_key="sk-test-secret"), FAST)
    yield p
    await p.aclose()


# ---- captured transcripts ------------------------------------------------------------


def replay(name: str, chunk: int = 7) -> tuple[OpenAIProvider, list[httpx.Request]]:
    """A provider whose client answers with a fixture transcript, in small pieces."""
    raw = (FIXTURES / name).read_bytes()
    seen: list[httpx.Request] = []

    async def body():
        for i in range(0, len(raw), chunk):
            yield raw[i : i + chunk]

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    spec = ProviderSpec(id="openai", type="openai", base_url="https://api.example/v1", model="m", api_key="k")
    return OpenAIProvider(spec, RetryConfig(max_retries=0), client), seen


async def test_fixture_plain_text() -> None:
    provider, seen = replay("openai_text.sse")
    chunks, end = await collect(provider)
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "Hello! How can I assist you today?"
    assert end.message.parts == [TextPart("Hello! How can I assist you today?")]
    assert end.stop_reason == "end_turn"
    assert (end.usage.input_tokens, end.usage.output_tokens) == (19, 10)
    assert str(seen[0].url) == "https://api.example/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer k"


async def test_fixture_parallel_tool_calls_with_fragments_and_cache() -> None:
    provider, _ = replay("openai_parallel_tools.sse", chunk=11)
    chunks, end = await collect(provider)
    started = [c for c in chunks if isinstance(c, ToolCallStarted)]
    assert [(s.index, s.id, s.name) for s in started] == [
        (0, "call_DdmO9pD3xa9XTPNJ32zg2hcA", "ReadFile"),
        (1, "call_ABDpOlGBkLCAPfhFwiJTA3Ww", "Glob"),
    ]
    assert len([c for c in chunks if isinstance(c, ToolCallArgsDelta) and c.index == 0]) == 7
    calls = end.message.tool_calls
    assert [c.parsed_arguments() for c in calls] == [{"file_path": "README.md"}, {"pattern": "**/*.py"}]
    assert end.stop_reason == "tool_use"
    u = end.usage
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens) == (1841 - 1536, 1536, 52)


async def test_fixture_deepseek_reasoning_content() -> None:
    provider, _ = replay("deepseek_reasoning.sse")
    chunks, end = await collect(provider)
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningDelta)) == "Okay, the user says hi."
    assert end.message.parts == [ReasoningPart("Okay, the user says hi."), TextPart("Hi there!")]
    assert end.usage.reasoning_tokens == 35 and end.usage.output_tokens == 40


async def test_fixture_openrouter_reasoning_with_comments() -> None:
    provider, _ = replay("openrouter_reasoning.sse", chunk=5)
    _, end = await collect(provider)
    assert end.message.parts == [ReasoningPart("The user wants 2+2."), TextPart("2 + 2 = 4")]
    assert (end.usage.input_tokens, end.usage.output_tokens) == (42, 30)


async def test_fixture_whole_calls_ollama_and_gemini_without_index() -> None:
    provider, _ = replay("ollama_tool_call.sse")
    _, end = await collect(provider)
    assert end.message.tool_calls == [ToolCallPart("call_m2yrtl1k", "ReadFile", '{"file_path":"setup.py"}')]
    provider, _ = replay("gemini_tool_calls_no_index.sse")
    chunks, end = await collect(provider)
    assert [c.arguments for c in end.message.tool_calls] == ['{"file_path":"a.py"}', '{"file_path":"b.py"}']
    assert [c.index for c in chunks if isinstance(c, ToolCallStarted)] == [0, 1]
    assert end.stop_reason == "tool_use"


async def test_fixture_error_chunk_mid_stream() -> None:
    provider, _ = replay("openrouter_error_midstream.sse")
    texts: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(request()):
            if isinstance(chunk, TextDelta):
                texts.append(chunk.text)
    assert texts == ["Let me", " look"]
    assert str(info.value) == "openai: server_error: Provider disconnected"


async def test_fixture_cut_stream_is_a_stream_error() -> None:
    provider, _ = replay("openai_cut.sse")
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.kind == "stream" and info.value.retryable
    assert "[DONE]" in str(info.value)


# ---- request conversion --------------------------------------------------------------


def test_messages_conversion() -> None:
    history = [
        Message.user("read a.txt"),
        Message(
            "assistant",
            [
                ReasoningPart("hmm"),
                TextPart("Reading."),
                ToolCallPart("c1", "ReadFile", '{"file_path":"a.txt"}'),
            ],
        ),
        Message("tool", [ToolResultPart("c1", "ReadFile", "hello"), ToolResultPart("c2", "X", "boom", True)]),
        Message("assistant", [TextPart("Done.")]),
    ]
    out = to_openai_messages(request(*history, system=["one", "", "two"]))
    assert out == [
        {"role": "system", "content": "one\n\ntwo"},
        {"role": "user", "content": "read a.txt"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "ReadFile", "arguments": '{"file_path":"a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "hello"},
        {"role": "tool", "tool_call_id": "c2", "content": "boom"},
        {"role": "assistant", "content": "Done."},
    ]


def test_body_options_and_max_tokens() -> None:
    spec = ProviderSpec(
        id="openai", type="openai", base_url="http://h/v1", model="m", options={"reasoning_effort": "low"}
    )
    req = request()
    req.max_tokens, req.temperature = 100, 0.2
    body = OpenAIProvider(spec).build_body(req)
    assert body["max_completion_tokens"] == 100 and body["temperature"] == 0.2
    assert body["reasoning_effort"] == "low"
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "ReadFile",
                "description": "Read a file.",
                "parameters": TOOLS[0].parameters,
            },
        }
    ]
    spec.id = "local"
    assert OpenAIProvider(spec).build_body(req)["max_tokens"] == 100


# ---- against the fake server ------------------------------------------------------------


async def test_plain_text(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Reply(text="Hello from the fake model, streamed in pieces.", chunk_size=5))
    chunks, end = await collect(provider)
    deltas = [c.text for c in chunks if isinstance(c, TextDelta)]
    assert (
        len(deltas) > 5
        and "".join(deltas) == end.message.text == "Hello from the fake model, streamed in pieces."
    )
    assert end.stop_reason == "end_turn"
    (rec,) = llm.requests
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == "Bearer sk-test-secret"
    assert rec.body["stream"] is True and rec.body["stream_options"] == {"include_usage": True}
    assert rec.body["messages"][0] == {"role": "system", "content": "You are etcode."}


async def test_usage_collected(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Reply(text="hi", usage=(120, 7, 80)), Reply(text="hi"))
    _, end = await collect(provider)
    assert (end.usage.input_tokens, end.usage.output_tokens, end.usage.cache_read_tokens) == (120, 7, 80)
    _, end = await collect(provider)
    assert end.usage.input_tokens > 0 and end.usage.output_tokens > 0


async def test_reasoning_is_streamed_but_not_sent_back(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Reply(text="4", reasoning="2+2 is 4"), Reply(text="ok"))
    chunks, end = await collect(provider)
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningDelta)) == "2+2 is 4"
    assert isinstance(end.message.parts[0], ReasoningPart)
    await collect(provider, request(Message.user("2+2?"), end.message, Message.user("thanks")))
    sent = json.dumps(llm.requests[1].body)
    assert "2+2 is 4" not in sent and "reasoning" not in sent


async def test_tool_call_with_fragmented_arguments(llm: FakeLLM, provider: OpenAIProvider) -> None:
    args = {"file_path": "src/etcode/main.py", "offset": 10}
    llm.script(Reply(text="Let me look.", calls=[Call("ReadFile", args, id="call_1")]))
    chunks, end = await collect(provider)
    assert [c for c in chunks if isinstance(c, ToolCallStarted)] == [ToolCallStarted(0, "call_1", "ReadFile")]
    fragments = [c.fragment for c in chunks if isinstance(c, ToolCallArgsDelta)]
    assert len(fragments) >= 3 and json.loads("".join(fragments)) == args
    assert end.message.tool_calls[0].parsed_arguments() == args
    assert end.stop_reason == "tool_use"


async def test_parallel_tool_calls_and_round_trip(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "a"}), Call("ReadFile", {"file_path": "b"})]),
        Reply(text="done"),
    )
    _, end = await collect(provider)
    calls = end.message.tool_calls
    assert [c.parsed_arguments() for c in calls] == [{"file_path": "a"}, {"file_path": "b"}]
    assert calls[0].id != calls[1].id
    results = Message("tool", [ToolResultPart(c.id, c.name, f"content of {c.id}") for c in calls])
    await collect(provider, request(Message.user("read a and b"), end.message, results))
    sent = llm.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert [t["function"]["arguments"] for t in sent[2]["tool_calls"]] == [
        '{"file_path":"a"}',
        '{"file_path":"b"}',
    ]
    assert [m["tool_call_id"] for m in sent[3:]] == [calls[0].id, calls[1].id]


async def test_invalid_json_arguments_are_kept_raw(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Reply(calls=[Call("ReadFile", '{"file_path": "a.txt"')]))
    _, end = await collect(provider)
    assert end.message.tool_calls[0].arguments == '{"file_path": "a.txt"'


async def test_429_with_retry_after_then_success(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Fault(status=429, headers={"retry-after": "0.02"}), Reply(text="ok"))
    chunks, end = await collect(provider)
    notices = [c for c in chunks if isinstance(c, RetryNotice)]
    assert len(notices) == 1 and notices[0].delay == 0.02 and "429" in notices[0].reason
    assert end.message.text == "ok" and len(llm.requests) == 2


async def test_500_then_success(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Fault(status=500), Fault(status=502, body=b"<html>Bad gateway</html>"), Reply(text="ok"))
    chunks, end = await collect(provider)
    assert [c.attempt for c in chunks if isinstance(c, RetryNotice)] == [1, 2]
    assert end.message.text == "ok" and len(llm.requests) == 3


async def test_retries_exhausted(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(*[Fault(status=503)] * 3)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.status == 503 and len(llm.requests) == 3


async def test_401_fails_fast_with_one_request(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Fault(status=401, body="Incorrect API key provided: sk-test-secret."), Reply(text="never"))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.kind == "auth" and len(llm.requests) == 1
    assert "sk-test-secret" not in str(info.value)
    assert str(info.value) == "openai: 401 invalid_api_key: Incorrect API key provided: ***."


async def test_insufficient_quota_is_not_retried(llm: FakeLLM, provider: OpenAIProvider) -> None:
    body = {
        "message": "You exceeded your current quota.",
        "type": "insufficient_quota",
        "code": "insufficient_quota",
    }
    llm.script(Fault(status=429, headers={"retry-after": "0"}, body=body), Reply(text="never"))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.kind == "quota" and len(llm.requests) == 1


async def test_x_should_retry_false_is_honoured(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Fault(status=500, headers={"x-should-retry": "false"}), Reply(text="never"))
    with pytest.raises(ProviderError):
        await collect(provider)
    assert len(llm.requests) == 1


async def test_error_event_mid_stream(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(
        Fault(error_event={"type": "server_error", "message": "The model crashed"}), Reply(text="never")
    )
    texts: list[str] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(request()):
            texts.append(getattr(chunk, "text", ""))
    assert texts and str(info.value) == "openai: server_error: The model crashed"
    assert len(llm.requests) == 1  # output was already yielded: no retry


async def test_cut_before_any_output_is_retried(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Fault(cut_after=1, reply=Reply(text="lost")), Reply(text="second try"))
    chunks, end = await collect(provider)
    assert any(isinstance(c, RetryNotice) for c in chunks)
    assert end.message.text == "second try" and len(llm.requests) == 2


async def test_cut_after_output_raises_stream_error(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(Fault(cut_after=3, reply=Reply(text="abcdefghijklmnop", chunk_size=2)), Reply(text="never"))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.kind == "stream" and len(llm.requests) == 1


async def test_cut_inside_tool_arguments(llm: FakeLLM, provider: OpenAIProvider) -> None:
    # events: role, call head, 3 argument fragments, finish, usage, [DONE] -> cut after 1 fragment
    reply = Reply(calls=[Call("WriteFile", {"file_path": "a.txt", "content": "x" * 40})])
    llm.script(Fault(cut_after=3, reply=reply))
    seen: list[StreamChunk] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(request()):
            seen.append(chunk)
    assert info.value.kind == "stream"
    assert [type(c) for c in seen] == [ToolCallStarted, ToolCallArgsDelta]


async def test_context_overflow_is_recognised(llm: FakeLLM, provider: OpenAIProvider) -> None:
    body = {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 190000 tokens.",
        "code": "context_length_exceeded",
    }
    llm.script(Fault(status=400, body=body))
    with pytest.raises(ContextOverflowError) as info:
        await collect(provider)
    assert info.value.kind == "context_overflow" and len(llm.requests) == 1


async def test_empty_queue_fails_fast(llm: FakeLLM, provider: OpenAIProvider) -> None:
    with pytest.raises(ProviderError, match="no scripted reply left") as info:
        await collect(provider)
    assert info.value.kind == "bad_request" and len(llm.requests) == 1


async def test_hang_times_out(llm: FakeLLM) -> None:
    provider = make_provider(llm.spec("openai", timeout=0.2), RetryConfig(max_retries=1, initial_delay=0.01))
    llm.script(Fault(hang=True), Reply(text="after the hang"))
    chunks, end = await collect(provider)
    assert isinstance(chunks[0], RetryNotice) and "timed out" in chunks[0].reason
    assert end.message.text == "after the hang"
    await provider.aclose()


async def test_connection_refused_is_retried_then_fails() -> None:
    with FakeLLM() as llm:
        spec = llm.spec("openai")
    provider = make_provider(spec, RetryConfig(max_retries=1, initial_delay=0.01))
    notices: list[RetryNotice] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(request()):
            if isinstance(chunk, RetryNotice):
                notices.append(chunk)
    assert info.value.kind == "connection" and len(notices) == 1
    await provider.aclose()


async def test_callable_entries_see_the_request(llm: FakeLLM, provider: OpenAIProvider) -> None:
    llm.script(lambda rec: Reply(text=f"you said {rec.body['messages'][-1]['content']}"))
    _, end = await collect(provider, request(Message.user("ping")))
    assert end.message.text == "you said ping"


async def test_cut_after_the_finish_signal_keeps_the_answer(llm: FakeLLM, provider: OpenAIProvider) -> None:
    # events: role, text, finish, usage, [DONE] -> cut after finish: only usage and [DONE] lost
    llm.script(Fault(cut_after=3, reply=Reply(text="complete")))
    _, end = await collect(provider)
    assert end.message.text == "complete" and end.stop_reason == "end_turn" and len(llm.requests) == 1


# ---- the fake server itself ---------------------------------------------------------------


def test_fake_routes_records_and_404s(llm: FakeLLM) -> None:
    llm.script(Reply(text="a"))
    with httpx.Client() as client:
        assert client.get(llm.openai_base_url + "/chat/completions").status_code == 404
        assert client.post(llm.anthropic_base_url + "/v2/other", json={}).status_code == 404
        resp = client.post(llm.openai_base_url + "/chat/completions", json={"x": 1}, headers={"X-Trace": "T"})
        assert resp.status_code == 200 and resp.text.endswith("data: [DONE]\n\n")
        assert client.post(llm.anthropic_base_url + "/v1/messages", json={}).status_code == 400
    assert [(r.path, r.body) for r in llm.requests] == [
        ("/v1/chat/completions", {"x": 1}),
        ("/v1/messages", {}),
    ]
    assert llm.requests[0].headers["x-trace"] == "T" and llm.remaining == 0


def test_fake_wire_shapes() -> None:
    from tests.fake_llm import anthropic_events, openai_events

    reply = Reply(text="hi", calls=[Call("ReadFile", {"file_path": "abcdef"})])
    oa = [json.loads(e[6:]) for _, e in openai_events(reply, ids=["call_1"], model="m")[:-1]]
    assert oa[0]["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert oa[-1]["choices"] == [] and oa[-1]["usage"]["prompt_tokens"] >= 1
    assert all(c["usage"] is None for c in oa[:-1])
    names = [e.split(b"\n")[0] for _, e in anthropic_events(reply, ids=["toolu_1"], model="m")]
    assert names[:3] == [b"event: message_start", b"event: content_block_start", b"event: ping"]
    assert names[-2:] == [b"event: message_delta", b"event: message_stop"]


async def test_fake_stops_promptly_with_a_hanging_request() -> None:
    import asyncio
    import time

    llm = FakeLLM().start()
    llm.script(Fault(hang=True))
    provider = make_provider(llm.spec("openai"), RetryConfig(max_retries=0))
    task = asyncio.create_task(collect(provider))
    while not llm.requests:
        await asyncio.sleep(0.005)
    started = time.perf_counter()
    await asyncio.to_thread(llm.stop)
    # Stopping takes up to one 0.5 s poll of the server loop; a stop held up by the open
    # stream would never end, so 10 s tells the two apart on any machine.
    assert time.perf_counter() - started < 10.0
    with pytest.raises(ProviderError) as info:
        await task
    assert info.value.kind in ("connection", "stream")
    await provider.aclose()


async def test_a_server_error_saying_the_context_overflowed_is_not_retried(
    llm: FakeLLM, provider: OpenAIProvider
) -> None:
    """Older llama.cpp builds (and some gateways) answer a prompt too long for the window with
    a 500: the same request cannot fit on a retry, so it is not sent again (a 5 MiB prompt
    went out three times) — it is the overflow it says, for the loop to handle."""
    body = {"message": "the request exceeds the available context size, try increasing it", "n_ctx": 4096}
    llm.script(Fault(status=500, body=body), Reply(text="never asked"))
    with pytest.raises(ContextOverflowError) as info:
        await collect(provider)
    assert info.value.kind == "context_overflow" and not info.value.retryable
    assert info.value.window == 4096 and len(llm.requests) == 1
