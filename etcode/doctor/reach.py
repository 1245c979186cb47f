"""Is the model's server there, and does it take the key? One bounded ``GET .../models``:
``{baseURL}/models`` on the OpenAI wire (llama.cpp, vLLM, Ollama, LM Studio and the hosted
services serve it), ``{baseURL}/v1/models`` with ``x-api-key`` on Anthropic's."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

from etcode.doctor.check import Check, fail, ok, warn
from etcode.util.json_types import JsonValue

if TYPE_CHECKING:
    from etcode.provider.spec import ProviderSpec

#: Each request's time limit (seconds); the whole probe ends soon after it, whatever happens.
TIMEOUT = 5.0
#: Larger answers are not read (a hosted service's model list is a few hundred kB).
MAX_BODY = 4 * 1024 * 1024
#: How many of the listed models a line names.
SHOWN = 5


def models_url(spec: ProviderSpec) -> str:
    base = spec.base_url.rstrip("/")
    return f"{base}/v1/models?limit=1000" if spec.type == "anthropic" else f"{base}/models"


async def check_reach(spec: ProviderSpec, key_source: str | None, timeout: float = TIMEOUT) -> Check:
    """The ``reachable`` line: never longer than ``timeout`` plus a second."""
    url = models_url(spec)
    try:
        status, body, seconds = await asyncio.wait_for(_get(spec, url, timeout), timeout + 1.0)
    except TimeoutError:
        return fail("reachable", f"{url}: no answer within {timeout:g} s", _start_fix(spec))
    except _Unreachable as err:
        return fail("reachable", str(err), _start_fix(spec))
    elapsed = f"{seconds * 1000:.0f} ms"
    if status in (401, 403):
        where = key_source or "its key"
        return fail(
            "reachable",
            f"{url}: HTTP {status}: the key was refused ({_message(body)})",
            f"check {where}: it must be a valid key for {spec.id}",
        )
    if status == 404:
        return warn(
            "reachable",
            f"{url}: the server answered HTTP 404 in {elapsed} (it is up, but lists no models there)",
            "if chats fail too, check baseURL: OpenAI-compatible servers usually end in /v1",
        )
    if status >= 400:
        return fail("reachable", f"{url}: HTTP {status} ({_message(body)})", "see the server's message")
    return _listed(spec, url, body, elapsed)


def _listed(spec: ProviderSpec, url: str, body: bytes, elapsed: str) -> Check:
    """200: does the list hold the model? (A local one-model server, such as llama.cpp's,
    answers to any name; Ollama's ``NAME:latest`` is ``NAME``.)"""
    ids = _ids(body)
    head = f"{url} answered in {elapsed}"
    if ids is None:
        return ok("reachable", head)
    from etcode.provider.discovery import server_kind

    kind = server_kind(spec)
    if not ids or (len(ids) == 1 and kind is not None) or _has(ids, spec.model):
        return ok("reachable", f"{head}; {spec.model} is served" if ids else head)
    listed = ", ".join(ids[:SHOWN]) + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")
    load = (
        f"or `ollama pull {spec.model}`"
        if kind == "ollama"
        else "or load the model into the server"
        if kind is not None
        else "or check the model's name"
    )
    return warn(
        "reachable",
        f"{head}, but does not list {spec.model} (it lists {listed})",
        f"use one of them (--model {spec.id}/NAME), {load}",
    )


def _has(ids: list[str], model: str) -> bool:
    """Is ``model`` among ``ids``: by its name, Ollama's ``NAME:latest``, the part after a
    ``vendor/``, or as an alias of a dated id (``claude-sonnet-4-0``, ``...-latest``)."""
    names = {model, f"{model}:latest", model.removesuffix(":latest")}
    base = model.rsplit("/", 1)[-1]
    stem = base.removesuffix("-latest").removesuffix("-0") + "-"
    return any(
        i in names or i.rsplit("/", 1)[-1] == base or i.rsplit("/", 1)[-1].startswith(stem) for i in ids
    )


def _ids(body: bytes) -> list[str] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        entries = data.get("models") if isinstance(data, dict) else None  # Ollama's /api/tags shape
    if not isinstance(entries, list):
        return None
    found = [e.get("id") or e.get("name") for e in entries if isinstance(e, dict)]
    return [i for i in found if isinstance(i, str)]


def _message(body: bytes) -> str:
    """The error's own message, if the body has one (short)."""
    try:
        data: JsonValue = json.loads(body)
    except ValueError:
        return body[:200].decode("utf-8", "replace").strip() or "no message"
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message)[:200] if message else "no message"


def _start_fix(spec: ProviderSpec) -> str:
    from etcode.provider.discovery import server_kind

    kind = server_kind(spec)
    if kind == "ollama":
        return f"start Ollama (`ollama serve`), or correct baseURL ({spec.base_url})"
    if kind is not None:
        return (
            "start the server (e.g. `llama-server -m MODEL.gguf --port PORT`, `vllm serve MODEL`), "
            f"or correct baseURL ({spec.base_url})"
        )
    return "check the network (and HTTPS_PROXY if you use one), or the provider's baseURL"


class _Unreachable(Exception):
    """No HTTP answer: the message says why, naming the URL."""


async def _get(spec: ProviderSpec, url: str, timeout: float) -> tuple[int, bytes, float]:
    """Status, body (at most ``MAX_BODY``) and seconds to the answer's headers."""
    import httpx

    from etcode.provider.factory import request_headers
    from etcode.provider.transport import ssl_context

    limits = httpx.Timeout(timeout)
    verify = ssl_context(url.startswith("https:"))
    started = time.monotonic()
    try:
        async with (
            httpx.AsyncClient(timeout=limits, verify=verify) as client,
            client.stream("GET", url, headers=request_headers(spec, accept="application/json")) as response,
        ):
            seconds = time.monotonic() - started
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_BODY:
                    break
                chunks.append(chunk)
            return response.status_code, b"".join(chunks), seconds
    except httpx.ConnectError as err:
        reason = _cause(err)
        raise _Unreachable(f"nothing answers at {spec.base_url}: {reason} (GET {url})") from None
    except httpx.TimeoutException:
        raise TimeoutError from None
    except httpx.HTTPError as err:
        raise _Unreachable(f"{url}: {type(err).__name__}: {err}") from None


def _cause(err: BaseException) -> str:
    """The innermost reason of a connection failure (``connection refused``, a DNS error)
    rather than anyio's "All connection attempts failed"."""
    seen: set[int] = set()
    reason = str(err) or type(err).__name__
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, OSError) and current.strerror:
            reason = current.strerror
        current = current.__cause__ or current.__context__
    return reason
