"""Ask a model server how large its context window is, when the catalog does not know.

Local servers say it: llama.cpp in ``GET /props`` (``default_generation_settings.n_ctx``, and
whether its chat template can use tools in ``chat_template_caps``), vLLM in ``GET /v1/models``
(``max_model_len``), Ollama in ``POST /api/show`` (``num_ctx`` or the model's context length),
LM Studio in ``GET /api/v0/models/{id}``. One discovery per base URL + model: its answer is
kept in memory and on disk (``$XDG_CACHE_HOME/etcode/servers.json``, for an hour), so the
next run asks nobody. A server that answers nothing useful is remembered as such; a server
that cannot be reached is not (the run itself will say so).

:class:`ServerProbe` starts the discovery in the background; the first request waits for it
at most :data:`GRACE` seconds from its start, then goes ahead without it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from etcode.provider.chat_templates import template_name
from etcode.provider.spec import KNOWN_PROVIDERS, ProviderSpec
from etcode.util.json_types import JsonArray, JsonObject, JsonValue

if TYPE_CHECKING:
    from httpx import AsyncBaseTransport, AsyncClient

log = logging.getLogger("etcode.discovery")

#: How long the first request waits for a discovery begun at start-up (seconds);
#: ``ETCODE_DISCOVERY_WAIT`` changes it (a slow machine, or tests that need the answer).
GRACE = 0.3
#: Each side request's time limit (seconds); the connection's is shorter.
REQUEST_TIMEOUT = 2.0
CONNECT_TIMEOUT = 1.0
#: A cached answer is trusted this long (seconds); an overflow error corrects it sooner.
CACHE_TTL = 3600.0
#: How long a command that shows the window (``etcode models``, ``debug prompt``) waits.
SHOW_WAIT = 3.0
#: Larger answers are not read (a hosted service's full model list).
MAX_BODY = 2 * 1024 * 1024
CACHE_FILE = "servers.json"

_OLLAMA_PORT = 11434
_LMSTUDIO_PORT = 1234
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.M)


@dataclass(frozen=True)
class ServerFacts:
    """What a server said about a model: ``context`` its window in tokens (None: not said),
    ``tools`` False when its chat template cannot use tools (None: not said), ``server``
    which kind answered and ``source`` the endpoint that said it. ``images``: whether the
    model takes images (llama.cpp's ``modalities.vision``, Ollama's ``vision`` capability,
    or False learned when the server refused a request's images); None: not known.
    ``token_ratio``: the server's real prompt tokens per token etcode's estimate counted
    (learned from ``usage.prompt_tokens``; None: not learned yet). ``template``: the chat
    template's family as llama.cpp's ``/props`` shows it (``provider.chat_templates``)."""

    context: int | None = None
    tools: bool | None = None
    server: str = ""
    source: str = ""
    images: bool | None = None
    token_ratio: float | None = None
    template: str = ""

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @property
    def label(self) -> str:
        """Where the window came from, as ``etcode models`` and ``debug prompt`` show it:
        ``server (llama.cpp /props)``."""
        said = " ".join(part for part in (self.server, self.source) if part)
        return f"server ({said})" if said else "server"

    @classmethod
    def from_dict(cls, data: JsonObject) -> ServerFacts:
        context = data.get("context")
        tools = data.get("tools")
        images = data.get("images")
        ratio = data.get("token_ratio")
        return cls(
            context if isinstance(context, int) and context > 0 else None,
            tools if isinstance(tools, bool) else None,
            str(data.get("server") or ""),
            str(data.get("source") or ""),
            images if isinstance(images, bool) else None,
            float(ratio)
            if isinstance(ratio, int | float) and not isinstance(ratio, bool) and ratio > 0
            else None,
            str(data.get("template") or ""),
        )


# ---- which server, which endpoint -----------------------------------------------------


def server_kind(spec: ProviderSpec) -> str | None:
    """``"ollama"``, ``"lmstudio"`` or ``"openai-compatible"`` (llama.cpp, vLLM and the
    like) for a server worth asking; None for the Anthropic wire and the hosted providers
    etcode knows (their catalog entries hold the limits)."""
    if spec.type != "openai" or not spec.base_url:
        return None
    port = _port(spec.base_url)
    if spec.id == "ollama" or port == _OLLAMA_PORT:
        return "ollama"
    if spec.id == "lmstudio" or port == _LMSTUDIO_PORT:
        return "lmstudio"
    known = KNOWN_PROVIDERS.get(spec.id)
    if known is not None and known.needs_key:
        return None
    return "openai-compatible"


def _port(url: str) -> int | None:
    try:
        return urlsplit(url).port
    except ValueError:
        return None


def server_root(base_url: str) -> str:
    """The server's root: the base URL without its ``/v1`` (``/props`` and ``/api/...``
    live beside it)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


# ---- reading the answers (pure functions, tested on recorded bodies) --------------------


def _positive(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    return int(value) if isinstance(value, int | float) and value > 0 else None


def parse_props(data: JsonValue) -> ServerFacts | None:
    """llama.cpp's ``GET /props``."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    context = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    context = context or _positive(data.get("n_ctx"))
    caps = data.get("chat_template_caps")
    tools = caps.get("supports_tools") if isinstance(caps, dict) else None
    modalities = data.get("modalities")
    vision = modalities.get("vision") if isinstance(modalities, dict) else None
    if context is None and not isinstance(tools, bool):
        return None
    source = data.get("chat_template")
    return ServerFacts(
        context,
        tools if isinstance(tools, bool) else None,
        "llama.cpp",
        "/props",
        vision if isinstance(vision, bool) else None,
        template=template_name(source) if isinstance(source, str) else "",
    )


def parse_models(data: JsonValue, model: str) -> ServerFacts | None:
    """An OpenAI-style ``GET /v1/models`` list: vLLM's ``max_model_len``, llama.cpp's
    ``meta.n_ctx`` (else ``n_ctx_train``), or a ``context_length``/``context_window``."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    entry = _entry_for(entries, model)
    if entry is None:
        return None
    raw_meta = entry.get("meta")
    meta: JsonObject = raw_meta if isinstance(raw_meta, dict) else {}
    for value, server in (
        (entry.get("max_model_len"), "vllm"),
        (meta.get("n_ctx"), "llama.cpp"),
        (meta.get("n_ctx_train"), "llama.cpp"),
        (entry.get("context_length"), "openai-compatible"),
        (entry.get("context_window"), "openai-compatible"),
    ):
        context = _positive(value)
        if context is not None:
            return ServerFacts(context, None, server, "/v1/models")
    return None


def _entry_for(entries: JsonArray, model: str) -> JsonObject | None:
    items = [e for e in entries if isinstance(e, dict)]
    base = model.rsplit("/", 1)[-1]
    for item in items:
        ids = [item.get("id"), *(item.get("aliases") or [])]
        if model in ids or any(isinstance(i, str) and i.rsplit("/", 1)[-1] == base for i in ids):
            return item
    return items[0] if len(items) == 1 else None  # a one-model server answers to any name


def parse_ollama_show(data: JsonValue) -> ServerFacts | None:
    """Ollama's ``POST /api/show``: ``num_ctx`` from its parameters (the window it runs
    with), else the model's ``<arch>.context_length``; ``capabilities`` lists ``tools``."""
    if not isinstance(data, dict):
        return None
    context = None
    parameters = data.get("parameters")
    if isinstance(parameters, str):
        found = _NUM_CTX.search(parameters)
        context = int(found.group(1)) if found else None
    info = data.get("model_info")
    if context is None and isinstance(info, dict):
        context = next((_positive(v) for k, v in info.items() if k.endswith(".context_length")), None)
    capabilities = data.get("capabilities")
    tools = "tools" in capabilities if isinstance(capabilities, list) else None
    images = "vision" in capabilities if isinstance(capabilities, list) else None
    if context is None and tools is None:
        return None
    return ServerFacts(context, tools, "ollama", "/api/show", images)


def parse_lmstudio(data: JsonValue) -> ServerFacts | None:
    """LM Studio's ``GET /api/v0/models/{id}``: the loaded window, else the model's."""
    if not isinstance(data, dict):
        return None
    context = _positive(data.get("loaded_context_length")) or _positive(data.get("max_context_length"))
    capabilities = data.get("capabilities")
    tools = "tool_use" in capabilities if isinstance(capabilities, list) else None
    if context is None:
        return None
    return ServerFacts(context, tools, "lmstudio", "/api/v0/models")


# ---- asking -------------------------------------------------------------------------


class _NoAnswer(Exception):
    """The server could not be reached (nothing to remember)."""


async def discover(spec: ProviderSpec, *, transport: AsyncBaseTransport | None = None) -> ServerFacts | None:
    """Ask the server behind ``spec`` (no cache). None when it is not a server worth
    asking or it said nothing useful; raises nothing (problems are logged at debug)."""
    kind = server_kind(spec)
    if kind is None:
        return None
    try:
        return await _ask(spec, kind, transport)
    except _NoAnswer:
        raise
    except Exception as err:  # a side request never fails the run
        log.debug("window discovery for %s failed: %s", spec.full_id, err)
        return None


async def _ask(spec: ProviderSpec, kind: str, transport: AsyncBaseTransport | None) -> ServerFacts | None:
    import httpx

    from etcode.provider.factory import request_headers

    headers = request_headers(spec, accept="application/json")
    timeout = httpx.Timeout(REQUEST_TIMEOUT, connect=CONNECT_TIMEOUT)
    root, base = server_root(spec.base_url), spec.base_url.rstrip("/")
    async with httpx.AsyncClient(timeout=timeout, headers=headers, transport=transport) as client:
        if kind == "ollama":
            return parse_ollama_show(await _json(client, "POST", f"{root}/api/show", {"model": spec.model}))
        if kind == "lmstudio":
            return parse_lmstudio(
                await _json(client, "GET", f"{root}/api/v0/models/{quote(spec.model, safe='')}")
            )
        props = await _json(client, "GET", f"{root}/props")
        facts = parse_props(props)
        if facts is not None and facts.context is not None:
            return facts
        listed = parse_models(await _json(client, "GET", f"{base}/models"), spec.model)
        if listed is not None and facts is not None:  # llama.cpp's tool caps with the list's window
            return ServerFacts(listed.context, facts.tools, facts.server, listed.source, facts.images)
        return listed or facts


async def _json(client: AsyncClient, method: str, url: str, body: JsonValue = None) -> JsonValue:
    """The JSON answer at ``url``; None for an error status or a body that is not JSON.
    Raises :class:`_NoAnswer` when the server cannot be reached."""
    import httpx

    try:
        async with client.stream(method, url, json=body) as response:
            if response.status_code >= 400:
                return None
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_BODY:
                    return None
                chunks.append(chunk)
    except (httpx.ConnectError, httpx.ConnectTimeout) as err:
        raise _NoAnswer(str(err)) from err
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return None


# ---- remembering ----------------------------------------------------------------------

_memory: dict[str, tuple[float, ServerFacts | None]] = {}


def cache_key(spec: ProviderSpec) -> str:
    return f"{spec.base_url.rstrip('/')} {spec.model}"


def _cache_path() -> Path:
    from etcode.util.paths import cache_dir

    return cache_dir() / CACHE_FILE


def _read_cache() -> JsonObject:
    try:
        data = json.loads(_cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached(spec: ProviderSpec, now: float | None = None) -> tuple[bool, ServerFacts | None]:
    """``(found, facts)`` from memory or the disk cache while fresh; ``facts`` may be None
    (the server was asked and said nothing useful)."""
    now = time.time() if now is None else now
    key = cache_key(spec)
    hit = _memory.get(key)
    if hit is not None and now - hit[0] < CACHE_TTL:
        return True, hit[1]
    entry = _read_cache().get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("at"), int | float):
        return False, None
    if now - entry["at"] >= CACHE_TTL:
        return False, None
    facts = ServerFacts.from_dict(entry["facts"]) if isinstance(entry.get("facts"), dict) else None
    _memory[key] = (float(entry["at"]), facts)
    return True, facts


def remember(spec: ProviderSpec, facts: ServerFacts | None, now: float | None = None) -> None:
    """Keep ``facts`` for ``spec`` in memory and on disk (a failed write is only logged)."""
    now = time.time() if now is None else now
    key = cache_key(spec)
    _memory[key] = (now, facts)
    path = _cache_path()
    data = {
        k: v for k, v in _read_cache().items() if isinstance(v, dict) and now - v.get("at", 0) < CACHE_TTL
    }
    data[key] = {"at": now, "facts": facts.to_dict() if facts is not None else None}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(temporary, path)
    except OSError as err:
        log.debug("window cache %s not written: %s", path, err)


def correct_window(spec: ProviderSpec, context: int) -> None:
    """The server stated ``context`` (in an overflow error): keep it for the next run."""
    found, facts = cached(spec)
    if found and facts is not None and facts.context == context:
        return
    base = facts if facts is not None else ServerFacts(server="", source="")
    remember(spec, replace(base, context=context, source="overflow error"))


def calibrate(spec: ProviderSpec, ratio: float) -> None:
    """The server's prompt tokens per token etcode counts (``engine.calibration``, learned
    from its reported usage): kept with its facts for the next runs, which expire as they
    would have (the ratio keeps no window alive). Without facts nothing is kept: an entry
    holding only a ratio would stand for the server's answer and stop the next discovery."""
    found, facts = cached(spec)
    hit = _memory.get(cache_key(spec))
    if not found or facts is None or hit is None or facts.token_ratio == ratio:
        return
    remember(spec, replace(facts, token_ratio=ratio), now=hit[0])


def refuse_images(spec: ProviderSpec) -> None:
    """The server refused a request's images: ``images: false`` is kept with its facts, so
    the next runs send the notice in their place at once. It expires with them
    (:data:`CACHE_TTL`): the model behind a server's name may change, and one refused request
    an hour is cheap."""
    found, facts = cached(spec)
    if found and facts is not None and facts.images is False:
        return
    base = facts if facts is not None else ServerFacts()
    remember(spec, replace(base, images=False))


def forget_all() -> None:
    """Drop the in-memory answers (tests; the disk cache follows ``XDG_CACHE_HOME``)."""
    _memory.clear()


def configured_grace() -> float:
    """:data:`GRACE`, or ``ETCODE_DISCOVERY_WAIT`` when it is a number of seconds."""
    try:
        value = float(os.environ.get("ETCODE_DISCOVERY_WAIT", ""))
    except ValueError:
        return GRACE
    return value if value >= 0 else GRACE


class ServerProbe:
    """One window discovery for a spec, begun early (see the module docstring)."""

    def __init__(
        self, spec: ProviderSpec, *, grace: float | None = None, transport: AsyncBaseTransport | None = None
    ) -> None:
        self.spec = spec
        self.grace = grace if grace is not None else configured_grace()
        self.started = time.monotonic()
        self._facts: ServerFacts | None = None
        self._task: asyncio.Task[ServerFacts | None] | None = None
        found, facts = cached(spec)
        if found:
            self._facts = facts
        else:
            self._task = asyncio.ensure_future(self._run(transport))

    @classmethod
    def begin(
        cls, spec: ProviderSpec, *, grace: float | None = None, transport: AsyncBaseTransport | None = None
    ) -> ServerProbe | None:
        """A probe for ``spec``; None when its server is not one to ask."""
        return cls(spec, grace=grace, transport=transport) if server_kind(spec) is not None else None

    async def _run(self, transport: AsyncBaseTransport | None) -> ServerFacts | None:
        try:
            facts = await discover(self.spec, transport=transport)
        except _NoAnswer as err:
            log.debug("window discovery for %s: no answer (%s)", self.spec.full_id, err)
            return None
        remember(self.spec, facts)
        return facts

    def ready(self) -> ServerFacts | None:
        """The facts when known by now (never waits)."""
        task = self._task
        if task is not None and task.done():
            self._task = None
            self._facts = None if task.cancelled() or task.exception() else task.result()
        return self._facts

    async def settle(self) -> ServerFacts | None:
        """The facts, waiting for them until ``grace`` seconds after the probe began."""
        task = self._task
        if task is not None and not task.done():
            left = self.grace - (time.monotonic() - self.started)
            if left > 0:
                await asyncio.wait({task}, timeout=left)
        return self.ready()

    async def aclose(self) -> None:
        """Stop a discovery still under way (nothing is left running after the session)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def ask_all(specs: list[ProviderSpec], wait: float = SHOW_WAIT) -> list[ServerFacts | None]:
    """What each server says (cached answers first), all asked at once, waiting at most
    ``wait`` seconds; nothing is left running afterwards."""
    probes = [ServerProbe(spec, grace=wait) for spec in specs]
    try:
        return list(await asyncio.gather(*(probe.settle() for probe in probes)))
    finally:
        await asyncio.gather(*(probe.aclose() for probe in probes))
