"""One provider-neutral thinking setting (``Agent(reasoning=...)``, ``"reasoning"`` in
``etcode.json``) as each wire's own request fields.

A setting is a level (``"low"``, ``"medium"``, ``"high"``) or a token budget (an int).
``"off"`` (and None) asks for nothing: the model's own default. Per wire:

- OpenAI Chat Completions (OpenAI, OpenRouter, DeepSeek, Groq…): ``reasoning_effort``; a
  budget becomes the nearest level (:func:`level_of`).
- Gemini (its OpenAI-compatible endpoint): ``reasoning_effort`` for a level; a budget as
  ``extra_body.google.thinking_config.thinking_budget`` (Google's documented field; the two
  cannot be sent together).
- A server of your own (llama.cpp, Ollama, vLLM, LM Studio, a ``custom`` provider):
  ``reasoning_effort``; a budget also as ``thinking_budget_tokens`` (llama.cpp's field).
- Anthropic Messages: ``thinking: {"type": "enabled", "budget_tokens": N}``, a level as
  :data:`ANTHROPIC_BUDGETS` (at least 1,024, the API's minimum); the adapter raises
  ``max_tokens`` above the budget and leaves ``temperature`` out, as the API requires.

A field already given explicitly (a model keyword such as ``reasoning_effort="high"`` or
``thinking={...}``, or the provider's ``options`` in ``etcode.json``) wins: the setting
adds only what is not there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

from etcode.provider.spec import KNOWN_PROVIDERS
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue

__all__ = ["LEVELS", "Reasoning", "level_of", "parse_reasoning", "reasoning_fields", "reasoning_setting"]

Level: TypeAlias = Literal["low", "medium", "high"]
#: What ``reasoning=`` takes: a level, a token budget, or ``"off"``/None (nothing asked).
Reasoning: TypeAlias = Literal["off", "low", "medium", "high"] | int | None
#: The agent-loop design's name of the levels (``Agent(thinking_level=...)``).
ThinkingLevel: TypeAlias = Literal["off", "low", "medium", "high"]
LEVELS: tuple[Level, ...] = ("low", "medium", "high")
#: Anthropic's ``budget_tokens`` for each level.
ANTHROPIC_BUDGETS: dict[Level, int] = {"low": 2048, "medium": 8192, "high": 16384}
#: The API's smallest thinking budget.
ANTHROPIC_MIN_BUDGET = 1024
#: The fields through which each wire is asked to think (an explicit one wins).
_FIELDS = frozenset(
    {"reasoning_effort", "thinking", "thinking_budget_tokens", "reasoning_budget_tokens", "extra_body"}
)
_LOCAL = frozenset({"ollama", "lmstudio"})


def parse_reasoning(value: object, where: str = "reasoning") -> Level | int | None:
    """``value`` checked: a level, a positive budget, or None for ``"off"``/None; anything
    else is a :class:`ConfigError` naming ``where`` (the keyword or the config key)."""
    if value is None or value == "off":
        return None
    if isinstance(value, str) and value in LEVELS:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ConfigError(
        f'{where}: expected "off", "low", "medium", "high" or a token budget (a positive integer), got {value!r}'
    )


def level_of(budget: int) -> Level:
    """The level nearest a token budget (by Anthropic's budgets: up to 4,096 low, up to
    12,288 medium, more high)."""
    if budget <= 4096:
        return "low"
    return "medium" if budget <= 12288 else "high"


def reasoning_fields(
    setting: Level | int | None, wire: str, provider_id: str, given: Mapping[str, JsonValue] | None = None
) -> JsonObject:
    """The request fields that ask ``wire``/``provider_id`` for ``setting``; nothing when
    ``given`` (the explicit options and keywords) already holds one of the thinking fields."""
    if setting is None or _FIELDS & set(given or {}):
        return {}
    level = setting if isinstance(setting, str) else level_of(setting)
    if wire == "anthropic":
        budget = ANTHROPIC_BUDGETS[setting] if isinstance(setting, str) else setting
        return {"thinking": {"type": "enabled", "budget_tokens": max(budget, ANTHROPIC_MIN_BUDGET)}}
    if provider_id == "gemini" and isinstance(setting, int):
        return {"extra_body": {"google": {"thinking_config": {"thinking_budget": setting}}}}
    fields: JsonObject = {"reasoning_effort": level}
    local = provider_id not in KNOWN_PROVIDERS or provider_id in _LOCAL
    if local and isinstance(setting, int):
        fields["thinking_budget_tokens"] = setting
    return fields


def reasoning_setting(reasoning: Reasoning, thinking_level: Reasoning = None) -> Reasoning:
    """``Agent(reasoning=..., thinking_level=...)`` checked, as one setting (the design's
    ``thinking_level`` is an alias). ``"off"`` stays ``"off"``: nothing is asked, whatever
    the config says; None leaves it to the config. Both given and different: ``TypeError``."""
    chosen = parse_reasoning(reasoning, "Agent(reasoning=)")
    alias = parse_reasoning(thinking_level, "Agent(thinking_level=)")
    if reasoning is not None and thinking_level is not None and chosen != alias:
        raise TypeError("Agent: pass reasoning= or thinking_level=, not both")
    picked = reasoning if reasoning is not None else thinking_level
    return "off" if picked == "off" else (chosen if chosen is not None else alias)
