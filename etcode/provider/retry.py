"""Retries as the official OpenAI/Anthropic SDKs do them: which failures are retried,
how long to wait, and the driver that retries a stream until it yields.

Policy: 408, 409, 429, 5xx (incl. 529) and connection/timeout errors are retried; 400,
401, 403, 404 and an ``insufficient_quota`` 429 never are. ``x-should-retry: true|false``
overrides the status rule (but not that never-list). The wait is the server's
``retry-after-ms``/``retry-after`` when ``0 < value <= max_retry_after``, else
``initial_delay * 2**attempt`` capped at ``max_delay``, minus up to 25% jitter. A stream
that fails after it has yielded output is not retried (that would duplicate output).
The error table is ``http_errors``; the SSE request is ``transport``; the adapters' base
class is ``http_provider``. This module imports no httpx.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping

from etcode.provider.errors import ProviderError
from etcode.provider.spec import RetryConfig
from etcode.provider.types import RetryNotice, StreamChunk

#: Statuses that are never retried, whatever the server's headers say.
NEVER_RETRY = frozenset({400, 401, 403, 404})


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


async def stream_with_retries(
    attempt: Callable[[], AsyncGenerator[StreamChunk, None]],
    config: RetryConfig,
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
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
            yield RetryNotice(
                attempt=retries,
                delay=delay,
                reason=str(err),
                status=err.status,
                attempts=config.max_retries + 1,
            )
            await sleep(delay)
