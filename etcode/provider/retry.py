"""Retries as the official OpenAI/Anthropic SDKs do them, plus the HTTP plumbing both
adapters share: error classification, the SSE request, and the retrying stream driver.

Policy: 408, 409, 429, 5xx (incl. 529) and connection/timeout errors are retried; 400,
401, 403, 404 and an ``insufficient_quota`` 429 never are. ``x-should-retry: true|false``
overrides the status rule (but not that never-list). The wait is the server's
``retry-after-ms``/``retry-after`` when ``0 < value <= max_retry_after``, else
``initial_delay * 2**attempt`` capped at ``max_delay``, minus up to 25% jitter. A stream
that fails after it has yielded output is not retried (that would duplicate output).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import random
import re
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

import httpx

from etcode.provider.cleaning import StreamCleaner
from etcode.provider.errors import ContextOverflowError, ProviderError, StreamParseError
from etcode.provider.spec import ProviderSpec, RetryConfig
from etcode.provider.sse import SSEEvent, aiter_sse
from etcode.provider.types import ModelRequest, RetryNotice, StreamChunk, StreamEnd
from etcode.util.redact import hide

__all__ = [
    "RetryingHTTPProvider",
    "backoff_delay",
    "error_from_exception",
    "error_from_payload",
    "error_from_response",
    "is_context_overflow",
    "open_sse",
    "parse_retry_after",
    "retry_delay",
    "should_retry",
    "stream_with_retries",
]

CONNECT_TIMEOUT = 10.0
#: How long to wait for the end of the body after the terminal event (keeps keep-alive).
DRAIN_TIMEOUT = 0.5
#: Statuses that are never retried, whatever the server's headers say.
NEVER_RETRY = frozenset({400, 401, 403, 404})
_MAX_MESSAGE = 300

_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size_error|exceeds the available context size|"
    r"maximum context length|prompt is too long|context window|"
    r"context limit|too many tokens|context length|reduce the length of the (?:messages|prompt)|"
    r"input is too long|too many input tokens|exceeds? (?:the )?(?:model'?s? )?(?:max(?:imum)? )?"
    r"(?:context|token limit|input tokens)",
    re.IGNORECASE,
)
_TYPE_KIND = {
    "authentication_error": "auth",
    "invalid_api_key": "auth",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "invalid_request_error": "bad_request",
    "request_too_large": "bad_request",
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "insufficient_quota": "quota",
    "overloaded_error": "overloaded",
    "api_error": "server",
    "server_error": "server",
    "timeout_error": "timeout",
}
_RETRYABLE_KINDS = frozenset({"rate_limit", "overloaded", "server", "timeout", "connection", "stream"})


# ---- policy ------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, else ``retry-after``
    (seconds or an HTTP date). ``None`` when absent or unparseable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return float(raw_ms) / 1000.0
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(raw)
    if parsed is None:
        return None
    return email.utils.mktime_tz(parsed) - (time.time() if now is None else now)


def backoff_delay(attempt: int, config: RetryConfig, rand: Callable[[], float] = random.random) -> float:
    """``initial_delay * 2**attempt`` capped at ``max_delay``, minus up to 25% jitter."""
    base = min(config.initial_delay * 2.0 ** min(attempt, 64), config.max_delay)
    return max(0.0, base * (1.0 - 0.25 * rand()))


def retry_delay(
    attempt: int,
    config: RetryConfig,
    retry_after: float | None = None,
    rand: Callable[[], float] = random.random,
) -> float:
    """The wait before retry number ``attempt + 1``: the server's hint if sane, else backoff."""
    if retry_after is not None and 0 < retry_after <= config.max_retry_after:
        return retry_after
    return backoff_delay(attempt, config, rand)


def should_retry(status: int, headers: Mapping[str, str], kind: str = "") -> bool:
    """Whether an HTTP error response is worth another attempt."""
    if status in NEVER_RETRY or kind in ("quota", "auth", "permission", "context_overflow"):
        return False
    flag = (headers.get("x-should-retry") or "").strip().lower()
    if flag == "true":
        return True
    if flag == "false":
        return False
    return status in (408, 409, 429) or status >= 500


def is_context_overflow(message: str, code: str | None = None, etype: str | None = None) -> bool:
    """Whether an error text means "the prompt does not fit the context window"."""
    if code == "context_length_exceeded" or etype == "exceed_context_size_error":
        return True
    return bool(_OVERFLOW.search(message or ""))


#: The window a server states in its overflow message: llama.cpp "available context size
#: (4096 tokens)", vLLM/OpenAI/OpenRouter "maximum context length is 4096 tokens".
_WINDOW_IN_TEXT = re.compile(
    r"(?:available context size \(|maximum context length is |context length of (?:only )?)(\d+) tokens",
    re.IGNORECASE,
)


def stated_window(payload: Any, message: str) -> int | None:
    """The context window an overflow error reports (llama.cpp's ``n_ctx``, or the text)."""
    err = payload.get("error", payload) if isinstance(payload, dict) else None
    if isinstance(err, dict):
        n_ctx = err.get("n_ctx")
        if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
            return n_ctx
    found = _WINDOW_IN_TEXT.search(message or "")
    return int(found.group(1)) if found else None


# ---- error classification -------------------------------------------------------------


def _one_line(text: str, secret: str | None) -> str:
    text = " ".join(hide(text, secret).split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _error_fields(payload: Any) -> tuple[str | None, str | None, str]:
    """(type, code, message) from any of the usual error body shapes."""
    if isinstance(payload, list) and payload:
        payload = payload[0]
    if not isinstance(payload, dict):
        return None, None, str(payload) if payload is not None else ""
    err = payload.get("error", payload)
    if isinstance(err, str):
        return None, None, err
    if not isinstance(err, dict):
        return None, None, json.dumps(payload)[:_MAX_MESSAGE]
    etype = err.get("type") if isinstance(err.get("type"), str) else None
    code = err.get("code")
    code = code if isinstance(code, str) else (str(code) if isinstance(code, int) else None)
    message = err.get("message") or err.get("detail") or payload.get("message") or ""
    if not isinstance(message, str):
        message = json.dumps(message)
    return etype, code, message


def _kind_for(status: int | None, etype: str | None, code: str | None, text: str) -> str:
    for label in (code, etype):
        if label in ("insufficient_quota", "overloaded_error"):
            return _TYPE_KIND[label]
    if "insufficient_quota" in text or status == 402:
        return "quota"
    if status is None or status < 400:
        if code and code.isascii() and code.isdigit():
            return _kind_for(int(code), etype, None, text)
        return _TYPE_KIND.get(etype or "", _TYPE_KIND.get(code or "", "server"))
    if status == 529:
        return "overloaded"
    by_status = {401: "auth", 403: "permission", 404: "not_found", 408: "timeout", 429: "rate_limit"}
    if status in by_status:
        return by_status[status]
    return "server" if status >= 500 or status == 409 else "bad_request"


def _build_error(
    provider: str,
    status: int | None,
    payload: Any,
    raw_text: str,
    *,
    secret: str | None,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    etype, code, message = _error_fields(payload)
    if not message:
        message = raw_text.strip() or (httpx.codes.get_reason_phrase(status) if status else "unknown error")
    label = code if code and not (code.isascii() and code.isdigit()) else etype
    head = f"{provider}: {status}" if status else f"{provider}:"
    text = _one_line(f"{head} {label}: {message}" if label else f"{head} {message}", secret)
    if is_context_overflow(message, code, etype) and (
        status is None or (400 <= status < 500 and status != 429)
    ):
        window = stated_window(payload, message)
        return ContextOverflowError(text, status=status, provider=provider, window=window)
    kind = _kind_for(status, etype, code, raw_text)
    if status is not None and headers is not None:
        retryable = should_retry(status, headers, kind)
        retry_after = parse_retry_after(headers)
    else:
        retryable, retry_after = kind in _RETRYABLE_KINDS, None
    return ProviderError(
        text, kind=kind, status=status, retryable=retryable, provider=provider, retry_after=retry_after
    )


def error_from_response(
    provider: str, status: int, headers: Mapping[str, str], body: str, *, secret: str | None = None
) -> ProviderError:
    """A one-line :class:`ProviderError` for an HTTP error response (never shows ``secret``)."""
    try:
        payload: Any = json.loads(body) if body.strip() else None
    except (ValueError, RecursionError):  # not JSON, or nested absurdly deep
        payload = None
    return _build_error(provider, status, payload, body, secret=secret, headers=headers)


def error_from_payload(provider: str, payload: Any, *, secret: str | None = None) -> ProviderError:
    """The error for an in-stream error chunk/event (``{"error": {...}}``)."""
    return _build_error(provider, None, payload, "", secret=secret)


def error_from_exception(
    provider: str, exc: Exception, *, in_body: bool, secret: str | None = None
) -> ProviderError:
    """Map an httpx transport failure; ``in_body`` means the response had started."""
    detail = _one_line(str(exc) or type(exc).__name__, secret)
    if isinstance(exc, httpx.TimeoutException):
        what = "no data from the server" if in_body else "request timed out"
        return ProviderError(
            f"{provider}: {what} ({type(exc).__name__})", kind="timeout", retryable=True, provider=provider
        )
    if in_body and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return ProviderError(
            f"{provider}: stream cut before the answer finished ({detail})",
            kind="stream",
            retryable=True,
            provider=provider,
        )
    retryable = isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError)
    try:
        url = exc.request.url  # type: ignore[attr-defined]
        where = f" to {url.host}" + (f":{url.port}" if url.port else "")
    except (AttributeError, RuntimeError):  # not a RequestError, or no request attached
        where = ""
    return ProviderError(
        f"{provider}: connection{where} failed: {detail}",
        kind="connection",
        retryable=retryable,
        provider=provider,
    )


# ---- transport -----------------------------------------------------------------------


async def open_sse(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str],
    body: dict[str, Any],
    timeout: httpx.Timeout,
    provider: str,
    secret: str | None = None,
) -> AsyncGenerator[SSEEvent, None]:
    """POST ``body`` and yield the SSE events of the answer. HTTP errors and transport
    failures are raised as :class:`ProviderError` (not retried here)."""
    in_body = False
    try:
        async with client.stream("POST", url, json=body, headers=headers, timeout=timeout) as resp:
            if resp.status_code >= 400:
                raw = (await resp.aread()).decode("utf-8", errors="replace")
                raise error_from_response(provider, resp.status_code, resp.headers, raw, secret=secret)
            in_body = True
            if resp.headers.get("content-type", "").startswith("application/json"):
                raw = (await resp.aread()).decode("utf-8", errors="replace")
                try:
                    payload = json.loads(raw)
                except (ValueError, RecursionError):
                    payload = None
                if isinstance(payload, dict) and "error" in payload:
                    raise error_from_payload(provider, payload, secret=secret)
                raise StreamParseError(f"{provider}: expected an event stream, got JSON", provider=provider)
            async for event in aiter_sse(resp.aiter_bytes()):
                yield event
    except httpx.HTTPError as exc:
        raise error_from_exception(provider, exc, in_body=in_body, secret=secret) from exc


async def stream_with_retries(
    attempt: Callable[[], AsyncGenerator[StreamChunk, None]],
    config: RetryConfig,
    *,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> AsyncIterator[StreamChunk]:
    """Run ``attempt()`` until it succeeds, yielding :class:`RetryNotice` before each retry.

    Retries only retryable :class:`ProviderError`\\ s raised before the attempt yielded
    anything; after output has been yielded the error propagates.
    """
    retries = 0
    while True:
        emitted = False
        try:
            async with contextlib.aclosing(attempt()) as chunks:
                async for chunk in chunks:
                    emitted = True
                    yield chunk
            return
        except ProviderError as err:
            if emitted or not err.retryable or retries >= config.max_retries:
                raise
            delay = retry_delay(retries, config, err.retry_after)
            retries += 1
            yield RetryNotice(attempt=retries, delay=delay, reason=str(err))
            await sleep(delay)


# ---- shared adapter base -------------------------------------------------------------


@functools.cache
def _ssl_context(https: bool) -> ssl.SSLContext:
    """One TLS context per process (loading the CA bundle costs ~40 ms per client).

    A plain ``http://`` endpoint (Ollama, a local server) never needs CAs: it gets a bare
    client context, which verifies certificates and so fails closed if TLS ever happens.
    """
    return httpx.create_ssl_context() if https else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


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


class RetryingHTTPProvider:
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
            client = httpx.AsyncClient(timeout=self.timeout, verify=_ssl_context(https))
        self._client = client

    @property
    def url(self) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def new_state(self) -> StreamState:
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream one answer (see :class:`etcode.provider.base.Provider`)."""
        body = self.build_body(request)
        headers = self.headers()
        return stream_with_retries(lambda: self._attempt(body, headers), self.retry)

    async def _attempt(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> AsyncGenerator[StreamChunk, None]:
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
