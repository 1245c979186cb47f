"""OpenAI Chat Completions adapter (OpenAI, OpenRouter, DeepSeek, Groq, Ollama, vLLM, ...).

``POST {base_url}/chat/completions`` with ``stream: true`` and
``stream_options.include_usage``. Tool-call deltas arrive keyed by ``index`` (id and name
only in the first delta of an index, then argument fragments); usage arrives in a last
chunk with ``choices: []``; the stream ends with ``data: [DONE]``. Reasoning comes as
``reasoning_content`` (DeepSeek) or ``reasoning`` (OpenRouter, Ollama) deltas and is not
sent back.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable

from etcode.provider.errors import StreamParseError
from etcode.provider.http_errors import error_from_payload
from etcode.provider.http_provider import RetryingHTTPProvider
from etcode.provider.openai_format import (
    TOOL_ONLY_OPTIONS,
    messages_to_openai,
    system_message,
    tools_to_openai,
)
from etcode.provider.shapes import as_dict, as_index, as_list, as_str, as_tokens
from etcode.provider.spec import ProviderSpec, hosted
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
    Usage,
)
from etcode.util.json_types import JsonObject

__all__ = ["OpenAIProvider", "to_openai_messages", "to_openai_tools"]

FINISH_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}
#: ``spec.options`` keys that configure etcode rather than the request body.
_NOT_BODY = frozenset({"baseURL", "apiKey", "timeout", "headers"})


def to_openai_messages(request: ModelRequest) -> list[JsonObject]:
    """The ``messages`` array: one system message, then the history."""
    return system_message(request.system) + messages_to_openai(request.messages)


def to_openai_tools(request: ModelRequest) -> list[JsonObject]:
    """Tool schemas as ``{"type": "function", "function": {...}}``."""
    return tools_to_openai(request.tools)


def _usage(raw: JsonObject) -> Usage:
    """Map OpenAI usage. ``input_tokens`` excludes cached tokens (as Anthropic counts)."""
    prompt = as_tokens(raw.get("prompt_tokens")) or 0
    cached = as_tokens(as_dict(raw.get("prompt_tokens_details")).get("cached_tokens")) or 0
    reasoning = as_tokens(as_dict(raw.get("completion_tokens_details")).get("reasoning_tokens")) or 0
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=as_tokens(raw.get("completion_tokens")) or 0,
        cache_read_tokens=cached,
        reasoning_tokens=reasoning,
    )


class _Call:
    __slots__ = ("id", "name", "args", "ordinal")

    def __init__(self, id: str, name: str, ordinal: int) -> None:
        self.id, self.name, self.ordinal = id, name, ordinal
        self.args: list[str] = []


class OpenAIStream:
    """Decodes one Chat Completions SSE stream into chunks and the final message."""

    def __init__(self, provider: str, secret: str | None = None) -> None:
        self.provider = provider
        self.secret = secret
        self.done = False
        self.finish: str | None = None
        self.usage = Usage()
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, _Call] = {}
        self._last_key: int | None = None

    @property
    def complete(self) -> bool:
        return self.done or self.finish is not None

    def handle(self, event: SSEEvent) -> Iterable[StreamChunk]:
        data = event.data.strip()
        if data == "[DONE]":
            self.done = True
            return []
        if not data:
            return []
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise StreamParseError(
                f"{self.provider}: invalid JSON in stream: {data[:80]}", provider=self.provider
            ) from exc
        if not isinstance(obj, dict):
            return []
        try:
            return self._chunks(obj)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError, RecursionError) as exc:
            # a shape the readers do not expect: fail as a stream error, never a crash
            raise StreamParseError(
                f"{self.provider}: unexpected data in stream ({type(exc).__name__}): {data[:80]}",
                provider=self.provider,
            ) from exc

    def _chunks(self, obj: JsonObject) -> list[StreamChunk]:
        if obj.get("error"):
            raise error_from_payload(self.provider, obj, secret=self.secret)
        usage = obj.get("usage") or as_dict(obj.get("x_groq")).get("usage")
        if isinstance(usage, dict):
            self.usage = _usage(usage)
        out: list[StreamChunk] = []
        for raw_choice in as_list(obj.get("choices")):
            choice = as_dict(raw_choice)
            delta = as_dict(choice.get("delta"))
            reasoning = delta.get("reasoning_content")
            if not isinstance(reasoning, str):
                reasoning = delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self.reasoning.append(reasoning)
                out.append(ReasoningDelta(reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                out.append(TextDelta(content))
            for tc in as_list(delta.get("tool_calls")):
                if isinstance(tc, dict):
                    out.extend(self._tool_delta(tc))
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self.finish = finish
        return out

    def _tool_delta(self, tc: JsonObject) -> list[StreamChunk]:
        fn = as_dict(tc.get("function"))
        name = as_str(fn.get("name"))
        key = as_index(tc.get("index"))
        if key is None:  # some servers omit index: a new id starts a new call
            tid = as_str(tc.get("id"))
            if self._last_key is None or (tid and all(c.id != tid for c in self.calls.values())):
                key = -1 - len(self.calls)  # synthetic keys never collide with real indexes
            else:
                key = self._last_key
        out: list[StreamChunk] = []
        call = self.calls.get(key)
        if call is None:
            ordinal = len(self.calls)
            call = _Call(as_str(tc.get("id")) or f"call_{ordinal}", name, ordinal)
            self.calls[key] = call
            out.append(ToolCallStarted(ordinal, call.id, call.name))
        elif not call.name and name:
            call.name = name
        self._last_key = key
        fragment = fn.get("arguments")
        if isinstance(fragment, dict):  # a few servers send an object, not a string
            fragment = json.dumps(fragment)
        if isinstance(fragment, str) and fragment:
            call.args.append(fragment)
            out.append(ToolCallArgsDelta(call.ordinal, fragment))
        return out

    def end(self) -> StreamEnd:
        parts: list[Part] = []
        if self.reasoning:
            parts.append(ReasoningPart("".join(self.reasoning)))
        if self.text:
            parts.append(TextPart("".join(self.text)))
        for call in sorted(self.calls.values(), key=lambda c: c.ordinal):
            parts.append(ToolCallPart(call.id, call.name, "".join(call.args)))
        stop = FINISH_REASONS.get(self.finish or "stop", self.finish or "end_turn")
        if self.calls and stop == "end_turn":
            stop = "tool_use"  # Ollama/Gemini say "stop" next to tool calls
        return StreamEnd(Message("assistant", parts), self.usage, stop)


def request_headers(spec: ProviderSpec, accept: str = "text/event-stream") -> dict[str, str]:
    """The headers of a request to an OpenAI-compatible server for ``spec`` (a bearer key)."""
    headers = {"accept": accept, "user-agent": "etcode"}
    if spec.api_key:
        headers["authorization"] = f"Bearer {spec.api_key}"
    headers.update({k.lower(): v for k, v in spec.headers.items()})
    return headers


class OpenAIProvider(RetryingHTTPProvider):
    """Chat Completions over SSE. ``spec.options`` are merged into the request body."""

    terminal_event = "data: [DONE]"

    @property
    def url(self) -> str:
        return self.spec.base_url.rstrip("/") + "/chat/completions"

    def headers(self) -> dict[str, str]:
        return request_headers(self.spec)

    def build_body(self, request: ModelRequest) -> JsonObject:
        body: JsonObject = {
            "model": request.model or self.spec.model,
            "messages": to_openai_messages(request),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools and not request.tools_off:
            body["tools"] = to_openai_tools(request)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update({k: v for k, v in self.spec.options.items() if k not in _NOT_BODY})
        if request.max_tokens is not None:  # the request's own (a summary's) over the options'
            key = "max_completion_tokens" if self.spec.id == "openai" else "max_tokens"
            body[key] = request.max_tokens
        body.update(request.extra)
        if "tools" not in body:  # the API refuses these without tools (a hard limit's last step)
            for key in TOOL_ONLY_OPTIONS:
                body.pop(key, None)
        return body

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream one answer; with tools offered to a local or self-hosted server, calls a
        model wrote as text in its answer (a template that did not parse them) come back as
        tool calls (``text_tool_calls``). A hosted service etcode knows parses its models'
        calls itself: there such text is the answer (prose or an example about tool calls)."""
        chunks = super().stream(request)
        if not request.tools or request.tools_off or hosted(self.spec):
            return chunks
        from etcode.provider.text_tool_calls import recovering

        return recovering(chunks, [tool.name for tool in request.tools], request.model or self.spec.model)

    def new_state(self) -> OpenAIStream:
        return OpenAIStream(self.id, self.spec.api_key)
