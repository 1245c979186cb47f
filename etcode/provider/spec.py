"""Plain settings objects for providers: which endpoint, which key, how to retry.

Kept free of httpx so the config layer and the CLI can build them cheaply.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from etcode.util.json_types import JsonObject

WireFormat = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class KnownProvider:
    type: WireFormat
    base_url: str
    key_env: tuple[str, ...]
    needs_key: bool = True


#: Providers that need no ``type``/``baseURL`` in config. OpenAI-style base URLs include
#: ``/v1`` (requests go to ``{base}/chat/completions``); Anthropic's exclude it.
KNOWN_PROVIDERS: dict[str, KnownProvider] = {
    "anthropic": KnownProvider("anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",)),
    "openai": KnownProvider("openai", "https://api.openai.com/v1", ("OPENAI_API_KEY",)),
    "openrouter": KnownProvider("openai", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    "deepseek": KnownProvider("openai", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",)),
    "groq": KnownProvider("openai", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    "gemini": KnownProvider(
        "openai",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ),
    "mistral": KnownProvider("openai", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",)),
    "xai": KnownProvider("openai", "https://api.x.ai/v1", ("XAI_API_KEY",)),
    "together": KnownProvider("openai", "https://api.together.xyz/v1", ("TOGETHER_API_KEY",)),
    "fireworks": KnownProvider("openai", "https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",)),
    "cerebras": KnownProvider("openai", "https://api.cerebras.ai/v1", ("CEREBRAS_API_KEY",)),
    "ollama": KnownProvider("openai", "http://127.0.0.1:11434/v1", ("OLLAMA_API_KEY",), needs_key=False),
    "lmstudio": KnownProvider("openai", "http://127.0.0.1:1234/v1", ("LMSTUDIO_API_KEY",), needs_key=False),
}


def provider_key_names() -> frozenset[str]:
    """The variables etcode's well-known providers read their keys from (kept from commands:
    ``security/shell_env.py``)."""
    return frozenset(name for known in KNOWN_PROVIDERS.values() for name in known.key_env)


#: Bare model ids whose family names their provider: ``gpt-4o-mini`` is OpenAI's.
_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"claude"), "anthropic"),
    (re.compile(r"(?:chat)?gpt-|o[134](?:-|$)"), "openai"),
    (re.compile(r"gemini"), "gemini"),
    (re.compile(r"deepseek"), "deepseek"),
)

#: The provider id of a bare model id given with its own ``base_url``: any server that
#: speaks OpenAI Chat Completions.
CUSTOM_PROVIDER = "custom"


def provider_of(model_id: str) -> str | None:
    """The provider a bare model id (no ``provider/``) belongs to by its family, if known."""
    lowered = model_id.strip().lower()
    return next((provider for pattern, provider in _FAMILIES if pattern.match(lowered)), None)


@dataclass(init=False)
class RetryConfig:
    """How failed requests are retried (as the official SDKs do).

    Retried: 408, 409, 429 (not ``insufficient_quota``), 5xx, 529 and connection errors,
    honouring ``retry-after-ms``/``retry-after`` and ``x-should-retry``. The delay grows
    exponentially from ``initial_delay`` up to ``max_delay`` with up to 25% jitter; a
    server's ``retry-after`` longer than ``max_retry_after`` is not waited for.
    ``base_delay`` is the agent-loop design's name of ``initial_delay`` (either keyword
    works, not both). Defaults: 2 retries, 0.5 s, 8 s, 60 s (the design's: 3, 1.0 s, 30 s).
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def __init__(
        self,
        max_retries: int = 2,
        initial_delay: float | None = None,
        max_delay: float = 8.0,
        max_retry_after: float = 60.0,
        *,
        base_delay: float | None = None,
    ) -> None:
        if initial_delay is not None and base_delay is not None:
            raise TypeError("RetryConfig: pass initial_delay or base_delay (the same setting), not both")
        self.max_retries = max_retries
        self.initial_delay = next((d for d in (initial_delay, base_delay) if d is not None), 0.5)
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after

    @property
    def base_delay(self) -> float:
        """The design's name of :attr:`initial_delay`."""
        return self.initial_delay

    @base_delay.setter
    def base_delay(self, value: float) -> None:
        self.initial_delay = value


@dataclass
class ProviderSpec:
    """A resolved provider + model, ready to build an adapter from."""

    id: str
    type: WireFormat
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)  # keys never show in a repr
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    options: JsonObject = field(default_factory=dict)
    timeout: float = 600.0
    #: Per-model overrides from config (``limit``, ``cost``...), used by later features.
    model_info: JsonObject = field(default_factory=dict)

    @property
    def full_id(self) -> str:
        return f"{self.id}/{self.model}"


def hosted(spec: ProviderSpec) -> bool:
    """A hosted service etcode knows (a catalog provider that needs a key): not a local or
    self-hosted server (``discovery.server_kind`` asks none of them either)."""
    known = KNOWN_PROVIDERS.get(spec.id)
    return known is not None and known.needs_key


def _ollama_host(value: str) -> str | None:
    """Ollama's own ``OLLAMA_HOST`` (``host``, ``host:port``, ``http://host:port``) as an
    OpenAI-compatible base URL, read as the ``ollama`` command reads it: scheme ``http``
    unless given, port 11434 without a scheme (80/443 with one); an address to listen on
    (``0.0.0.0``, ``::``) means this machine."""
    value = value.strip()
    if not value:
        return None
    scheme, sep, rest = value.partition("://")
    if not sep:
        scheme, rest, port = "http", value, "11434"
    else:
        port = "443" if scheme == "https" else "80"
    hostport, _, path = rest.partition("/")
    host = hostport
    if hostport.startswith("["):  # [::1]:11434
        host, _, tail = hostport[1:].partition("]")
        port = tail[1:] if tail.startswith(":") and tail[1:].isdigit() else port
    elif hostport.count(":") == 1:
        name, _, maybe_port = hostport.partition(":")
        host, port = name, maybe_port if maybe_port.isdigit() else port
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    root = f"{scheme}://{host}:{port}" + (f"/{path.strip('/')}" if path.strip("/") else "")
    return f"{root}/v1"


def known_base_url(provider_id: str, env: Mapping[str, str] | None = None) -> str | None:
    """A well-known provider's endpoint: ``<ID>_BASE_URL`` from ``env`` (``ANTHROPIC_BASE_URL``,
    ``OPENAI_BASE_URL``, as the official SDKs read; ``OLLAMA_BASE_URL``), for ``ollama`` then
    ``OLLAMA_HOST`` (Ollama's own variable), else its usual address. None for other ids."""
    known = KNOWN_PROVIDERS.get(provider_id)
    if known is None:
        return None
    env = os.environ if env is None else env
    override = env.get(f"{provider_id.upper()}_BASE_URL")
    if not override and provider_id == "ollama":
        override = _ollama_host(env.get("OLLAMA_HOST", ""))
    return override or known.base_url


def default_base_url(provider_id: str) -> str | None:
    """:func:`known_base_url` from the process environment, without a trailing slash."""
    url = known_base_url(provider_id)
    return url.rstrip("/") if url else None


def env_key_for(provider_id: str) -> str | None:
    """The API key a well-known provider reads from the environment, if set."""
    known = KNOWN_PROVIDERS.get(provider_id)
    if known is None:
        return None
    for name in known.key_env:
        value = os.environ.get(name)
        if value:
            return value
    return None
