"""Build the adapter for a :class:`ProviderSpec`. Importing this module stays cheap:
httpx and the adapters load only when a provider is made."""

from __future__ import annotations

from typing import TYPE_CHECKING

from etcode.provider.base import Provider
from etcode.provider.errors import ProviderError
from etcode.provider.spec import ProviderSpec, RetryConfig

if TYPE_CHECKING:
    import httpx

__all__ = ["make_provider", "request_headers"]


def make_provider(
    spec: ProviderSpec, retry: RetryConfig | None = None, client: httpx.AsyncClient | None = None
) -> Provider:
    """The adapter for ``spec.type`` (``"openai"`` or ``"anthropic"``).

    ``client`` is used as is (and left open by ``aclose``); without one the provider owns
    an ``httpx.AsyncClient`` (connect timeout 10 s, read timeout ``spec.timeout``).
    """
    if spec.type == "openai":
        from etcode.provider.openai import OpenAIProvider

        return OpenAIProvider(spec, retry, client)
    if spec.type == "anthropic":
        from etcode.provider.anthropic import AnthropicProvider

        return AnthropicProvider(spec, retry, client)
    raise ProviderError(
        f"{spec.id}: unknown provider type {spec.type!r} (use 'openai' or 'anthropic')",
        kind="bad_request",
        provider=spec.id,
    )


def request_headers(spec: ProviderSpec, accept: str = "text/event-stream") -> dict[str, str]:
    """The headers ``spec``'s adapter sends (its key the way its wire carries it), for a side
    request such as ``etcode doctor``'s model list (``accept="application/json"``)."""
    if spec.type == "anthropic":
        from etcode.provider import anthropic

        return anthropic.request_headers(spec, accept)
    from etcode.provider import openai

    return openai.request_headers(spec, accept)
