"""Ask a model server how large its context window is, when the catalog does not know.

Local servers say it: llama.cpp in ``GET /props`` (``default_generation_settings.n_ctx``, and
whether its chat template can use tools in ``chat_template_caps``), vLLM in ``GET /v1/models``
(``max_model_len``), Ollama in ``POST /api/show`` (``num_ctx``; without one Ollama runs its own
default window, see :data:`OLLAMA_DEFAULT_CONTEXT`, or the one ``GET /api/ps`` shows loaded),
LM Studio in ``GET /api/v0/models/{id}``. Answers are kept in memory and on disk
(``$XDG_CACHE_HOME/etcode/servers.json``, for an hour).

What is remembered: only real answers, and a 404 ("no such endpoint": a proxy without
``/props`` stays without it). A 401/403 (a mistyped key), a 5xx, a timeout or a server that
cannot be reached is never remembered: the next run asks again. A 503 (llama.cpp while it
loads a model), another 5xx, a 429 or a timeout is asked again during the run, with a growing
pause (:data:`RETRY_FIRST` to :data:`RETRY_MAX` seconds, for at most :data:`RETRY_FOR`), until
the session ends.

A remembered answer is used at once by the next run, which also asks the (local, cheap)
server again in the background: a fresh real answer replaces the remembered one, so a server
restarted with a larger window is seen; an answer that says nothing new (an error, a page
gone) is not saved again, so the remembered one expires an hour after it was given. What a run
learned (a window an overflow error taught, kept while the server still states what it stated
when that error proved it wrong: ``stated``; the token ratio; a refusal of images) is carried
into the renewed answer for an hour from when it was learned, not for ever.

A server on LM Studio's port (1234) is asked LM Studio's ``/api/v0`` first; without it (an
older LM Studio, a llama.cpp started with ``--port 1234``), as any OpenAI-compatible server.

:class:`ServerProbe` starts the discovery in the background; the first request waits for it
at most :data:`GRACE` seconds from its start, then goes ahead without it; ``ready()`` returns
the facts as soon as they come.
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
    import ssl

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
#: A transient failure (503 while a model loads, another 5xx, 429, a timeout) is asked again
#: after this many seconds, doubling up to :data:`RETRY_MAX`, for at most :data:`RETRY_FOR`.
RETRY_FIRST = 0.5
RETRY_MAX = 5.0
RETRY_FOR = 600.0
#: The window Ollama runs a model with when neither the model (``num_ctx``) nor the server
#: (``OLLAMA_CONTEXT_LENGTH``) sets one: 4,096 tokens (Ollama's docs/faq; newer versions
#: give GPUs with 24 GiB of VRAM or more 32k/256k, so this is the safe guess).
OLLAMA_DEFAULT_CONTEXT = 4096
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
    (learned from ``usage.prompt_tokens``; None: not learned yet).
    ``stated``: the window the server stated when an overflow error proved it wrong
    (``source`` is then ``"overflow error"``). ``trained``: the model's trained window when
    the server runs it with less without being told to (Ollama without ``num_ctx``).
    ``listed``: what the server lists when it does not list the model (None: it does, or
    it was not asked). ``template``: the chat
    template's family as llama.cpp's ``/props`` shows it (``provider.chat_templates``).
    ``ratio_at``, ``images_at``, ``overflow_at``: when a run learned the token ratio, a
    refusal of images, a window from an overflow error (``time.time()``); a renewal carries
    them forward only for :data:`CACHE_TTL` from then (:func:`renewed`)."""

    context: int | None = None
    tools: bool | None = None
    server: str = ""
    source: str = ""
    images: bool | None = None
    token_ratio: float | None = None
    stated: int | None = None
    trained: int | None = None
    listed: tuple[str, ...] | None = None
    template: str = ""
    ratio_at: float | None = None
    images_at: float | None = None
    overflow_at: float | None = None

    def to_dict(self) -> JsonObject:
        data: JsonObject = asdict(self)
        data["listed"] = list(self.listed) if self.listed is not None else None
        return data

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
        listed = data.get("listed")
        return cls(
            context if isinstance(context, int) and context > 0 else None,
            tools if isinstance(tools, bool) else None,
            str(data.get("server") or ""),
            str(data.get("source") or ""),
            images if isinstance(images, bool) else None,
            float(ratio)
            if isinstance(ratio, int | float) and not isinstance(ratio, bool) and ratio > 0
            else None,
            _positive(data.get("stated")),
            _positive(data.get("trained")),
            tuple(str(name) for name in listed) if isinstance(listed, list) else None,
            str(data.get("template") or ""),
            _moment(data.get("ratio_at")),
            _moment(data.get("images_at")),
            _moment(data.get("overflow_at")),
        )


# ---- which server, which endpoint -----------------------------------------------------


def server_kind(spec: ProviderSpec) -> str | None:
    """``"ollama"``, ``"lmstudio"`` (its ``/api/v0`` first, then as ``"openai-compatible"``)
    or ``"openai-compatible"`` (llama.cpp, vLLM and the like) for a server worth asking; None for the Anthropic wire and the hosted providers
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


def _moment(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _short(name: str) -> str:
    """A served model's name as a user writes it: no folder, no ``.gguf``, lower case."""
    base = name.rsplit("/", 1)[-1].lower()
    return base[: -len(".gguf")] if base.endswith(".gguf") else base


def lists_model(names: list[str] | tuple[str, ...], model: str) -> bool:
    """Whether a server listing ``names`` serves ``model``: the same name, or a short name
    of it (``qwen2.5-coder`` for ``/models/Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf``)."""
    wanted = _short(model)
    return not names or any(
        name == model or _short(name) == wanted or _short(name).startswith(wanted) for name in names
    )


def _listed(names: list[str], model: str) -> tuple[str, ...] | None:
    names = list(dict.fromkeys(n for n in names if n))
    return None if lists_model(names, model) else tuple(names)


def parse_props(data: JsonValue, model: str = "") -> ServerFacts | None:
    """llama.cpp's ``GET /props`` (``model_alias``/``model_path``: the model it runs)."""
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
    names = [n for n in (data.get("model_alias"), data.get("model_path")) if isinstance(n, str)]
    source = data.get("chat_template")
    return ServerFacts(
        context,
        tools if isinstance(tools, bool) else None,
        "llama.cpp",
        "/props",
        vision if isinstance(vision, bool) else None,
        listed=_listed(names, model) if model else None,
        template=template_name(source) if isinstance(source, str) else "",
    )


def model_names(data: JsonValue) -> list[str]:
    """The names an OpenAI-style ``GET /v1/models`` lists (``data[].id``), or Ollama's
    ``GET /api/tags`` (``models[].name``)."""
    if not isinstance(data, dict):
        return []
    entries = data.get("data")
    key = "id"
    if not isinstance(entries, list):
        entries, key = data.get("models"), "name"
    if not isinstance(entries, list):
        return []
    return [e[key] for e in entries if isinstance(e, dict) and isinstance(e.get(key), str)]


def parse_models(data: JsonValue, model: str) -> ServerFacts | None:
    """An OpenAI-style ``GET /v1/models`` list: vLLM's ``max_model_len``, llama.cpp's
    ``meta.n_ctx`` (else ``n_ctx_train``), or a ``context_length``/``context_window``; a list
    without ``model`` says what it lists instead (``listed``)."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    entry = _entry_for(entries, model)
    if entry is None:
        names = model_names(data)
        listed = _listed(names, model) if names else None
        return ServerFacts(server="openai-compatible", source="/v1/models", listed=listed) if listed else None
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
    with); without one Ollama runs its default (:data:`OLLAMA_DEFAULT_CONTEXT`, at most the
    model's ``<arch>.context_length``), and ``trained`` keeps the larger trained window;
    ``capabilities`` lists ``tools``."""
    if not isinstance(data, dict):
        return None
    context = None
    parameters = data.get("parameters")
    if isinstance(parameters, str):
        found = _NUM_CTX.search(parameters)
        context = int(found.group(1)) if found else None
    trained = None
    info = data.get("model_info")
    if isinstance(info, dict):
        trained = next((_positive(v) for k, v in info.items() if k.endswith(".context_length")), None)
    source = "/api/show"
    if context is None:
        context = min(trained, OLLAMA_DEFAULT_CONTEXT) if trained else OLLAMA_DEFAULT_CONTEXT
        source = "/api/show, Ollama's default"
    capabilities = data.get("capabilities")
    tools = "tools" in capabilities if isinstance(capabilities, list) else None
    images = "vision" in capabilities if isinstance(capabilities, list) else None
    return ServerFacts(
        context,
        tools,
        "ollama",
        source,
        images,
        trained=trained if source != "/api/show" and trained and trained > context else None,
    )


def parse_ollama_ps(data: JsonValue, model: str) -> int | None:
    """The window Ollama runs ``model`` with now (``GET /api/ps``'s ``context_length``), when
    it is loaded."""
    loaded = data.get("models") if isinstance(data, dict) else None
    if not isinstance(loaded, list):
        return None
    names = {model, f"{model}:latest"}
    for entry in loaded:
        if isinstance(entry, dict) and (entry.get("name") in names or entry.get("model") in names):
            return _positive(entry.get("context_length"))
    return None


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


def _tls(spec: ProviderSpec) -> ssl.SSLContext:
    """The process's TLS context (no CA bundle loaded for a plain ``http://`` server: a
    renewal each run stays cheap)."""
    from etcode.provider.transport import ssl_context

    return ssl_context(spec.base_url.lower().startswith("https://"))


class _NoAnswer(Exception):
    """The server could not be reached (nothing to remember)."""


class _Unanswered(Exception):
    """The server answered with an error that says nothing about it: a 401/403 (a wrong
    key), a 5xx, a 429, a timeout. Never remembered; ``again``: worth asking again soon
    (a 503 while a model loads)."""

    def __init__(self, what: str, *, again: bool) -> None:
        super().__init__(what)
        self.again = again


class _Missing(Exception):
    """A 404 or 405 at an endpoint: there is no such page (a real answer)."""


@dataclass(frozen=True)
class _Answer:
    """What one discovery found; ``keep``: worth remembering (False for an Ollama or LM
    Studio model that is not there yet: it may be pulled in a minute)."""

    facts: ServerFacts | None
    keep: bool = True


async def discover(spec: ProviderSpec, *, transport: AsyncBaseTransport | None = None) -> ServerFacts | None:
    """Ask the server behind ``spec`` once (no cache, no retry). None when it is not a
    server worth asking, said nothing useful or answered with an error."""
    kind = server_kind(spec)
    if kind is None:
        return None
    try:
        return (await _ask(spec, kind, transport)).facts
    except (_NoAnswer, _Unanswered) as err:
        log.debug("window discovery for %s: %s", spec.full_id, err)
        return None


async def _ask(spec: ProviderSpec, kind: str, transport: AsyncBaseTransport | None) -> _Answer:
    """One discovery. Raises :class:`_NoAnswer` (unreachable) or :class:`_Unanswered`."""
    import httpx

    from etcode.provider.factory import request_headers

    headers = request_headers(spec, accept="application/json")
    timeout = httpx.Timeout(REQUEST_TIMEOUT, connect=CONNECT_TIMEOUT)
    root, base = server_root(spec.base_url), spec.base_url.rstrip("/")
    async with httpx.AsyncClient(
        timeout=timeout, headers=headers, transport=transport, verify=_tls(spec)
    ) as client:
        if kind == "ollama":
            return await _ask_ollama(client, spec, root)
        if kind == "lmstudio":
            try:
                page = await _json(client, "GET", f"{root}/api/v0/models/{quote(spec.model, safe='')}")
            except _Missing:  # not there (yet), an LM Studio without /api/v0, or another server on 1234
                answer = await _ask_openai_compatible(client, spec, root, base)
                unlisted = answer.facts is not None and answer.facts.listed is not None
                return replace(answer, keep=False) if unlisted else answer  # it may be loaded in a minute
            return _Answer(parse_lmstudio(page))
        return await _ask_openai_compatible(client, spec, root, base)


async def _ask_openai_compatible(client: AsyncClient, spec: ProviderSpec, root: str, base: str) -> _Answer:
    """llama.cpp's ``/props``, then the ``/models`` list (vLLM's window, or what it lists)."""
    facts = parse_props(await _page(client, "GET", f"{root}/props"), spec.model)
    if facts is not None and facts.context is not None:
        return _Answer(facts)
    listed = parse_models(await _page(client, "GET", f"{base}/models"), spec.model)
    if listed is not None and facts is not None:  # llama.cpp's tool caps with the list's window
        return _Answer(replace(facts, context=listed.context, source=listed.source))
    return _Answer(listed or facts)


async def _ask_ollama(client: AsyncClient, spec: ProviderSpec, root: str) -> _Answer:
    """``/api/show``, then (without ``num_ctx``) the window ``/api/ps`` shows loaded."""
    try:
        facts = parse_ollama_show(await _json(client, "POST", f"{root}/api/show", {"model": spec.model}))
    except _Missing:  # no such model (not pulled yet): what the server has instead
        return await _not_served(client, f"{root}/api/tags", spec)
    if facts is None or facts.source == "/api/show":
        return _Answer(facts)
    try:
        loaded = parse_ollama_ps(await _json(client, "GET", f"{root}/api/ps"), spec.model)
    except (_Missing, _Unanswered):
        loaded = None
    if loaded is not None:
        trained = facts.trained if facts.trained and facts.trained > loaded else None
        facts = replace(facts, context=loaded, source="/api/ps", trained=trained)
    return _Answer(facts)


async def _not_served(client: AsyncClient, url: str, spec: ProviderSpec) -> _Answer:
    """Ollama has no such model: what its ``/api/tags`` lists instead (nothing when it lists
    the model after all, or an empty list: "it lists no model"). Never remembered."""
    page = await _page(client, "GET", url)
    if page is None:  # no list to show either
        return _Answer(None, keep=False)
    names = model_names(page)
    listed = _listed(names, spec.model) if names else ()
    if listed is None:
        return _Answer(None, keep=False)
    return _Answer(ServerFacts(server="ollama", source=urlsplit(url).path, listed=listed), keep=False)


async def _page(client: AsyncClient, method: str, url: str, body: JsonValue = None) -> JsonValue:
    """:func:`_json`, with a missing page read as None."""
    try:
        return await _json(client, method, url, body)
    except _Missing:
        return None


#: Statuses that mean "no such page": remembered like an answer.
_MISSING = frozenset({404, 405})
#: Statuses worth asking again during the run (a model loading, a busy server).
_AGAIN = frozenset({408, 425, 429})


async def _json(client: AsyncClient, method: str, url: str, body: JsonValue = None) -> JsonValue:
    """The JSON answer at ``url``; None for a body that is not JSON (or too large).
    Raises :class:`_Missing` for a 404/405, :class:`_Unanswered` for another error status
    or a timeout, :class:`_NoAnswer` when the server cannot be reached."""
    import httpx

    try:
        async with client.stream(method, url, json=body) as response:
            status = response.status_code
            if status in _MISSING:
                raise _Missing(f"{status} at {url}")
            if status >= 400:
                again = status >= 500 or status in _AGAIN
                raise _Unanswered(f"{status} at {url}", again=again)
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_BODY:
                    return None
                chunks.append(chunk)
    except (httpx.ConnectError, httpx.ConnectTimeout) as err:
        raise _NoAnswer(str(err)) from err
    except httpx.TimeoutException as err:
        raise _Unanswered(f"no answer in time at {url}", again=True) from err
    except httpx.HTTPError as err:  # the connection dropped mid-answer
        raise _Unanswered(f"{type(err).__name__} at {url}", again=True) from err
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
    """The server stated ``context`` (in an overflow error): keep it for the next runs, with
    the window the server's own pages stated (``stated``), so that a fresh answer that says
    the same again does not undo it (:func:`renewed`)."""
    found, facts = cached(spec)
    if found and facts is not None and facts.context == context:
        return
    base = facts if facts is not None else ServerFacts(server="", source="")
    stated = base.stated if base.source == "overflow error" else base.context
    remember(
        spec,
        replace(base, context=context, source="overflow error", stated=stated, overflow_at=time.time()),
    )


def renewed(
    old: ServerFacts | None, fresh: ServerFacts | None, now: float | None = None
) -> ServerFacts | None:
    """A fresh answer in place of a remembered one. What the server says now wins (a
    restart with a larger window); what only a run could learn is kept for
    :data:`CACHE_TTL` from when it was learned (the token ratio, a refusal of images the
    server does not contradict), and so is a window an overflow error taught while the
    server states what it stated then."""
    if old is None or fresh is None:
        return fresh if fresh is not None else old
    now = time.time() if now is None else now

    def young(at: float | None) -> bool:
        return at is not None and now - at < CACHE_TTL

    facts = replace(fresh, tools=fresh.tools if fresh.tools is not None else old.tools)
    if fresh.images is None and (old.images_at is None or young(old.images_at)):
        # what the server said before, or a refusal a run learned within the hour
        facts = replace(facts, images=old.images, images_at=old.images_at)
    if fresh.token_ratio is None and young(old.ratio_at):
        facts = replace(facts, token_ratio=old.token_ratio, ratio_at=old.ratio_at)
    overflow = old.source == "overflow error" and young(old.overflow_at)
    if overflow and (fresh.context is None or fresh.context == old.stated):
        facts = replace(
            facts, context=old.context, source=old.source, stated=old.stated, overflow_at=old.overflow_at
        )
    return facts


def calibrate(spec: ProviderSpec, ratio: float) -> None:
    """The server's prompt tokens per token etcode counts (``engine.calibration``, learned
    from its reported usage): kept with its facts for the next runs, which expire as they
    would have (the ratio keeps no window alive). Without facts nothing is kept: an entry
    holding only a ratio would stand for the server's answer and stop the next discovery."""
    found, facts = cached(spec)
    hit = _memory.get(cache_key(spec))
    if not found or facts is None or hit is None or facts.token_ratio == ratio:
        return
    remember(spec, replace(facts, token_ratio=ratio, ratio_at=time.time()), now=hit[0])


def refuse_images(spec: ProviderSpec) -> None:
    """The server refused a request's images: ``images: false`` is kept with its facts, so
    the next runs send the notice in their place at once. It expires with them
    (:data:`CACHE_TTL`): the model behind a server's name may change, and one refused request
    an hour is cheap: the renewal of the server's answer keeps it only that long from now
    (``images_at``)."""
    found, facts = cached(spec)
    if found and facts is not None and facts.images is False:
        return
    base = facts if facts is not None else ServerFacts()
    remember(spec, replace(base, images=False, images_at=time.time()))


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
    """One window discovery for a spec, begun early (see the module docstring): a
    remembered answer is there at once (and asked again in the background), a new one as
    soon as it comes; a transient failure is asked again until :meth:`aclose`."""

    def __init__(
        self, spec: ProviderSpec, *, grace: float | None = None, transport: AsyncBaseTransport | None = None
    ) -> None:
        self.spec = spec
        self.grace = grace if grace is not None else configured_grace()
        self.started = time.monotonic()
        #: The notices about these facts already shown this session (each is said once).
        self.shown: set[str] = set()
        self._facts: ServerFacts | None = None
        self._task: asyncio.Task[ServerFacts | None] | None = None
        found, facts = cached(spec)
        self._facts = facts
        if not found or facts is not None:  # a remembered "no such page" is not asked again
            self._task = asyncio.ensure_future(self._run(transport))

    @classmethod
    def begin(
        cls, spec: ProviderSpec, *, grace: float | None = None, transport: AsyncBaseTransport | None = None
    ) -> ServerProbe | None:
        """A probe for ``spec``; None when its server is not one to ask."""
        return cls(spec, grace=grace, transport=transport) if server_kind(spec) is not None else None

    async def _run(self, transport: AsyncBaseTransport | None) -> ServerFacts | None:
        kind = server_kind(self.spec)
        if kind is None:
            return self._facts
        pause, give_up = RETRY_FIRST, time.monotonic() + RETRY_FOR
        while True:
            try:
                answer = await _ask(self.spec, kind, transport)
            except _Unanswered as err:
                if not err.again or time.monotonic() + pause > give_up:
                    log.debug("window discovery for %s: %s (not remembered)", self.spec.full_id, err)
                    return self._facts
                log.debug("window discovery for %s: %s, asking again in %g s", self.spec.full_id, err, pause)
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX)
                continue
            except _NoAnswer as err:
                log.debug("window discovery for %s: no answer (%s)", self.spec.full_id, err)
                return self._facts
            except Exception as err:  # a side request never fails the run
                log.debug("window discovery for %s failed: %s", self.spec.full_id, err)
                return self._facts
            break
        found, current = cached(self.spec)  # what this run learned meanwhile (an overflow)
        old = current if found else self._facts
        if answer.facts is None and old is not None:  # nothing new: the old answer expires as it would
            return old
        facts = renewed(old, answer.facts)
        if answer.keep:
            remember(self.spec, facts)
        return facts

    def ready(self) -> ServerFacts | None:
        """The facts when known by now (never waits): a remembered answer at once, a fresh
        one as soon as it came."""
        task = self._task
        if task is not None and task.done():
            self._task = None
            if not task.cancelled() and task.exception() is None:
                self._facts = task.result()
        return self._facts

    async def settle(self) -> ServerFacts | None:
        """The facts, waiting for the (fresh) answer until ``grace`` seconds after the probe
        began."""
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


async def served_models(
    spec: ProviderSpec, *, transport: AsyncBaseTransport | None = None
) -> list[str] | None:
    """The models the server behind ``spec`` offers: Ollama's ``GET /api/tags``, else the
    OpenAI-style ``GET {baseURL}/models``. None when it is not a server worth asking or it
    did not say (one request, its own time limits; never raises)."""
    import httpx

    from etcode.provider.factory import request_headers

    kind = server_kind(spec)
    if kind is None:
        return None
    url = (
        f"{server_root(spec.base_url)}/api/tags"
        if kind == "ollama"
        else f"{spec.base_url.rstrip('/')}/models"
    )
    timeout = httpx.Timeout(REQUEST_TIMEOUT, connect=CONNECT_TIMEOUT)
    headers = request_headers(spec, accept="application/json")
    try:
        async with httpx.AsyncClient(
            timeout=timeout, headers=headers, transport=transport, verify=_tls(spec)
        ) as client:
            names = model_names(await _json(client, "GET", url))
    except Exception as err:  # a side request never fails the command
        log.debug("model list of %s: %s", spec.full_id, err)
        return None
    return list(dict.fromkeys(names))


async def list_all(specs: list[ProviderSpec], wait: float = SHOW_WAIT) -> list[list[str] | None]:
    """:func:`served_models` of each spec, all asked at once, waiting at most ``wait``
    seconds (a server that has not answered by then counts as silent)."""
    tasks = [asyncio.ensure_future(served_models(spec)) for spec in specs]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, timeout=wait)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return [t.result() if not t.cancelled() and t.exception() is None else None for t in tasks]
