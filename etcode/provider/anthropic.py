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
from typing import Any

from etcode.provider.errors import StreamParseError
from etcode.provider.retry import RetryingHTTPProvider, error_from_payload
from etcode.provider.sse import SSEEvent
from etcode.provider.types import (
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
)

__all__ = ["AnthropicProvider", "DEFAULT_MAX_TOKENS", "to_anthropic_messages", "to_anthropic_tools"]

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
_EPHEMERAL = {"type": "ephemeral"}
_NOT_BODY = frozenset({"baseURL", "apiKey", "timeout", "headers"})


def _input_of(call: ToolCallPart) -> dict[str, Any]:
    try:
        return call.parsed_arguments()
    except ValueError:
        return {}  # the loop already answered this call with an error result


def _blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    results = [p for p in message.parts if isinstance(p, ToolResultPart)]
    for r in results:  # tool results must open the user turn
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": r.call_id, "content": r.output}
        if r.is_error:
            block["is_error"] = True
        blocks.append(block)
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ReasoningPart) and message.role == "assistant":
            if part.redacted_data:
                blocks.append({"type": "redacted_thinking", "data": part.redacted_data})
            elif part.signature:  # unsigned reasoning (another provider's) cannot be sent
                blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
        elif isinstance(part, ToolCallPart) and message.role == "assistant":
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": _input_of(part)})
    return blocks


def to_anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """History as Messages API turns: tool results become ``user`` turns of
    ``tool_result`` blocks; consecutive same-role turns are merged; empty ones dropped."""
    out: list[dict[str, Any]] = []
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
        if last["type"] in ("text", "tool_result"):
            out[-1]["content"][-1] = {**last, "cache_control": _EPHEMERAL}
    return out


def to_anthropic_tools(request: ModelRequest) -> list[dict[str, Any]]:
    """Tool schemas; the last one carries the tools' cache breakpoint."""
    tools: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
    ]
    if tools:
        tools[-1]["cache_control"] = _EPHEMERAL
    return tools


def _merge_usage(usage: Usage, raw: dict[str, Any]) -> None:
    """Fold a ``usage`` object from message_start/message_delta (non-null fields win)."""
    if raw.get("input_tokens") is not None:
        usage.input_tokens = raw["input_tokens"]
    if raw.get("output_tokens") is not None:
        usage.output_tokens = raw["output_tokens"]
    if raw.get("cache_read_input_tokens") is not None:
        usage.cache_read_tokens = raw["cache_read_input_tokens"]
    if raw.get("cache_creation_input_tokens") is not None:
        usage.cache_write_tokens = raw["cache_creation_input_tokens"]


class _Block:
    __slots__ = ("type", "text", "signature", "data", "id", "name", "ordinal", "input")

    def __init__(self, raw: dict[str, Any], ordinal: int = -1) -> None:
        self.type: str = raw.get("type", "")
        self.text: list[str] = [raw.get("text") or raw.get("thinking") or ""]
        self.signature: str = raw.get("signature") or ""
        self.data: str | None = raw.get("data")
        self.id: str = raw.get("id") or ""
        self.name: str = raw.get("name") or ""
        self.input: Any = raw.get("input")
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
        except ValueError as exc:
            raise StreamParseError(
                f"{self.provider}: invalid JSON in {event.event} event: {event.data[:80]}",
                provider=self.provider,
            ) from exc
        if not isinstance(obj, dict):
            return []
        kind = obj.get("type") or event.event
        if kind == "error" or event.event == "error":
            raise error_from_payload(self.provider, obj, secret=self.secret)
        if kind == "content_block_delta":
            return self._delta(obj.get("index", 0), obj.get("delta") or {})
        if kind == "content_block_start":
            return self._start(obj.get("index", len(self.blocks)), obj.get("content_block") or {})
        if kind == "message_start":
            _merge_usage(self.usage, (obj.get("message") or {}).get("usage") or {})
        elif kind == "message_delta":
            self.stop_reason = (obj.get("delta") or {}).get("stop_reason") or self.stop_reason
            _merge_usage(self.usage, obj.get("usage") or {})
        elif kind == "message_stop":
            self.done = True
        return []  # ping, content_block_stop and unknown events

    def _start(self, index: int, raw: dict[str, Any]) -> list[StreamChunk]:
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

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamChunk]:
        block = self.blocks.get(index)
        if block is None:  # a delta without its start: treat as a text block
            block = self.blocks[index] = _Block({"type": "text"})
        dtype = delta.get("type")
        if dtype == "text_delta":
            text = delta.get("text") or ""
            block.text.append(text)
            return [TextDelta(text)] if text else []
        if dtype == "input_json_delta":
            fragment = delta.get("partial_json") or ""
            block.text.append(fragment)
            return [ToolCallArgsDelta(block.ordinal, fragment)] if fragment else []
        if dtype == "thinking_delta":
            text = delta.get("thinking") or ""
            block.text.append(text)
            return [ReasoningDelta(text)] if text else []
        if dtype == "signature_delta":
            block.signature += delta.get("signature") or ""
        return []

    def end(self) -> StreamEnd:
        parts = [p for _, b in sorted(self.blocks.items()) if (p := b.part()) is not None]
        stop = self.stop_reason or ("tool_use" if self.n_calls else "end_turn")
        return StreamEnd(Message("assistant", parts), self.usage, stop)


class AnthropicProvider(RetryingHTTPProvider):
    """Messages API over SSE. ``spec.options`` are merged into the request body
    (e.g. ``{"thinking": {"type": "enabled", "budget_tokens": 4000}}``)."""

    terminal_event = "message_stop event"

    @property
    def url(self) -> str:
        return self.spec.base_url.rstrip("/") + "/v1/messages"

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION, "accept": "text/event-stream", "user-agent": "etcode"}
        if self.spec.api_key:
            headers["x-api-key"] = self.spec.api_key
        headers.update({k.lower(): v for k, v in self.spec.headers.items()})
        return headers

    def default_max_tokens(self) -> int:
        """``max_tokens`` when the request sets none: options, then model info, then 8192."""
        info = self.spec.model_info
        limit = info.get("limit") if isinstance(info.get("limit"), dict) else {}
        for value in (self.spec.options.get("max_tokens"), info.get("max_tokens"), limit.get("output")):
            if isinstance(value, int) and value > 0:
                return value
        return DEFAULT_MAX_TOKENS

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self.spec.model,
            "max_tokens": request.max_tokens or self.default_max_tokens(),
            "stream": True,
            "messages": to_anthropic_messages(request.messages),
        }
        system = [{"type": "text", "text": s} for s in request.system if s and s.strip()]
        if system:
            system[-1]["cache_control"] = _EPHEMERAL
            body["system"] = system
        if request.tools:
            body["tools"] = to_anthropic_tools(request)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update({k: v for k, v in self.spec.options.items() if k not in _NOT_BODY})
        body.update(request.extra)
        if request.max_tokens:
            body["max_tokens"] = request.max_tokens
        thinking = body.get("thinking")
        budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
        if isinstance(budget, int) and budget >= body["max_tokens"]:
            body["max_tokens"] = budget + DEFAULT_MAX_TOKENS  # the API requires max_tokens > budget
        return body

    def new_state(self) -> AnthropicStream:
        return AnthropicStream(self.id, self.spec.api_key)
