"""Your own LLM client behind etcode's Agent, in the agent-loop design's interface.

Subclass :class:`BaseLLMClient` and implement ``async chat(messages, tools=None, **kwargs)``:
``messages`` are OpenAI Chat Completions dicts (system, user, assistant with ``tool_calls``,
tool with ``tool_call_id``), ``tools`` are ``{"type": "function", "function": {...}}``, and
the answer is an :class:`LLMResponse`.

``BaseLLMClient`` is the public convenience shape (``etcode.BaseLLMClient``), not a second
model abstraction: etcode's one abstraction is :class:`etcode.provider.base.Provider`, and
:class:`ChatClientProvider` below is the one adapter of a client onto it (``Agent(llm=...)``
makes it; one answer per request, no streaming of its own). The messages and tool calls
are read and written by :mod:`etcode.provider.openai_format`, as for the OpenAI adapter.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field

from etcode.provider.base import Provider
from etcode.provider.cleaning import StreamCleaner
from etcode.provider.errors import ProviderError
from etcode.provider.openai_format import (
    TOOL_ONLY_OPTIONS,
    messages_from_openai,
    messages_to_openai,
    system_message,
    tool_call_fields,
    tools_to_openai,
)
from etcode.provider.shapes import as_tokens, field_of
from etcode.provider.spec import CUSTOM_PROVIDER, RetryConfig
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
from etcode.util.json_types import JsonObject, JsonValue

__all__ = [
    "BaseLLMClient",
    "ChatClientProvider",
    "LLMResponse",
    "TokenUsage",
    "ToolCall",
    "messages_from_openai",
    "messages_to_openai",
]

_MAX_MESSAGE = 300
#: How long one answer of a client may take, as for etcode's own providers (``ProviderSpec.timeout``).
DEFAULT_TIMEOUT = 600.0


def _add_optional(a: int | None, b: int | None) -> int | None:
    """None + None stays None (neither reported it); otherwise None counts as 0."""
    return None if a is None and b is None else (a or 0) + (b or 0)


@dataclass
class TokenUsage:
    """Tokens one answer (or a whole run) used. ``prompt_tokens`` includes the cached ones
    (``cached_tokens``, read from a prompt cache); ``completion_tokens`` includes the
    thinking (``reasoning_tokens``). Both are None when not reported."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            _add_optional(self.reasoning_tokens, other.reasoning_tokens),
            _add_optional(self.cached_tokens, other.cached_tokens),
        )

    @classmethod
    def zero(cls) -> TokenUsage:
        return cls(0, 0, 0)


@dataclass
class ToolCall:
    """A call the model made; ``id`` matches the ``tool`` message that answers it."""

    id: str
    name: str
    arguments: JsonObject


@dataclass
class LLMResponse:
    """One answer of a client: text and/or tool calls, the usage, the raw response and the
    model's thinking (``reasoning_content``: a ``REASONING`` event and a reasoning part of
    the answer's message, never sent back to the model by this adapter)."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage.zero)
    #: Whatever the client got from its model (kept for the caller, never read by etcode).
    raw: object = None
    reasoning_content: str | None = None

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)


class BaseLLMClient(ABC):
    """What a client of your own implements to drive etcode's Agent."""

    @abstractmethod
    async def chat(
        self,
        messages: list[JsonObject],
        tools: list[JsonObject] | None = None,
        **kwargs: JsonValue,
    ) -> LLMResponse:
        """One answer to ``messages`` (OpenAI Chat format) with ``tools`` (OpenAI function
        format) on offer; ``kwargs`` are ``temperature``, ``max_tokens`` and model options.
        A message with images has a list ``content`` of ``text`` and ``image_url`` parts
        (``data:`` URLs); a tool's images come in such a user message after the turn's
        ``tool`` messages. Without images every ``content`` is a string."""


def _usage(usage: object) -> Usage:
    """A client's ``TokenUsage`` (or an object or dict of its fields) as etcode counts it:
    ``input_tokens`` without the cached ones, as the built-in adapters count."""
    prompt = as_tokens(field_of(usage, "prompt_tokens")) or 0
    cached = as_tokens(field_of(usage, "cached_tokens")) or 0
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=as_tokens(field_of(usage, "completion_tokens")) or 0,
        cache_read_tokens=cached,
        reasoning_tokens=as_tokens(field_of(usage, "reasoning_tokens")) or 0,
    )


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


class ChatClientProvider(Provider):
    """An etcode provider that asks a :class:`BaseLLMClient` (or any object with an async
    ``chat`` of the same shape). Connection errors, timeouts and other ``OSError``\\ s are
    retried per ``retry``; any other failure ends the request as one
    :class:`~etcode.provider.errors.ProviderError` line naming the client."""

    id = CUSTOM_PROVIDER

    def __init__(
        self, client: BaseLLMClient, retry: RetryConfig | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.client = client
        self.retry = retry or RetryConfig()
        #: Seconds one ``chat`` call may take before it counts as a (retryable) timeout.
        self.timeout = timeout
        self._calls = 0  # for ids of calls the client left without one

    @property
    def _label(self) -> str:
        return f"{type(self.client).__name__}.chat"

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Ask the client once (again after retryable failures); see
        :class:`etcode.provider.base.Provider`."""
        from etcode.provider.retry import stream_with_retries

        messages = system_message(request.system) + messages_to_openai(request.messages)
        tools = None if request.tools_off else tools_to_openai(request.tools) or None
        kwargs: JsonObject = {}
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        kwargs.update(request.extra)
        if tools is None:  # the API refuses these without tools (a hard limit's last step)
            for key in TOOL_ONLY_OPTIONS:
                kwargs.pop(key, None)
        return stream_with_retries(lambda: self._attempt(messages, tools, kwargs), self.retry)

    async def _attempt(
        self, messages: list[JsonObject], tools: list[JsonObject] | None, kwargs: JsonObject
    ) -> AsyncGenerator[StreamChunk, None]:
        try:
            # each attempt gets its own copies: a client may change what it was given
            answer = self.client.chat(copy.deepcopy(messages), copy.deepcopy(tools), **kwargs)
            response = await asyncio.wait_for(answer, self.timeout)
        except ProviderError:
            raise
        except Exception as exc:
            raise self._failure(exc) from exc
        cleaner = StreamCleaner()
        for chunk in self._chunks(response):
            for clean in cleaner.clean(chunk):
                yield clean

    def _failure(self, exc: Exception) -> ProviderError:
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        text = _one_line(f"{self._label} failed: {detail}")
        if isinstance(exc, TimeoutError):
            return ProviderError(text, kind="timeout", retryable=True, provider=self.id)
        if isinstance(exc, OSError):  # ConnectionError and friends
            return ProviderError(text, kind="connection", retryable=True, provider=self.id)
        return ProviderError(text, kind="server", retryable=False, provider=self.id)

    def _bad(self, what: str) -> ProviderError:
        return ProviderError(_one_line(f"{self._label} {what}"), kind="bad_request", provider=self.id)

    def _chunks(self, response: object) -> list[StreamChunk]:
        """The chunks of one answer, ending with its :class:`StreamEnd`."""
        if isinstance(response, dict) or not (
            hasattr(response, "content") and hasattr(response, "tool_calls")
        ):
            raise self._bad(
                f"returned {type(response).__name__}, not an LLMResponse (content, tool_calls, usage)"
            )
        content = response.content
        if content is not None and not isinstance(content, str):
            raise self._bad(f"returned content of type {type(content).__name__}, not a str")
        out: list[StreamChunk] = []
        parts: list[Part] = []
        reasoning = getattr(response, "reasoning_content", None)
        if reasoning is not None and not isinstance(reasoning, str):
            raise self._bad(f"returned reasoning_content of type {type(reasoning).__name__}, not a str")
        if reasoning:
            out.append(ReasoningDelta(reasoning))
            parts.append(ReasoningPart(reasoning))
        if content:
            out.append(TextDelta(content))
            parts.append(TextPart(content))
        raw_calls = response.tool_calls or []
        if not isinstance(raw_calls, list | tuple):
            raise self._bad(f"returned tool_calls of type {type(raw_calls).__name__}, not a list")
        for index, raw in enumerate(raw_calls):
            call = self._call(raw, index)
            out.append(ToolCallStarted(index, call.id, call.name))
            out.append(ToolCallArgsDelta(index, call.arguments))
            parts.append(call)
        stop = "tool_use" if raw_calls else "end_turn"
        out.append(StreamEnd(Message("assistant", parts), _usage(getattr(response, "usage", None)), stop))
        return out

    def _call(self, raw: object, index: int) -> ToolCallPart:
        """One tool call as a part: a :class:`ToolCall`, or a dict of the same fields (or in
        OpenAI's ``{"id", "function": {"name", "arguments"}}`` shape)."""
        call_id, name, arguments = tool_call_fields(raw)
        if not isinstance(name, str) or not name:
            raise self._bad(f"returned tool call {index} without a name")
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            text = "{}"
        elif isinstance(arguments, str):  # JSON text, as some clients pass it on
            text = arguments
        elif isinstance(arguments, dict):
            try:
                text = json.dumps(arguments)
            except (TypeError, ValueError) as exc:
                raise self._bad(f"returned arguments for {name} that are not JSON: {exc}") from exc
        else:
            raise self._bad(f"returned arguments for {name} of type {type(arguments).__name__}, not a dict")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{self._calls}"
        self._calls += 1
        return ToolCallPart(call_id, name, text)

    async def aclose(self) -> None:
        """Close the client when it has ``aclose()`` or ``close()`` (awaited if async)."""
        for name in ("aclose", "close"):
            closer = getattr(self.client, name, None)
            if callable(closer):
                result = closer()
                if inspect.isawaitable(result):
                    await result
                return
