"""The base class of the HTTP adapters (OpenAI Chat, Anthropic Messages): the client,
timeouts, retries, the idle limit and the attempt loop that turns SSE events into chunks."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from typing import Protocol

import httpx

from etcode.provider.base import Provider
from etcode.provider.cleaning import StreamCleaner
from etcode.provider.errors import ProviderError
from etcode.provider.retry import stream_with_retries
from etcode.provider.spec import ProviderSpec, RetryConfig
from etcode.provider.sse import SSEEvent
from etcode.provider.transport import CONNECT_TIMEOUT, DRAIN_TIMEOUT, open_sse, ssl_context
from etcode.provider.types import ModelRequest, StreamChunk, StreamEnd
from etcode.util.json_types import JsonObject


class StreamState(Protocol):
    """Per-attempt decoder of one wire format's events into chunks."""

    @property
    def done(self) -> bool:
        """The terminal event arrived: stop reading."""
        ...

    @property
    def complete(self) -> bool:
        """The answer is whole (terminal event, or a finish signal)."""
        ...

    def handle(self, event: SSEEvent) -> Iterable[StreamChunk]: ...

    def end(self) -> StreamEnd: ...


class RetryingHTTPProvider(Provider):
    """What both adapters share: the client, timeouts, retries and the attempt loop.

    Subclasses set ``url`` and implement ``headers``, ``build_body`` and ``new_state``.
    """

    #: What a cut stream lacks, for the error message (e.g. ``"data: [DONE]"``).
    terminal_event = "the final event"

    def __init__(
        self, spec: ProviderSpec, retry: RetryConfig | None = None, client: httpx.AsyncClient | None = None
    ) -> None:
        self.spec = spec
        self.id = spec.id
        self.retry = retry or RetryConfig()
        self.timeout = httpx.Timeout(spec.timeout, connect=min(CONNECT_TIMEOUT, spec.timeout))
        self._owns_client = client is None
        if client is None:
            https = spec.base_url.lower().startswith("https://")
            client = httpx.AsyncClient(timeout=self.timeout, verify=ssl_context(https))
        self._client = client

    @property
    def url(self) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def build_body(self, request: ModelRequest) -> JsonObject:
        raise NotImplementedError

    def new_state(self) -> StreamState:
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream one answer (see :class:`etcode.provider.base.Provider`)."""
        body = self.build_body(request)
        headers = self.headers()
        return stream_with_retries(lambda: self._attempt(body, headers), self.retry)

    async def _attempt(self, body: JsonObject, headers: dict[str, str]) -> AsyncGenerator[StreamChunk, None]:
        state = self.new_state()
        cleaner = StreamCleaner()
        events = open_sse(
            self._client,
            self.url,
            headers=headers,
            body=body,
            timeout=self.timeout,
            provider=self.id,
            secret=self.spec.api_key,
        )
        idle = self.spec.timeout
        loop = asyncio.get_running_loop()
        async with contextlib.aclosing(events):
            try:
                deadline = loop.time() + idle
                while True:
                    # the idle limit counts from the last event with content: a server that
                    # sends only keep-alive comments or pings times out like a silent one
                    try:
                        async with asyncio.timeout_at(deadline):
                            event = await anext(events)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        raise ProviderError(
                            f"{self.id}: timed out: no content from the model for {idle:g} s "
                            "(the stream sent only keep-alive messages)",
                            kind="timeout",
                            retryable=True,
                            provider=self.id,
                        ) from None
                    chunks = list(state.handle(event))
                    for chunk in chunks:
                        for clean in cleaner.clean(chunk):
                            yield clean
                    if chunks:
                        deadline = loop.time() + idle
                    if state.done:
                        break
            except ProviderError as err:
                if not (err.kind == "stream" and state.complete):
                    raise  # else: cut after the finish signal, only [DONE]/usage lost
            if state.done:  # read the (normally empty) rest so the connection can be reused
                with contextlib.suppress(TimeoutError, ProviderError):
                    async with asyncio.timeout(DRAIN_TIMEOUT):
                        async for _ in events:
                            pass
        if not state.complete:
            raise ProviderError(
                f"{self.id}: stream ended before the answer finished (no {self.terminal_event})",
                kind="stream",
                retryable=True,
                provider=self.id,
            )
        for clean in cleaner.clean(state.end()):
            yield clean

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client:
            await self._client.aclose()
