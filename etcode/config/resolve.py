"""Turn a ``"provider/model"`` reference and the config into a ``ProviderSpec``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from etcode.config.schema import Config, ProviderConfig
from etcode.provider.spec import (
    CUSTOM_PROVIDER,
    KNOWN_PROVIDERS,
    KnownProvider,
    ProviderSpec,
    RetryConfig,
    default_base_url,
    env_key_for,
    known_base_url,
    provider_of,
)
from etcode.util.errors import ConfigError

#: The model picked when only a provider is known (env auto-detect, or a bare provider id).
#: Auto-detect tries Anthropic, OpenAI, then the rest in ``KNOWN_PROVIDERS`` order.
DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-20250514",
    "openai": "gpt-4.1",
    "openrouter": "anthropic/claude-sonnet-4",
    "gemini": "gemini-2.5-flash",
    "deepseek": "deepseek-chat",
    "groq": "llama-3.3-70b-versatile",
    "mistral": "mistral-large-latest",
    "xai": "grok-4",
    "together": "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "fireworks": "accounts/fireworks/models/llama-v3p3-70b-instruct",
    "cerebras": "llama-3.3-70b",
}

NO_MODEL = (
    "No model configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or for a local server "
    "(llama.cpp, Ollama, vLLM, LM Studio) put in etcode.json "
    '{"model": "local/NAME", "provider": [{"id": "local", "type": "openai", '
    '"baseURL": "http://127.0.0.1:8080/v1"}]}'
)


def _key_from_env(known: KnownProvider | None, env: Mapping[str, str]) -> str | None:
    if known is None:
        return None
    return next((env[name] for name in known.key_env if env.get(name)), None)


def detect_model(env: Mapping[str, str] | None = None) -> str | None:
    """``provider/model`` for the first well-known provider whose API key is set."""
    env = os.environ if env is None else env
    for provider_id in dict.fromkeys(["anthropic", "openai", *KNOWN_PROVIDERS]):
        model = DEFAULT_MODELS.get(provider_id)
        if model and _key_from_env(KNOWN_PROVIDERS.get(provider_id), env):
            return f"{provider_id}/{model}"
    return None


def _prefix(origin: str | None) -> str:
    return f"{origin}: " if origin else ""


def _default_ref(config: Config, env: Mapping[str, str]) -> tuple[str, str | None]:
    if config.model:
        return config.model, config.origin("model")
    for entry in config.provider:
        if entry.model:
            return f"{entry.id}/{entry.model}", config.origin(f"provider.{entry.id}")
    detected = detect_model(env)
    if detected:
        return detected, None
    raise ConfigError(NO_MODEL)


def _split(ref: str, config: Config, origin: str | None) -> tuple[str, str]:
    ref = ref.strip()
    provider_id, slash, model = ref.partition("/")
    if slash:
        if not provider_id or not model:
            raise ConfigError(f'{_prefix(origin)}model "{ref}" must look like "provider/model"')
        return provider_id, model
    entry = config.provider_entry(ref)
    default = (entry.model if entry else None) or DEFAULT_MODELS.get(ref)
    if default:
        return ref, default
    if entry or ref in KNOWN_PROVIDERS:
        raise ConfigError(
            f'{_prefix(origin)}provider "{ref}" has no default "model": use "{ref}/<model>" '
            f'or set "model" in its "provider" entry'
        )
    family = provider_of(ref)
    if family is not None:  # a bare id of a known family: "gpt-4o-mini" is OpenAI's
        return family, ref
    raise ConfigError(f'{_prefix(origin)}model "{ref}" must look like "provider/model"')


def resolve_model(
    config: Config,
    model_ref: str | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ProviderSpec:
    """Resolve ``model_ref`` (else ``config.model``, a provider's model, or env) to a spec.

    Base URL: ``base_url`` argument, else the entry's ``baseURL``, else for a well-known id
    ``<ID>_BASE_URL`` from the environment (then ``OLLAMA_HOST`` for ``ollama``), else its
    usual endpoint. ``api_key``/``base_url`` override the config (the Python API uses them);
    an unknown provider id given with a ``base_url`` is taken as OpenAI-compatible.
    """
    env = os.environ if env is None else env
    origin: str | None = None
    if not model_ref:
        model_ref, origin = _default_ref(config, env)
    provider_id, model = _split(model_ref, config, origin)

    entry = config.provider_entry(provider_id)
    known = KNOWN_PROVIDERS.get(provider_id)
    if known is None and entry is None and not base_url:
        raise _unknown_provider(provider_id, model_ref, origin)
    url, key = _endpoint(config, provider_id, base_url, api_key, env)
    wire = known.type if known else "openai"
    spec = ProviderSpec(id=provider_id, type=wire, base_url=url.rstrip("/"), model=model, api_key=key or None)
    return _with_entry(spec, entry) if entry else spec


def _unknown_provider(provider_id: str, model_ref: str, origin: str | None) -> ConfigError:
    names = ", ".join(KNOWN_PROVIDERS)
    return ConfigError(
        f'{_prefix(origin)}unknown provider "{provider_id}" in model "{model_ref}": configure it '
        f'in etcode.json "provider" with "type" and "baseURL" (known: {names})'
    )


def _endpoint(
    config: Config, provider_id: str, base_url: str | None, api_key: str | None, env: Mapping[str, str]
) -> tuple[str, str | None]:
    """The base URL and the API key: the arguments', else the entry's, else the well-known
    provider's (a key is then required if it needs one)."""
    entry = config.provider_entry(provider_id)
    known = KNOWN_PROVIDERS.get(provider_id)
    custom_url = base_url or (entry.base_url if entry else None)
    url = custom_url or _usual_url(config, provider_id, env)
    key = api_key or (entry.api_key if entry else None) or _key_from_env(known, env)
    if not custom_url:
        _require_key(provider_id, known, key)
    return url, key


def _usual_url(config: Config, provider_id: str, env: Mapping[str, str]) -> str:
    """A well-known provider's endpoint (or ``<ID>_BASE_URL``): a provider without one
    needs a ``baseURL``."""
    url = known_base_url(provider_id, env)
    if not url:
        raise ConfigError(
            f'{_prefix(config.origin(f"provider.{provider_id}"))}provider "{provider_id}" needs '
            f'"baseURL" (and "type": "openai" or "anthropic")'
        )
    return url


def _require_key(provider_id: str, known: KnownProvider | None, key: str | None) -> None:
    """A well-known provider that needs a key at its usual endpoint has one."""
    if not key and known is not None and known.needs_key:
        raise ConfigError(
            f'No API key for provider "{provider_id}": set {known.key_env[0]} or "apiKey" in etcode.json'
        )


def _with_entry(spec: ProviderSpec, entry: ProviderConfig) -> ProviderSpec:
    """``spec`` with what the provider's entry in the config adds: its wire format, headers,
    options, timeout (milliseconds there) and what it says about the model."""
    info = entry.models.get(spec.model)
    return replace(
        spec,
        type=entry.type or spec.type,
        headers=dict(entry.headers),
        options=dict(entry.options),
        timeout=entry.timeout / 1000 if entry.timeout else spec.timeout,
        model_info=info.model_dump(exclude_none=True) if info else {},
    )


def retry_config(config: Config) -> RetryConfig:
    """The provider ``RetryConfig`` from the ``retry`` section."""
    retry = config.retry
    return RetryConfig(
        max_retries=retry.max_retries,
        initial_delay=retry.initial_delay if retry.initial_delay is not None else retry.base_delay,
        max_delay=retry.max_delay,
        max_retry_after=retry.max_retry_after,
    )


def spec_from_arguments(model: str, api_key: str | None, base_url: str | None) -> ProviderSpec:
    """A provider spec from explicit arguments, without any config file.

    ``provider/model``: a well-known provider id uses its usual endpoint and key variable; an
    unknown id given with a ``base_url`` is taken as OpenAI-compatible. A bare model id with a
    ``base_url`` is sent as it is to that OpenAI-compatible server (provider ``custom``);
    without one it goes to the provider of its family (``gpt-4o-mini`` → openai,
    ``claude-…`` → anthropic, ``gemini-…`` → gemini).
    """
    provider_id, _, model_id = model.partition("/")
    if not model_id:
        if base_url:
            provider_id, model_id = CUSTOM_PROVIDER, model
        else:
            family = provider_of(model)
            if family is None:
                raise ConfigError(
                    f'model "{model}": give its provider ("provider/{model}") or the server\'s base_url='
                )
            provider_id, model_id = family, model
    known = KNOWN_PROVIDERS.get(provider_id)
    if known is None and not base_url:
        raise ConfigError(
            f'unknown provider "{provider_id}" in model "{model}": pass base_url= (OpenAI-compatible) '
            f"or use one of: {', '.join(KNOWN_PROVIDERS)}"
        )
    wire = known.type if known else "openai"
    url = (base_url or default_base_url(provider_id) or "").rstrip("/")
    key = api_key or env_key_for(provider_id)
    if not key and known is not None and known.needs_key:
        raise ConfigError(f'No API key for provider "{provider_id}": set {known.key_env[0]} or pass api_key=')
    return ProviderSpec(id=provider_id, type=wire, base_url=url, model=model_id, api_key=key)
