"""Anthropic Messages API adapter.

``POST {base_url}/v1/messages`` with ``stream: true``. Events: ``message_start`` (input
usage), ``content_block_start/delta/stop`` (``text_delta``, ``input_json_delta``,
``thinking_delta``, ``signature_delta``), ``ping``, ``message_delta`` (stop reason, output
usage), ``message_stop``; ``event: error`` fails the stream. Thinking blocks are kept with
their signature (and ``redacted_thinking`` with its data) and sent back unchanged. The
system prompt, the tools and the last message carry ``cache_control`` breakpoints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from etcode.provider.errors import StreamParseError
from etcode.provider.http_errors import error_from_payload
from etcode.provider.http_provider import RetryingHTTPProvider
from etcode.provider.shapes import as_dict, as_index, as_str, as_tokens
from etcode.provider.spec import ProviderSpec
from etcode.provider.sse import SSEEvent
from etcode.provider.types import (
    ImagePart,
    Message,
    ModelRequest,
    Part,
    ReasoningDelta,
    ReasoningPart,
    StreamChunk,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    ToolResultPart,
    Usage,
    image_label,
)
from etcode.util.json_types import JsonObject, JsonValue

__all__ = ["AnthropicProvider", "DEFAULT_MAX_TOKENS", "to_anthropic_messages", "to_anthropic_tools"]

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
_EPHEMERAL = {"type": "ephemeral"}
_NOT_BODY = frozenset({"baseURL", "apiKey", "timeout", "headers"})


def _input_of(call: ToolCallPart) -> JsonObject:
    try:
        return call.parsed_arguments()
    except ValueError:
        return {}  # the loop already answered this call with an error result


def image_block(image: ImagePart) -> JsonObject:
    """An image as a Messages API block (base64 source); one whose bytes are not loaded
    (``data`` empty) as its ``[image: NAME W×H]`` label."""
    if not image.data:
        return {"type": "text", "text": image_label(image)}
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}


def _result_content(result: ToolResultPart) -> JsonValue:
    """A tool result's ``content``: its text, or with images a list of a text block and
    image blocks."""
    if not result.images:
        return result.output
    text: list[JsonObject] = [{"type": "text", "text": result.output}] if result.output else []
    return text + [image_block(image) for image in result.images]


def _blocks(message: Message) -> list[JsonObject]:
    blocks: list[JsonObject] = []
    results = [p for p in message.parts if isinstance(p, ToolResultPart)]
    for r in results:  # tool results must open the user turn
        block: JsonObject = {"type": "tool_result", "tool_use_id": r.call_id, "content": _result_content(r)}
        if r.is_error:
            block["is_error"] = True
        blocks.append(block)
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart) and message.role != "assistant":
            blocks.append(image_block(part))
        elif isinstance(part, ReasoningPart) and message.role == "assistant":
            if part.redacted_data:
                blocks.append({"type": "redacted_thinking", "data": part.redacted_data})
            elif part.signature:  # unsigned reasoning (another provider's) cannot be sent
                blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
        elif isinstance(part, ToolCallPart) and message.role == "assistant":
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": _input_of(part)})
    return blocks


def to_anthropic_messages(messages: list[Message]) -> list[JsonObject]:
    """History as Messages API turns: tool results become ``user`` turns of
    ``tool_result`` blocks; consecutive same-role turns are merged; empty ones dropped."""
    out: list[JsonObject] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if out and out[-1]["role"] == "user":
        last = out[-1]["content"][-1]
        if last["type"] in ("text", "tool_result", "image"):
            out[-1]["content"][-1] = {**last, "cache_control": _EPHEMERAL}
    return out


def to_anthropic_tools(request: ModelRequest) -> list[JsonObject]:
    """Tool schemas; the last one carries the tools' cache breakpoint."""
    tools: list[JsonObject] = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
    ]
    if tools:
        tools[-1]["cache_control"] = _EPHEMERAL
    return tools


def _merge_usage(usage: Usage, raw: JsonObject) -> None:
    """Fold a ``usage`` object from message_start/message_delta (non-null fields win)."""
    if (value := as_tokens(raw.get("input_tokens"))) is not None:
        usage.input_tokens = value
    if (value := as_tokens(raw.get("output_tokens"))) is not None:
        usage.output_tokens = value
    if (value := as_tokens(raw.get("cache_read_input_tokens"))) is not None:
        usage.cache_read_tokens = value
    if (value := as_tokens(raw.get("cache_creation_input_tokens"))) is not None:
        usage.cache_write_tokens = value


class _Block:
    __slots__ = ("type", "text", "signature", "data", "id", "name", "ordinal", "input")

    def __init__(self, raw: JsonObject, ordinal: int = -1) -> None:
        self.type: str = as_str(raw.get("type"))
        self.text: list[str] = [as_str(raw.get("text")) or as_str(raw.get("thinking"))]
        self.signature: str = as_str(raw.get("signature"))
        self.data: str | None = raw.get("data") if isinstance(raw.get("data"), str) else None
        self.id: str = as_str(raw.get("id"))
        self.name: str = as_str(raw.get("name"))
        self.input: JsonValue = raw.get("input")
        self.ordinal = ordinal

    def part(self) -> Part | None:
        text = "".join(self.text)
        if self.type == "text":
            return TextPart(text) if text else None
        if self.type == "thinking":
            return ReasoningPart(text, signature=self.signature or None)
        if self.type == "redacted_thinking":
            return ReasoningPart("", redacted_data=self.data)
        if self.type in ("tool_use", "server_tool_use"):
            if not text and self.input:  # no deltas: the input came whole
                text = json.dumps(self.input)
            return ToolCallPart(self.id, self.name, text)
        return None


class AnthropicStream:
    """Decodes one Messages API SSE stream into chunks and the final message."""

    def __init__(self, provider: str, secret: str | None = None) -> None:
        self.provider = provider
        self.secret = secret
        self.done = False
        self.stop_reason: str | None = None
        self.usage = Usage()
        self.blocks: dict[int, _Block] = {}
        self.n_calls = 0

    @property
    def complete(self) -> bool:
        return self.done

    def handle(self, event: SSEEvent) -> Iterable[StreamChunk]:
        try:
            obj = json.loads(event.data)
        except (ValueError, RecursionError) as exc:
            raise StreamParseError(
                f"{self.provider}: invalid JSON in {event.event} event: {event.data[:80]}",
                provider=self.provider,
            ) from exc
        if not isinstance(obj, dict):
            return []
        try:
            return self._chunks(obj, event.event)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError, RecursionError) as exc:
            # a shape the readers do not expect: fail as a stream error, never a crash
            raise StreamParseError(
                f"{self.provider}: unexpected data in {event.event} event ({type(exc).__name__}): "
                f"{event.data[:80]}",
                provider=self.provider,
            ) from exc

    def _chunks(self, obj: JsonObject, event_name: str) -> list[StreamChunk]:
        kind = as_str(obj.get("type")) or event_name
        if kind == "error" or event_name == "error":
            raise error_from_payload(self.provider, obj, secret=self.secret)
        if kind == "content_block_delta":
            index = as_index(obj.get("index"))
            return self._delta(0 if index is None else index, as_dict(obj.get("delta")))
        if kind == "content_block_start":
            index = as_index(obj.get("index"))
            return self._start(
                len(self.blocks) if index is None else index, as_dict(obj.get("content_block"))
            )
        if kind == "message_start":
            _merge_usage(self.usage, as_dict(as_dict(obj.get("message")).get("usage")))
        elif kind == "message_delta":
            self.stop_reason = as_str(as_dict(obj.get("delta")).get("stop_reason")) or self.stop_reason
            _merge_usage(self.usage, as_dict(obj.get("usage")))
        elif kind == "message_stop":
            self.done = True
        return []  # ping, content_block_stop and unknown events

    def _start(self, index: int, raw: JsonObject) -> list[StreamChunk]:
        block = _Block(raw)
        self.blocks[index] = block
        if block.type in ("tool_use", "server_tool_use"):
            block.ordinal = self.n_calls
            self.n_calls += 1
            return [ToolCallStarted(block.ordinal, block.id, block.name)]
        first = block.text[0]
        if first and block.type == "text":
            return [TextDelta(first)]
        if first and block.type == "thinking":
            return [ReasoningDelta(first)]
        return []

    def _delta(self, index: int, delta: JsonObject) -> list[StreamChunk]:
        block = self.blocks.get(index)
        if block is None:  # a delta without its start: treat as a text block
            block = self.blocks[index] = _Block({"type": "text"})
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = as_str(delta.get("text"))
            block.text.append(text)
            return [TextDelta(text)] if text else []
        if dtype == "input_json_delta":
            fragment = as_str(delta.get("partial_json"))
            block.text.append(fragment)
            return [ToolCallArgsDelta(block.ordinal, fragment)] if fragment and block.ordinal >= 0 else []
        if dtype == "thinking_delta":
            text = as_str(delta.get("thinking"))
            block.text.append(text)
            return [ReasoningDelta(text)] if text else []
        if dtype == "signature_delta":
            block.signature += as_str(delta.get("signature"))
        return []

    def end(self) -> StreamEnd:
        parts = [p for _, b in sorted(self.blocks.items()) if (p := b.part()) is not None]
        stop = self.stop_reason or ("tool_use" if self.n_calls else "end_turn")
        return StreamEnd(Message("assistant", parts), self.usage, stop)


def request_headers(spec: ProviderSpec, accept: str = "text/event-stream") -> dict[str, str]:
    """The headers of a request to Anthropic's API for ``spec`` (the key as ``x-api-key``)."""
    headers = {"anthropic-version": API_VERSION, "accept": accept, "user-agent": "etcode"}
    if spec.api_key:
        headers["x-api-key"] = spec.api_key
    headers.update({k.lower(): v for k, v in spec.headers.items()})
    return headers


class AnthropicProvider(RetryingHTTPProvider):
    """Messages API over SSE. ``spec.options`` are merged into the request body
    (e.g. ``{"thinking": {"type": "enabled", "budget_tokens": 4000}}``)."""

    terminal_event = "message_stop event"

    @property
    def url(self) -> str:
        return self.spec.base_url.rstrip("/") + "/v1/messages"

    def headers(self) -> dict[str, str]:
        return request_headers(self.spec)

    def default_max_tokens(self) -> int:
        """``max_tokens`` when the request sets none: options, then model info, then 8192."""
        info = self.spec.model_info
        limit: JsonObject = info["limit"] if isinstance(info.get("limit"), dict) else {}
        for value in (self.spec.options.get("max_tokens"), info.get("max_tokens"), limit.get("output")):
            if isinstance(value, int) and value > 0:
                return value
        return DEFAULT_MAX_TOKENS

    def build_body(self, request: ModelRequest) -> JsonObject:
        body: JsonObject = {
            "model": request.model or self.spec.model,
            "max_tokens": request.max_tokens or self.default_max_tokens(),
            "stream": True,
            "messages": to_anthropic_messages(request.messages),
        }
        system: list[JsonObject] = [{"type": "text", "text": s} for s in request.system if s and s.strip()]
        if system:
            system[-1]["cache_control"] = _EPHEMERAL
            body["system"] = system
        if request.tools:  # even with the tools off: the API wants them while the history has tool blocks
            body["tools"] = to_anthropic_tools(request)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update({k: v for k, v in self.spec.options.items() if k not in _NOT_BODY})
        body.update(request.extra)
        if "tools" not in body:
            body.pop("tool_choice", None)  # the API refuses a tool_choice without tools
        elif request.tools_off:  # tools defined, none to be called (a user's tool_choice is not this step's)
            body["tool_choice"] = {"type": "none"}
        if request.max_tokens:
            body["max_tokens"] = request.max_tokens
        thinking = body.get("thinking")
        budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
        if isinstance(budget, int) and budget >= body["max_tokens"]:
            body["max_tokens"] = budget + DEFAULT_MAX_TOKENS  # the API requires max_tokens > budget
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            body.pop("temperature", None)  # the API refuses any temperature but 1 with thinking
        return body

    def new_state(self) -> AnthropicStream:
        return AnthropicStream(self.id, self.spec.api_key)
