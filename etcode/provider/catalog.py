"""The model catalog: context and output limits and prices of models.

Three layers, later wins, field by field:

1. a built-in table of common models (approximate public list prices, USD per million tokens,
   and which of them take images);
2. a ``models.dev``-format JSON file (``{"<provider>": {"models": {"<id>": {"limit": {...},
   "cost": {...}, "modalities": {"input": ["text", "image"]}, "reasoning": true}}}}}``) — the path given as ``model_catalog`` in config, else
   ``$XDG_CACHE_HOME/etcode/models.json`` when it exists (never downloaded by etcode);
3. the config's ``provider[].models[<id>].limit/cost/modalities/reasoning`` overrides.

Lookups accept ``provider/model``; a dated id (``claude-sonnet-4-20250514``) or a vendor-prefixed
id (``anthropic/claude-sonnet-4`` on OpenRouter) falls back to its base name.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from etcode.provider.spec import ProviderSpec
from etcode.provider.types import Usage
from etcode.util.json_types import JsonObject

log = logging.getLogger("etcode.catalog")

MILLION = 1_000_000


class ModelOverrides(Protocol):
    """A config's ``provider[].models[<id>]`` entry (``config.schema.ModelInfo``)."""

    def model_dump(self, *, exclude_none: bool = ...) -> JsonObject: ...


class ProviderModels(Protocol):
    """A config's ``provider[]`` entry as the catalog reads it (``config.schema.ProviderConfig``)."""

    @property
    def model(self) -> str | None: ...

    @property
    def models(self) -> Mapping[str, ModelOverrides]: ...


class CatalogConfig(Protocol):
    """What the catalog reads of a loaded ``config.schema.Config`` (the provider floor
    sits below the config, so it names the shape, not the class)."""

    @property
    def model_catalog(self) -> str | None: ...

    def origin(self, key: str) -> str | None: ...

    def provider_entry(self, provider_id: str) -> ProviderModels | None: ...


@dataclass
class ModelPrice:
    """USD per million tokens. A missing cache price is charged at the input price."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None

    @property
    def known(self) -> bool:
        return self.input is not None or self.output is not None


@dataclass
class CatalogModel:
    """What etcode knows about one model. ``sources`` lists where the facts came from."""

    provider: str
    id: str
    name: str = ""
    context: int | None = None
    output: int | None = None
    price: ModelPrice = field(default_factory=ModelPrice)
    sources: list[str] = field(default_factory=list)
    #: Whether the model takes image input (``modalities.input`` holds ``"image"``);
    #: None: unknown (a local model the catalog does not list: it is tried).
    takes_images: bool | None = None
    #: Whether the model thinks before it answers (models.dev's ``reasoning``): False for
    #: one that rejects or ignores a thinking setting (``gpt-4o``, ``claude-3-5-sonnet``);
    #: None: unknown (the setting is sent).
    reasons: bool | None = None

    @property
    def full_id(self) -> str:
        return f"{self.provider}/{self.id}"

    def to_dict(self) -> JsonObject:
        p = self.price
        return {
            "id": self.full_id,
            "name": self.name or self.id,
            "limit": {"context": self.context, "output": self.output},
            "cost": {
                "input": p.input,
                "output": p.output,
                "cache_read": p.cache_read,
                "cache_write": p.cache_write,
            },
            "sources": list(self.sources),
            "takes_images": self.takes_images,
        }


def cost_of(usage: Usage, price: ModelPrice | None) -> float | None:
    """USD for ``usage`` at ``price`` (None when the price is unknown).

    ``input_tokens`` exclude cached tokens (both adapters report them apart), so each
    kind is charged once; reasoning tokens are part of ``output_tokens``.
    """
    if price is None or not price.known:
        return None
    inp = price.input or 0.0
    total = (
        usage.input_tokens * inp
        + usage.output_tokens * (price.output or 0.0)
        + usage.cache_read_tokens * (price.cache_read if price.cache_read is not None else inp)
        + usage.cache_write_tokens * (price.cache_write if price.cache_write is not None else inp)
    )
    return total / MILLION


# ---- the built-in table ---------------------------------------------------------------
# (context, output, input $/M, output $/M, cache read $/M, cache write $/M)
_Row = tuple[int, int, float, float, float | None, float | None]

BUILTIN: dict[str, dict[str, _Row]] = {
    "anthropic": {
        "claude-opus-4-5": (200_000, 64_000, 5.0, 25.0, 0.5, 6.25),
        "claude-opus-4-1": (200_000, 32_000, 15.0, 75.0, 1.5, 18.75),
        "claude-opus-4": (200_000, 32_000, 15.0, 75.0, 1.5, 18.75),
        "claude-sonnet-4-5": (200_000, 64_000, 3.0, 15.0, 0.3, 3.75),
        "claude-sonnet-4": (200_000, 64_000, 3.0, 15.0, 0.3, 3.75),
        "claude-haiku-4-5": (200_000, 64_000, 1.0, 5.0, 0.1, 1.25),
        "claude-3-7-sonnet": (200_000, 64_000, 3.0, 15.0, 0.3, 3.75),
        "claude-3-5-sonnet": (200_000, 8_192, 3.0, 15.0, 0.3, 3.75),
        "claude-3-5-haiku": (200_000, 8_192, 0.8, 4.0, 0.08, 1.0),
    },
    "openai": {
        "gpt-5": (400_000, 128_000, 1.25, 10.0, 0.125, None),
        "gpt-5-mini": (400_000, 128_000, 0.25, 2.0, 0.025, None),
        "gpt-5-nano": (400_000, 128_000, 0.05, 0.4, 0.005, None),
        "gpt-4.1": (1_047_576, 32_768, 2.0, 8.0, 0.5, None),
        "gpt-4.1-mini": (1_047_576, 32_768, 0.4, 1.6, 0.1, None),
        "gpt-4.1-nano": (1_047_576, 32_768, 0.1, 0.4, 0.025, None),
        "gpt-4o": (128_000, 16_384, 2.5, 10.0, 1.25, None),
        "gpt-4o-mini": (128_000, 16_384, 0.15, 0.6, 0.075, None),
        "o3": (200_000, 100_000, 2.0, 8.0, 0.5, None),
        "o3-mini": (200_000, 100_000, 1.1, 4.4, 0.55, None),
        "o4-mini": (200_000, 100_000, 1.1, 4.4, 0.275, None),
    },
    "gemini": {
        "gemini-2.5-pro": (1_048_576, 65_536, 1.25, 10.0, 0.31, None),
        "gemini-2.5-flash": (1_048_576, 65_536, 0.3, 2.5, 0.075, None),
        "gemini-2.5-flash-lite": (1_048_576, 65_536, 0.1, 0.4, 0.025, None),
        "gemini-2.0-flash": (1_048_576, 8_192, 0.1, 0.4, 0.025, None),
    },
    "deepseek": {
        "deepseek-chat": (128_000, 8_192, 0.28, 0.42, 0.028, None),
        "deepseek-reasoner": (128_000, 64_000, 0.28, 0.42, 0.028, None),
    },
    "groq": {
        "llama-3.3-70b-versatile": (131_072, 32_768, 0.59, 0.79, None, None),
    },
    "mistral": {
        "mistral-large-latest": (131_072, 32_768, 2.0, 6.0, None, None),
        "codestral-latest": (256_000, 32_768, 0.3, 0.9, None, None),
    },
    "xai": {
        "grok-4": (256_000, 32_768, 3.0, 15.0, 0.75, None),
        "grok-code-fast-1": (256_000, 10_000, 0.2, 1.5, 0.02, None),
    },
}

#: The built-in models that take no images (every other built-in one does).
TEXT_ONLY: frozenset[str] = frozenset(
    {
        "o3-mini",
        "deepseek-chat",
        "deepseek-reasoner",
        "llama-3.3-70b-versatile",
        "codestral-latest",
        "grok-code-fast-1",
    }
)
#: The built-in models that do not reason (every other built-in one does): a thinking
#: setting is not sent to them (OpenAI answers 400 to ``reasoning_effort`` on ``gpt-4o``).
NO_REASONING: frozenset[str] = frozenset(
    {
        "claude-3-5-sonnet",
        "claude-3-5-haiku",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-4o",
        "gpt-4o-mini",
        "gemini-2.0-flash",
        "deepseek-chat",
        "llama-3.3-70b-versatile",
        "mistral-large-latest",
        "codestral-latest",
    }
)
#: Built-in models whose image input the table does not state.
_IMAGES_UNKNOWN: frozenset[str] = frozenset({"mistral-large-latest"})

_DATE_SUFFIX = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|@\d{8})$")


def _candidates(model: str) -> list[str]:
    """Ids to try for ``model``: as given, without a date suffix, without a vendor prefix."""
    out = [model]
    base = model.rsplit("/", 1)[-1]
    for name in (model, base):
        out.append(name)
        out.append(_DATE_SUFFIX.sub("", name))
    return list(dict.fromkeys(c for c in out if c))


def _from_row(provider: str, model: str, row: _Row, key: str) -> CatalogModel:
    context, output, inp, out, read, write = row
    images = None if key in _IMAGES_UNKNOWN else key not in TEXT_ONLY
    price = ModelPrice(inp, out, read, write)
    reasons = key not in NO_REASONING
    return CatalogModel(provider, model, "", context, output, price, ["built-in"], images, reasons)


class ModelCatalog:
    """Limits and prices by ``provider/model``, from the three layers above."""

    def __init__(self, external: JsonObject | None = None, config: CatalogConfig | None = None) -> None:
        self.external = external or {}
        self.config = config

    @classmethod
    def load(cls, config: CatalogConfig | None = None, path: Path | None = None) -> ModelCatalog:
        """The catalog for ``config``: its ``model_catalog`` file, else the cache dir's
        ``models.json`` (missing or unreadable files are skipped with a debug log)."""
        if path is None:
            configured = getattr(config, "model_catalog", None)
            if configured:
                path = Path(configured).expanduser()
                origin = (
                    config.origin("model_catalog")
                    if config is not None and hasattr(config, "origin")
                    else None
                )
                if not path.is_absolute() and origin and Path(origin).is_file():
                    path = Path(origin).parent / path  # relative to the config file
            else:
                from etcode.util.paths import cache_dir

                path = cache_dir() / "models.json"
        return cls(_read_models_dev(path), config)

    # ---- lookups --------------------------------------------------------------------
    def get(self, provider: str, model: str, overrides: JsonObject | None = None) -> CatalogModel:
        """Everything known about ``provider/model`` (limits/prices may be None)."""
        entry = CatalogModel(provider, model)
        row = self._builtin(provider, model)
        if row is not None:
            _merge(entry, row)
        external = self._external(provider, model)
        if external is not None:
            _merge_raw(entry, external, "models.dev")
        info = overrides if overrides is not None else self._config_info(provider, model)
        if info:
            _merge_raw(entry, info, "config")
        return entry

    def for_spec(self, spec: ProviderSpec) -> CatalogModel:
        """The entry for a resolved :class:`ProviderSpec` (its ``model_info`` overrides)."""
        info = getattr(spec, "model_info", None) or None
        return self.get(spec.id, spec.model, info if info else None)

    def models_of(self, provider: str) -> list[str]:
        """Model ids known for ``provider`` (built-in, models.dev file and config)."""
        ids = list(BUILTIN.get(provider, {}))
        block = self.external.get(provider)
        if isinstance(block, dict) and isinstance(block.get("models"), dict):
            ids.extend(block["models"])
        entry = _config_entry(self.config, provider)
        if entry is not None:
            if entry.model:
                ids.append(entry.model)
            ids.extend(entry.models)
        return list(dict.fromkeys(ids))

    def _builtin(self, provider: str, model: str) -> CatalogModel | None:
        tables = [BUILTIN.get(provider, {})]
        vendor = model.split("/", 1)[0] if "/" in model else None
        if vendor and vendor in BUILTIN:
            tables.append(BUILTIN[vendor])
        tables.extend(t for p, t in BUILTIN.items() if p != provider)
        for table in tables:
            for candidate in _candidates(model):
                if candidate in table:
                    return _from_row(provider, model, table[candidate], candidate)
        return None

    def _external(self, provider: str, model: str) -> JsonObject | None:
        block = self.external.get(provider)
        models = block.get("models") if isinstance(block, dict) else None
        if not isinstance(models, dict):
            return None
        for candidate in _candidates(model):
            found = models.get(candidate)
            if isinstance(found, dict):
                return found
        return None

    def _config_info(self, provider: str, model: str) -> JsonObject | None:
        entry = _config_entry(self.config, provider)
        if entry is None:
            return None
        info = entry.models.get(model)
        return info.model_dump(exclude_none=True) if info is not None else None


def _config_entry(config: CatalogConfig | None, provider: str) -> ProviderModels | None:
    finder = getattr(config, "provider_entry", None)
    return finder(provider) if finder is not None else None


def _merge(entry: CatalogModel, other: CatalogModel) -> None:
    entry.context = other.context
    entry.output = other.output
    entry.price = ModelPrice(**vars(other.price))
    entry.sources.extend(other.sources)
    entry.takes_images = other.takes_images
    entry.reasons = other.reasons


def _positive_int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and value > 0 else None


def _price(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and value >= 0 else None


def _merge_raw(entry: CatalogModel, raw: JsonObject, source: str) -> None:
    """Merge a models.dev-style ``{"name", "limit": {...}, "cost": {...}, "modalities":
    {"input": [...]}, "reasoning": bool}`` object."""
    if isinstance(raw.get("name"), str) and raw["name"]:
        entry.name = raw["name"]
    limit: JsonObject = raw["limit"] if isinstance(raw.get("limit"), dict) else {}
    cost: JsonObject = raw["cost"] if isinstance(raw.get("cost"), dict) else {}
    changed = False
    for key in ("context", "output"):
        value = _positive_int(limit.get(key))
        if value is not None:
            setattr(entry, key, value)
            changed = True
    for key in ("input", "output", "cache_read", "cache_write"):
        price = _price(cost.get(key))
        if price is not None:
            setattr(entry.price, key, price)
            changed = True
    images = _takes_images(raw.get("modalities"))
    if images is not None:
        entry.takes_images = images
        changed = True
    if isinstance(raw.get("reasoning"), bool):
        entry.reasons = bool(raw["reasoning"])
        changed = True
    if changed or entry.name:
        entry.sources.append(source)


def _takes_images(modalities: object) -> bool | None:
    """``{"input": ["text", "image"], ...}`` → True; a list without ``"image"`` → False;
    anything else (not stated) → None."""
    if not isinstance(modalities, dict):
        return None
    inputs = modalities.get("input")
    if not isinstance(inputs, list):
        return None
    return "image" in inputs


def _read_models_dev(path: Path) -> JsonObject:
    try:
        if not path.is_file():
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        log.debug("model catalog %s skipped: %s", path, err)
        return {}
    return data if isinstance(data, dict) else {}
