"""The HTTP request both wire formats make: POST a body, read the answer's SSE events.
HTTP errors and transport failures come out as :class:`ProviderError` (not retried here)."""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import AsyncGenerator, Mapping

import httpx

from etcode.provider.errors import StreamParseError
from etcode.provider.http_errors import error_from_exception, error_from_payload, error_from_response
from etcode.provider.sse import SSEEvent, aiter_sse
from etcode.util.json_types import JsonObject

CONNECT_TIMEOUT = 10.0
#: How long to wait for the end of the body after the terminal event (keeps keep-alive).
DRAIN_TIMEOUT = 0.5


@functools.cache
def ssl_context(https: bool) -> ssl.SSLContext:
    """One TLS context per process (loading the CA bundle costs ~40 ms per client).

    A plain ``http://`` endpoint (Ollama, a local server) never needs CAs: it gets a bare
    client context, which verifies certificates and so fails closed if TLS ever happens.
    """
    return httpx.create_ssl_context() if https else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


async def open_sse(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str],
    body: JsonObject,
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
                raise error_from_response(
                    provider, resp.status_code, resp.headers, raw, secret=secret, url=url
                )
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
