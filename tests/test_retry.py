"""Retry policy, error classification, the retry driver and the provider factory."""

from __future__ import annotations

import email.utils
from collections.abc import AsyncIterator

import httpx
import pytest

from etcode.provider.anthropic import AnthropicProvider
from etcode.provider.errors import ContextOverflowError, ProviderError
from etcode.provider.factory import make_provider
from etcode.provider.http_errors import (
    error_from_exception,
    error_from_payload,
    error_from_response,
    is_context_overflow,
)
from etcode.provider.openai import OpenAIProvider
from etcode.provider.retry import (
    backoff_delay,
    parse_retry_after,
    retry_delay,
    should_retry,
    stream_with_retries,
)
from etcode.provider.spec import ProviderSpec, RetryConfig
from etcode.provider.types import RetryNotice, StreamChunk, TextDelta

CFG = RetryConfig(max_retries=2, initial_delay=0.5, max_delay=8.0, max_retry_after=60.0)


# ---- retry-after and backoff --------------------------------------------------------


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30, abs=1)
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after-ms": "x"}) is None
    assert parse_retry_after({}) is None


def test_retry_after_is_used_only_when_sane() -> None:
    assert retry_delay(0, CFG, 2.0) == 2.0
    assert retry_delay(0, CFG, 60.0) == 60.0
    no_jitter = lambda: 0.0  # noqa: E731
    assert retry_delay(0, CFG, 0.0, rand=no_jitter) == 0.5  # 0 -> backoff
    assert retry_delay(0, CFG, -3.0, rand=no_jitter) == 0.5
    assert retry_delay(1, CFG, 61.0, rand=no_jitter) == 1.0  # too long -> backoff
    assert retry_delay(0, CFG, None, rand=no_jitter) == 0.5


def test_backoff_is_exponential_capped_with_up_to_25_percent_jitter() -> None:
    assert [backoff_delay(n, CFG, rand=lambda: 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert backoff_delay(2, CFG, rand=lambda: 1.0) == pytest.approx(1.5)
    for n in range(5):
        assert 0.75 * min(0.5 * 2**n, 8) <= backoff_delay(n, CFG) <= min(0.5 * 2**n, 8)
    assert backoff_delay(10_000, CFG, rand=lambda: 0.0) == 8.0


# ---- what is retried ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [(408, True), (409, True), (429, True), (500, True), (502, True), (503, True), (529, True)]
    + [(400, False), (401, False), (403, False), (404, False), (413, False), (422, False)],
)
def test_should_retry_by_status(status: int, expected: bool) -> None:
    assert should_retry(status, {}) is expected


def test_x_should_retry_overrides_status_but_not_the_never_list() -> None:
    assert should_retry(500, {"x-should-retry": "false"}) is False
    assert should_retry(429, {"x-should-retry": "false"}) is False
    assert should_retry(418, {"x-should-retry": "true"}) is True
    assert should_retry(401, {"x-should-retry": "true"}) is False
    assert should_retry(429, {"x-should-retry": "true"}, kind="quota") is False


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "The input exceeds the context window of this model",
        "too many tokens in the request",
        "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000",
        "Please reduce the length of the messages or completion.",
    ],
)
def test_context_overflow_phrasings(message: str) -> None:
    assert is_context_overflow(message)


def test_not_overflow() -> None:
    assert not is_context_overflow("Rate limit reached for gpt-4o on tokens per min (TPM)")
    assert not is_context_overflow("invalid x-api-key")
    assert is_context_overflow("whatever", code="context_length_exceeded")


# ---- error messages ------------------------------------------------------------------


def test_anthropic_401_message_is_one_line_and_fails_fast() -> None:
    body = '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
    err = error_from_response("anthropic", 401, {}, body)
    assert str(err) == "anthropic: 401 authentication_error: invalid x-api-key"
    assert (err.kind, err.status, err.retryable) == ("auth", 401, False)


def test_openai_error_message_never_contains_the_key() -> None:
    body = (
        '{"error":{"message":"Incorrect API key provided: sk-secret-123.\\nYou can find your key at x",'
        '"type":"invalid_request_error","param":null,"code":"invalid_api_key"}}'
    )
    err = error_from_response("openai", 401, {}, body, secret="sk-secret-123")
    assert "sk-secret-123" not in str(err)
    assert "\n" not in str(err)
    assert str(err).startswith("openai: 401 invalid_api_key: Incorrect API key provided: ***")


def test_insufficient_quota_is_not_retried() -> None:
    body = '{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}'
    err = error_from_response("openai", 429, {"retry-after": "1"}, body)
    assert (err.kind, err.retryable) == ("quota", False)


def test_rate_limit_keeps_retry_after() -> None:
    err = error_from_response("openai", 429, {"retry-after-ms": "250"}, "")
    assert (err.kind, err.retryable, err.retry_after) == ("rate_limit", True, 0.25)
    assert str(err) == "openai: 429 Too Many Requests"


def test_overflow_becomes_context_overflow_error() -> None:
    body = '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 201000 tokens > 200000 maximum"}}'
    err = error_from_response("anthropic", 400, {}, body)
    assert isinstance(err, ContextOverflowError)
    assert err.kind == "context_overflow" and not err.retryable


def test_overloaded_and_server_errors_and_odd_bodies() -> None:
    assert error_from_response("a", 529, {}, "").kind == "overloaded"
    assert error_from_response("a", 503, {}, "<html>bad gateway</html>").retryable
    err = error_from_response("x", 502, {}, "upstream connect error")
    assert str(err) == "x: 502 upstream connect error"
    assert error_from_response(
        "x", 400, {}, '[{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}]'
    ).kind == ("bad_request")


def test_in_stream_error_payloads() -> None:
    err = error_from_payload(
        "anthropic", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    assert (str(err), err.kind, err.retryable) == (
        "anthropic: overloaded_error: Overloaded",
        "overloaded",
        True,
    )
    err = error_from_payload("openrouter", {"error": {"code": 502, "message": "Provider disconnected"}})
    assert err.kind == "server" and err.retryable
    err = error_from_payload("openai", {"error": {"message": "bad", "type": "invalid_request_error"}})
    assert err.kind == "bad_request" and not err.retryable


def test_transport_errors() -> None:
    err = error_from_exception("p", httpx.ConnectError("refused"), in_body=False)
    assert (err.kind, err.retryable) == ("connection", True)
    err = error_from_exception("p", httpx.ReadTimeout(""), in_body=True)
    assert (err.kind, err.retryable) == ("timeout", True)
    err = error_from_exception("p", httpx.RemoteProtocolError("incomplete chunked read"), in_body=True)
    assert (err.kind, err.retryable) == ("stream", True)
    assert not error_from_exception("p", httpx.UnsupportedProtocol("ftp"), in_body=False).retryable


# ---- the driver ----------------------------------------------------------------------


class Script:
    """Attempts that fail with the given errors (after yielding ``before`` chunks), then succeed."""

    def __init__(self, *failures: tuple[ProviderError, int]) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def attempt(self) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        if self.failures:
            err, before = self.failures.pop(0)
            for i in range(before):
                yield TextDelta(f"part{i}")
            raise err
        yield TextDelta("ok")


def retryable(msg: str = "p: 500 boom", retry_after: float | None = None) -> ProviderError:
    return ProviderError(msg, kind="server", status=500, retryable=True, retry_after=retry_after)


async def run(script: Script, config: RetryConfig) -> tuple[list[StreamChunk], list[float]]:
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    chunks = [c async for c in stream_with_retries(script.attempt, config, sleep=sleep)]
    return chunks, sleeps


async def test_driver_retries_then_succeeds_with_notices() -> None:
    script = Script((retryable(retry_after=0.3), 0), (retryable(), 0))
    chunks, sleeps = await run(script, RetryConfig(initial_delay=0.01))
    notices = [c for c in chunks if isinstance(c, RetryNotice)]
    assert [n.attempt for n in notices] == [1, 2]
    assert notices[0].delay == 0.3 and notices[0].reason == "p: 500 boom"
    assert sleeps == [n.delay for n in notices]
    assert chunks[-1] == TextDelta("ok") and script.calls == 3


async def test_driver_gives_up_after_max_retries() -> None:
    script = Script(*[(retryable(), 0)] * 5)
    with pytest.raises(ProviderError):
        await run(script, RetryConfig(max_retries=2, initial_delay=0.01))
    assert script.calls == 3


async def test_driver_never_retries_non_retryable_or_after_output() -> None:
    script = Script((ProviderError("p: 401 auth", kind="auth", retryable=False), 0))
    with pytest.raises(ProviderError, match="401"):
        await run(script, CFG)
    assert script.calls == 1
    script = Script((retryable("p: stream cut"), 2))
    with pytest.raises(ProviderError, match="stream cut"):
        await run(script, CFG)
    assert script.calls == 1


async def test_zero_retries() -> None:
    script = Script((retryable(), 0))
    with pytest.raises(ProviderError):
        await run(script, RetryConfig(max_retries=0))
    assert script.calls == 1


# ---- factory -------------------------------------------------------------------------


async def test_make_provider_picks_the_adapter_and_owns_its_client() -> None:
    spec = ProviderSpec(id="local", type="openai", base_url="http://127.0.0.1:9/v1", model="m")
    provider = make_provider(spec)
    assert isinstance(provider, OpenAIProvider) and provider.id == "local"
    await provider.aclose()
    assert provider._client.is_closed

    async with httpx.AsyncClient() as client:
        spec = ProviderSpec(id="anthropic", type="anthropic", base_url="http://127.0.0.1:9", model="m")
        provider = make_provider(spec, RetryConfig(max_retries=5), client=client)
        assert isinstance(provider, AnthropicProvider) and provider.retry.max_retries == 5
        await provider.aclose()
        assert not client.is_closed  # an injected client is the caller's to close


def test_make_provider_unknown_type() -> None:
    spec = ProviderSpec(id="x", type="grpc", base_url="http://h", model="m")  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="unknown provider type"):
        make_provider(spec)


def test_factory_import_is_light() -> None:
    import subprocess
    import sys

    code = "import sys, etcode.provider.factory; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_retry_policy_loads_no_http_client() -> None:
    """``chat_client`` (an ``llm=`` client of the caller's) retries through it without httpx."""
    import subprocess
    import sys

    code = "import sys, etcode.provider.retry, etcode.provider.chat_client; print('httpx' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr
