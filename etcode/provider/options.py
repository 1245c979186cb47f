"""Extra model keywords (``Agent(..., top_p=0.9, seed=1)``) checked against the wire format.

Each wire format accepts the sampling and request options its API documents; a name it does
not know is a :class:`ConfigError` naming the keyword, before any request is sent, instead of
a server's 400 later. Servers of your own (a ``custom`` or configured provider, Ollama,
LM Studio, llama.cpp) also take the samplers those servers add. ``stop`` is translated to Anthropic's
``stop_sequences``.
"""

from __future__ import annotations

from collections.abc import Mapping

from etcode.provider.spec import KNOWN_PROVIDERS
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue

#: Options of OpenAI Chat Completions (besides model, messages, tools, max_tokens, temperature).
OPENAI_OPTIONS = frozenset(
    {
        "top_p", "seed", "stop", "presence_penalty", "frequency_penalty", "logit_bias",
        "logprobs", "top_logprobs", "user", "response_format", "reasoning_effort",
        "parallel_tool_calls", "tool_choice", "service_tier", "metadata", "store",
        "prediction", "verbosity", "modalities", "max_completion_tokens",
    }
)  # fmt: skip

#: What servers on your own machine add (llama.cpp, vLLM, Ollama's and LM Studio's OpenAI APIs).
LOCAL_SERVER_OPTIONS = frozenset(
    {
        "top_k", "min_p", "typical_p", "repeat_penalty", "repeat_last_n", "mirostat",
        "mirostat_tau", "mirostat_eta", "n_probs", "grammar", "json_schema", "cache_prompt",
        "dynatemp_range", "dry_multiplier", "xtc_probability", "repetition_penalty",
        "chat_template_kwargs", "samplers", "keep_alive", "options",
        "reasoning_format", "thinking_budget_tokens", "reasoning_budget_tokens",
    }
)  # fmt: skip

#: Options of Anthropic Messages (``stop`` is taken as ``stop_sequences``).
ANTHROPIC_OPTIONS = frozenset(
    {"top_p", "top_k", "stop", "stop_sequences", "metadata", "tool_choice", "thinking", "service_tier"}
)

#: Well-known providers that run on your own machine.
_LOCAL_PROVIDERS = frozenset({"ollama", "lmstudio"})


def accepted_options(wire: str, provider_id: str) -> frozenset[str]:
    """The extra keywords a request in ``wire`` format to ``provider_id`` accepts."""
    if wire == "anthropic":
        return ANTHROPIC_OPTIONS
    if provider_id in KNOWN_PROVIDERS and provider_id not in _LOCAL_PROVIDERS:
        return OPENAI_OPTIONS  # a hosted service
    return OPENAI_OPTIONS | LOCAL_SERVER_OPTIONS  # your own server: its samplers as well


def request_options(wire: str, provider_id: str, options: Mapping[str, JsonValue]) -> JsonObject:
    """``options`` as request-body fields for ``wire``; a keyword the provider does not accept
    raises ``ConfigError`` with the accepted names."""
    accepted = accepted_options(wire, provider_id)
    unknown = sorted(set(options) - accepted)
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise ConfigError(
            f"model option {names} is not accepted by provider {provider_id!r} "
            f"({_API[wire]}); accepted: {', '.join(sorted(accepted))}"
        )
    body = {name: value for name, value in options.items() if value is not None}
    if wire == "anthropic" and "stop" in body:
        stop = body.pop("stop")
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    return body


_API = {"openai": "OpenAI Chat Completions", "anthropic": "Anthropic Messages"}
