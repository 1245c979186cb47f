"""What ``/model`` offers: the configured and known models, as ``provider/model``.

The same sources as ``etcode models`` (config entries, providers with an API key in the
environment, the catalog), without asking any server: completion must be instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.config.schema import Config


def model_choices(config: Config, current: str | None = None) -> list[str]:
    """``provider/model`` ids a user can switch to; ``current`` first when given."""
    from etcode.provider.catalog import ModelCatalog
    from etcode.provider.spec import KNOWN_PROVIDERS, env_key_for

    catalog = ModelCatalog.load(config)
    providers = [entry.id for entry in config.provider]
    providers += [pid for pid in KNOWN_PROVIDERS if env_key_for(pid)]
    if current and "/" in current:
        providers.append(current.split("/", 1)[0])
    found = [current] if current else []
    for provider in dict.fromkeys(providers):
        found += [f"{provider}/{model}" for model in catalog.models_of(provider)]
    return list(dict.fromkeys(found))


def match_choices(choices: list[str], query: str, limit: int = 12) -> list[str]:
    """``choices`` matching ``query``: exact, prefix, model-name prefix, then substring."""
    q = query.lower()
    ranked: list[tuple[int, int, str]] = []
    for index, choice in enumerate(choices):
        low = choice.lower()
        if low == q:
            rank = -1
        elif low.startswith(q):
            rank = 0
        elif low.split("/", 1)[-1].startswith(q):
            rank = 1
        elif q in low:
            rank = 2
        else:
            continue
        ranked.append((rank, index, choice))
    ranked.sort()
    return [choice for _, _, choice in ranked[:limit]]
