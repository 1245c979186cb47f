"""The error table: one clear :class:`ProviderError` line from whatever a server or the
network says (HTTP error bodies of every usual shape, in-stream error events, httpx
failures), with its kind, whether to retry it, and a context overflow told apart."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import httpx

from etcode.provider.errors import ContextOverflowError, ImagesRefusedError, ProviderError
from etcode.provider.retry import parse_retry_after, should_retry
from etcode.security.redact import hide
from etcode.util.json_types import JsonValue

_MAX_MESSAGE = 300

_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size_error|exceeds the available context size|"
    r"maximum context length|prompt is too long|context window|"
    r"context limit|too many tokens|context length|reduce the length of the (?:messages|prompt)|"
    r"input is too long|too many input tokens|exceeds? (?:the )?(?:model'?s? )?(?:max(?:imum)? )?"
    r"(?:context|token limit|input tokens)",
    re.IGNORECASE,
)
#: How servers say that a model takes no images: llama.cpp (a 500), vLLM, Ollama, OpenAI.
_IMAGES_REFUSED = re.compile(
    r"image input is not supported|does not support (?:image|vision)|not a multimodal model|"
    r"image_url is only supported|missing data required for image input|"
    r"images? (?:input )?(?:is|are) not supported|at most 0 image",
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


def stated_window(payload: JsonValue, message: str) -> int | None:
    """The context window an overflow error reports (llama.cpp's ``n_ctx``, or the text)."""
    err = payload.get("error", payload) if isinstance(payload, dict) else None
    if isinstance(err, dict):
        n_ctx = err.get("n_ctx")
        if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
            return n_ctx
    found = _WINDOW_IN_TEXT.search(message or "")
    return int(found.group(1)) if found else None


def _one_line(text: str, secret: str | None) -> str:
    text = " ".join(hide(text, secret).split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _error_fields(payload: JsonValue) -> tuple[str | None, str | None, str]:
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
    payload: JsonValue,
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
    # A 5xx saying so too (older llama.cpp builds, some gateways): the same request cannot
    # fit on a retry, and resending a huge prompt three times helps nobody.
    if is_context_overflow(message, code, etype) and (status is None or (status >= 400 and status != 429)):
        window = stated_window(payload, message)
        return ContextOverflowError(text, status=status, provider=provider, window=window)
    if status is not None and status >= 400 and status != 429 and _IMAGES_REFUSED.search(message):
        return ImagesRefusedError(text, status=status, provider=provider)
    kind = _kind_for(status, etype, code, raw_text)
    if status is not None and headers is not None:
        retryable = should_retry(status, headers, kind)
        retry_after = parse_retry_after(headers)
    else:
        retryable, retry_after = kind in _RETRYABLE_KINDS, None
    return ProviderError(
        text, kind=kind, status=status, retryable=retryable, provider=provider, retry_after=retry_after
    )


_CHAT_PATH = "/chat/completions"


def wrong_base_url(provider: str, status: int, url: str | None) -> ProviderError | None:
    """A 404 because the provider's ``baseURL`` already ends in ``/chat/completions`` (etcode
    adds it: the request went to ``…/chat/completions/chat/completions``): the line that says
    to end it at ``/v1``, naming the key (and ``<ID>_BASE_URL`` for a well-known provider)."""
    if status != 404 or not url or not url.split("?", 1)[0].endswith(_CHAT_PATH + _CHAT_PATH):
        return None
    from etcode.provider.spec import KNOWN_PROVIDERS

    base = url.split("?", 1)[0][: -len(_CHAT_PATH)]
    key = f'"baseURL" of provider "{provider}" in etcode.json'
    if provider in KNOWN_PROVIDERS:
        key += f" (or {provider.upper()}_BASE_URL)"
    return ProviderError(
        f"{provider}: 404 Not Found at {url}: the base URL {base} ends in {_CHAT_PATH}, which etcode "
        f"adds itself; end it at /v1 ({base[: -len(_CHAT_PATH)]}): {key}",
        kind="not_found",
        status=status,
        provider=provider,
    )


def error_from_response(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    body: str,
    *,
    secret: str | None = None,
    url: str | None = None,
) -> ProviderError:
    """A one-line :class:`ProviderError` for an HTTP error response (never shows ``secret``);
    ``url``: the address asked (a ``baseURL`` ending in ``/chat/completions`` is named)."""
    wrong = wrong_base_url(provider, status, url)
    if wrong is not None:
        return wrong
    try:
        payload: JsonValue = json.loads(body) if body.strip() else None
    except (ValueError, RecursionError):  # not JSON, or nested absurdly deep
        payload = None
    return _build_error(provider, status, payload, body, secret=secret, headers=headers)


def error_from_payload(provider: str, payload: JsonValue, *, secret: str | None = None) -> ProviderError:
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
        request = getattr(exc, "request", None)  # httpx raises RuntimeError when none is attached
    except RuntimeError:
        request = None
    if isinstance(request, httpx.Request):
        url = request.url
        where = f" to {url.host}" + (f":{url.port}" if url.port else "")
    else:  # not a RequestError, or no request attached
        where = ""
    return ProviderError(
        f"{provider}: connection{where} failed: {detail}",
        kind="connection",
        retryable=retryable,
        provider=provider,
    )
