"""Defensive readers for decoded stream JSON.

Servers (and proxies in front of them) do send fields of the wrong type: a ``null``
where an object belongs, a string index, a float token count. The adapters read every
field through these helpers, so a wrong shape is skipped (or read as empty) instead of
raising ``AttributeError``/``TypeError`` deep inside the stream assembly.
"""

from __future__ import annotations

import math

from etcode.util.json_types import JsonArray, JsonObject

__all__ = ["as_dict", "as_index", "as_list", "as_str", "as_tokens", "field_of"]


def as_dict(value: object) -> JsonObject:
    """``value`` if it is a JSON object, else ``{}``."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> JsonArray:
    """``value`` if it is a JSON array, else ``[]``."""
    return value if isinstance(value, list) else []


def as_str(value: object, default: str = "") -> str:
    """``value`` if it is a string, else ``default``."""
    return value if isinstance(value, str) else default


def as_index(value: object) -> int | None:
    """A non-negative integer index (not a bool), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def as_tokens(value: object) -> int | None:
    """A token count: a non-negative int (floats are truncated), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value)
    if isinstance(value, int):
        return max(0, value)
    return None


def field_of(value: object, name: str) -> object:
    """A dict's ``name`` key or an object's ``name`` attribute, None when it has none (a
    user's client may answer with dicts or with objects of the same fields)."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)
