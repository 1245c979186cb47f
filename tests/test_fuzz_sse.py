"""Property tests for the SSE decoder and both stream adapters.

- Every captured transcript, in LF / CRLF / lone-CR line endings and split at arbitrary
  byte positions (inside CRLF pairs and multi-byte UTF-8 characters included), gives the
  same events and the same chunks, assembled message, usage and stop reason (or the
  same typed error) from the adapter as the whole body in one piece.
- Garbage (random bytes, random lines, well-formed JSON of the wrong shape) never raises
  anything but a :class:`ProviderError`, and what does get through is well-typed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etcode.provider.anthropic import AnthropicProvider
from etcode.provider.errors import ProviderError
from etcode.provider.openai import OpenAIProvider
from etcode.provider.spec import ProviderSpec, RetryConfig
from etcode.provider.sse import SSEDecoder, SSEEvent
from etcode.provider.types import (
    Message,
    ModelRequest,
    ReasoningDelta,
    ReasoningPart,
    RetryNotice,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    Usage,
)

FIXTURES = Path(__file__).parent / "fixtures" / "sse"
TRANSCRIPTS = sorted(FIXTURES.glob("*.sse"))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def adapter_for(name: str) -> str:
    return "anthropic" if name.startswith("anthropic") else "openai"


def decode(*chunks: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    return [e for c in chunks for e in decoder.feed(c)] + decoder.flush()


def split(raw: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(max(c, 0), len(raw)) for c in cuts})
    return [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]


def awkward_cuts(raw: bytes) -> list[int]:
    """Split points inside every CRLF pair and inside every multi-byte UTF-8 character."""
    cuts = [i + 1 for i in range(len(raw) - 1) if raw[i : i + 2] == b"\r\n"]
    cuts += [i for i, b in enumerate(raw) if 0x80 <= b < 0xC0]  # continuation bytes
    return cuts


def with_endings(raw: bytes, ending: bytes) -> bytes:
    return raw.replace(b"\r\n", b"\n").replace(b"\n", ending)


# ---- driving an adapter over httpx.MockTransport ------------------------------------------


def make(wire: str, chunks: list[bytes]) -> OpenAIProvider | AnthropicProvider:
    async def body():
        for chunk in chunks:
            yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    base = "https://api.example" + ("/v1" if wire == "openai" else "")
    spec = ProviderSpec(id=wire, type=wire, base_url=base, model="m", api_key="k")  # type: ignore[arg-type]
    cls = OpenAIProvider if wire == "openai" else AnthropicProvider
    return cls(spec, RetryConfig(max_retries=0), client)


REQUEST = ModelRequest(model="m", system=["s"], messages=[Message.user("hi")])


async def _outcome(wire: str, chunks: list[bytes]) -> tuple[list[Any], Any]:
    provider = make(wire, chunks)
    seen: list[Any] = []
    try:
        async for chunk in provider.stream(REQUEST):
            seen.append(chunk)
    except ProviderError as err:
        return seen, ("error", type(err).__name__, err.kind, str(err))
    finally:
        await provider._client.aclose()
    return seen, "ok"


def outcome(wire: str, chunks: list[bytes]) -> tuple[list[Any], Any]:
    """(every chunk yielded, "ok" or the typed error) — anything else propagates."""
    return asyncio.run(_outcome(wire, chunks))


_REFERENCE: dict[tuple[str, bytes], tuple[list[Any], Any]] = {}


def reference(name: str, raw: bytes) -> tuple[list[Any], Any]:
    key = (name, raw)
    if key not in _REFERENCE:
        _REFERENCE[key] = outcome(adapter_for(name), [raw])
    return _REFERENCE[key]


# ---- properties: valid transcripts ----------------------------------------------------------


def test_every_transcript_has_a_reference_outcome() -> None:
    for path in TRANSCRIPTS:
        chunks, result = reference(path.name, path.read_bytes())
        if result == "ok":
            assert isinstance(chunks[-1], StreamEnd), path.name
        else:
            assert result[0] == "error", path.name


@SETTINGS
@given(data=st.data())
def test_transcripts_any_chunking_any_line_ending_same_result(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(TRANSCRIPTS), label="transcript")
    original = path.read_bytes()
    expected = reference(path.name, original)
    ending = data.draw(st.sampled_from([b"\n", b"\r\n", b"\r"]), label="line ending")
    raw = with_endings(original, ending)
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=30), label="cuts")
    if data.draw(st.booleans(), label="awkward cuts"):
        cuts += awkward_cuts(raw)
    chunks = split(raw, cuts)
    assert decode(*chunks) == decode(original)
    assert outcome(adapter_for(path.name), chunks) == expected


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5),
    wire=st.sampled_from(["openai", "anthropic"]),
    ending=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    cuts=st.lists(st.integers(0, 4000), max_size=25),
    bom=st.booleans(),
)
def test_unicode_text_survives_any_split(
    texts: list[str], wire: str, ending: bytes, cuts: list[int], bom: bool
) -> None:
    """Generated streams with arbitrary Unicode (CR/LF inside JSON strings are escaped),
    split anywhere — including inside multi-byte characters — assemble to the same text."""
    events: list[tuple[str, dict[str, Any]]] = []
    if wire == "openai":
        events += [("", {"choices": [{"index": 0, "delta": {"content": t}}]}) for t in texts]
        events.append(("", {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    else:
        events.append(("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 3}}}))
        events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))  # fmt: skip
        events += [
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
            )  # fmt: skip
            for t in texts
        ]
        events.append(("message_stop", {"type": "message_stop"}))
    lines: list[str] = []
    for name, obj in events:
        if name:
            lines.append(f"event: {name}")
        lines += [f"data: {json.dumps(obj, ensure_ascii=False)}", ""]
    if wire == "openai":
        lines += ["data: [DONE]", ""]
    raw = ("\ufeff" if bom else "").encode() + "".join(line + "\n" for line in lines).encode()
    raw = with_endings(raw, ending)
    chunks = split(raw, cuts + awkward_cuts(raw))
    seen, result = outcome(wire, chunks)
    assert result == "ok"
    assert [c.text for c in seen if isinstance(c, TextDelta)] == [t for t in texts if t]
    end = seen[-1]
    assert isinstance(end, StreamEnd)
    assert end.message.text == "".join(texts)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(["data", "event", "id", "retry", ":", "x"]), st.text(max_size=8)),
        max_size=12,
    ),
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(0, 400), max_size=12),
)
def test_decoder_chunking_with_any_fields_and_line_endings(
    lines: list[tuple[str, str]], ending: str, cuts: list[int]
) -> None:
    body = "".join(
        (f":{value}" if name == ":" else f"{name}: {value}").replace("\r", "").replace("\n", "") + ending
        for name, value in lines
    )
    raw = (body + ending).encode("utf-8")
    assert decode(*split(raw, cuts + awkward_cuts(raw))) == decode(raw)


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(
        st.binary(max_size=12)
        | st.text(
            alphabet=st.sampled_from("0123456789²³٣ :\r\n\x00\ufeffdataevntryi\u2028é世"), max_size=16
        ).map(lambda t: t.encode("utf-8")),
        max_size=12,
    )
)
def test_decoder_never_raises_and_ignores_how_bytes_are_split(pieces: list[bytes]) -> None:
    events = decode(*pieces)
    assert events == decode(b"".join(pieces))
    for event in events:
        assert isinstance(event.data, str) and isinstance(event.event, str)
        assert event.retry is None or isinstance(event.retry, int)


def test_retry_field_takes_only_ascii_digits() -> None:
    assert [e.retry for e in decode("retry: ²\ndata: x\n\nretry: 12\ndata: y\n\n".encode())] == [None, 12]


def test_lone_cr_inside_a_chunk_does_not_swallow_a_later_lf() -> None:
    # a chunk ending in an incomplete line whose *previous* line ended in CR
    whole = decode(b"data: a\rdata: b\n\ndata: c\n\n")
    assert [e.data for e in whole] == ["a\nb", "c"]
    assert decode(b"data: a\rdata: b", b"\n\ndata: c\n\n") == whole


# ---- properties: garbage -------------------------------------------------------------------

VOCAB = [
    "choices", "delta", "content", "reasoning", "reasoning_content", "tool_calls", "index", "id",
    "function", "name", "arguments", "finish_reason", "usage", "prompt_tokens", "completion_tokens",
    "prompt_tokens_details", "cached_tokens", "completion_tokens_details", "reasoning_tokens",
    "x_groq", "error", "message", "type", "code", "content_block", "text", "thinking", "signature",
    "data", "input", "partial_json", "stop_reason", "input_tokens", "output_tokens",
    "cache_read_input_tokens", "cache_creation_input_tokens", "detail",
]  # fmt: skip
TYPES = [
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "ping", "error", "text", "tool_use", "server_tool_use",
    "thinking", "redacted_thinking", "text_delta", "input_json_delta", "thinking_delta",
    "signature_delta", "stop", "tool_calls", "length", "429", "²", "invalid_api_key",
]  # fmt: skip

leaves = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
    | st.sampled_from(TYPES)
)
shapes = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(VOCAB), children, max_size=5)
    ),
    max_leaves=16,
)
event_names = st.sampled_from(["", "message", "error", *TYPES[:7]])


def sse_event(name: str, data: str) -> bytes:
    head = f"event: {name}\n" if name else ""
    body = "".join(f"data: {line}\n" for line in data.split("\n"))
    return (head + body + "\n").encode("utf-8", errors="surrogatepass")


@st.composite
def garbage_stream(draw: st.DrawFn) -> bytes:
    parts: list[bytes] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            parts.append(draw(st.binary(max_size=40)))
        elif kind == 1:
            parts.append(sse_event(draw(event_names), draw(st.text(max_size=20))))
        else:
            value = draw(shapes)
            parts.append(sse_event(draw(event_names), json.dumps(value, allow_nan=True)))
    ending = draw(
        st.sampled_from([b"", b"data: [DONE]\n\n", b'event: message_stop\ndata: {"type":"message_stop"}\n\n'])
    )
    return b"".join(parts) + ending


def assert_well_typed(chunks: list[Any]) -> None:
    for chunk in chunks:
        if isinstance(chunk, TextDelta | ReasoningDelta):
            assert isinstance(chunk.text, str)
        elif isinstance(chunk, ToolCallStarted):
            assert isinstance(chunk.index, int) and chunk.index >= 0
            assert isinstance(chunk.id, str) and isinstance(chunk.name, str)
        elif isinstance(chunk, ToolCallArgsDelta):
            assert isinstance(chunk.index, int) and chunk.index >= 0
            assert isinstance(chunk.fragment, str)
        elif isinstance(chunk, StreamEnd):
            assert isinstance(chunk.stop_reason, str)
            usage = chunk.usage
            assert isinstance(usage, Usage)
            for value in usage.to_dict().values():
                assert type(value) is int and value >= 0
            for part in chunk.message.parts:
                if isinstance(part, TextPart):
                    assert isinstance(part.text, str)
                elif isinstance(part, ReasoningPart):
                    assert isinstance(part.text, str)
                    assert part.signature is None or isinstance(part.signature, str)
                    assert part.redacted_data is None or isinstance(part.redacted_data, str)
                elif isinstance(part, ToolCallPart):
                    assert all(isinstance(v, str) for v in (part.id, part.name, part.arguments))
                else:  # pragma: no cover - the adapters build only these
                    raise AssertionError(f"unexpected part {part!r}")
            json.dumps(chunk.message.to_dict())  # storable
        else:
            assert isinstance(chunk, RetryNotice)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    raw=garbage_stream(),
    wire=st.sampled_from(["openai", "anthropic"]),
    cuts=st.lists(st.integers(0, 600), max_size=6),
)
def test_garbage_raises_only_provider_errors(raw: bytes, wire: str, cuts: list[int]) -> None:
    chunks, result = outcome(wire, split(raw, cuts))  # any other exception fails the test
    assert_well_typed(chunks)
    if result == "ok":
        assert isinstance(chunks[-1], StreamEnd)


@settings(max_examples=60, deadline=None)
@given(raw=st.binary(max_size=300), wire=st.sampled_from(["openai", "anthropic"]))
def test_random_bytes_raise_only_provider_errors(raw: bytes, wire: str) -> None:
    chunks, _ = outcome(wire, [raw])
    assert_well_typed(chunks)


def test_deeply_nested_json_is_a_stream_error() -> None:
    deep = sse_event("", "[" * 100_000) + sse_event("message_start", "{" * 50_000)
    for wire in ("openai", "anthropic"):
        chunks, result = outcome(wire, [deep])
        assert result[0] == "error" and result[2] == "stream", result


def test_error_code_with_unicode_digits_is_still_a_provider_error() -> None:
    raw = sse_event("", json.dumps({"error": {"code": "²", "message": "boom"}}))
    _, result = outcome("openai", [raw])
    assert result[:2] == ("error", "ProviderError") and "boom" in result[3]


def test_wrong_shapes_that_used_to_crash() -> None:
    """Shapes found by the properties above (kept as plain regression examples)."""
    openai_cases = [
        {"choices": ["x"]},
        {"choices": [{"delta": "x"}]},
        {"choices": [{"delta": {"tool_calls": "ab"}}]},
        {"choices": [{"delta": {"tool_calls": [{"function": "f"}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": 5, "function": {"name": [1]}}]}}]},
        {"choices": [{"delta": {"content": 3}, "finish_reason": ["stop"]}]},
        {"usage": {"prompt_tokens": "12", "completion_tokens": 1e400}},
        {"error": {"code": "²", "message": "x"}},
    ]
    for obj in openai_cases:
        raw = sse_event("", json.dumps(obj)) + b"data: [DONE]\n\n"
        chunks, _ = outcome("openai", [raw])
        assert_well_typed(chunks)
    anthropic_cases = [
        {"type": "content_block_start", "index": [0], "content_block": {"type": "text"}},
        {"type": "content_block_start", "index": "1", "content_block": {"type": "text", "text": 5}},
        {"type": "content_block_start", "index": 0, "content_block": "text"},
        {"type": "content_block_delta", "index": {}, "delta": {"type": "text_delta", "text": "a"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": 1}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{"},
        },
        {"type": "message_delta", "delta": "x", "usage": {"output_tokens": "9"}},
        {"type": "message_start", "message": {"usage": {"input_tokens": True}}},
        {"type": "message_start", "message": []},
    ]
    for obj in anthropic_cases:
        raw = sse_event(obj["type"], json.dumps(obj)) + sse_event("message_stop", '{"type":"message_stop"}')
        chunks, _ = outcome("anthropic", [raw])
        assert_well_typed(chunks)


async def _http_outcome(status: int, content_type: str, body: bytes) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": content_type}, content=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    spec = ProviderSpec(id="openai", type="openai", base_url="https://api.example/v1", model="m")
    provider = OpenAIProvider(spec, RetryConfig(max_retries=0), client)
    try:
        async for _ in provider.stream(REQUEST):
            pass
    except ProviderError as err:
        return err
    finally:
        await client.aclose()
    return None


@settings(max_examples=40, deadline=None)
@given(
    status=st.sampled_from([200, 400, 401, 429, 500, 529]),
    content_type=st.sampled_from(["application/json", "text/html", "text/event-stream"]),
    body=st.one_of(st.binary(max_size=200), shapes.map(lambda v: json.dumps({"error": v}).encode())),
)
def test_any_http_answer_raises_only_provider_errors(status: int, content_type: str, body: bytes) -> None:
    asyncio.run(_http_outcome(status, content_type, body))  # anything but ProviderError fails


def test_deeply_nested_error_bodies_are_provider_errors() -> None:
    deep = ("[" * 100_000).encode()
    for status, content_type in ((500, "application/json"), (200, "application/json")):
        err = asyncio.run(_http_outcome(status, content_type, b'{"error": ' + deep))
        assert isinstance(err, ProviderError)
