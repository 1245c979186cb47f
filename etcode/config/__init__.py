"""Configuration: ``etcode.json`` layers, JSONC, substitution, and model resolution.

Names are exported lazily so importing this package costs nothing (pydantic is only
imported when ``Config``, ``load_config`` or ``resolve_model`` is first used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

_LAZY = {
    "Config": "etcode.config.schema",
    "load_config": "etcode.config.loader",
    "config_files": "etcode.config.loader",
    "resolve_model": "etcode.config.resolve",
    "retry_config": "etcode.config.resolve",
    "detect_model": "etcode.config.resolve",
    "parse_jsonc": "etcode.config.jsonc",
}

__all__ = [
    "Config",
    "config_files",
    "detect_model",
    "load_config",
    "parse_jsonc",
    "resolve_model",
    "retry_config",
]

if TYPE_CHECKING:  # pragma: no cover
    from etcode.config.jsonc import parse_jsonc
    from etcode.config.loader import config_files, load_config
    from etcode.config.resolve import detect_model, resolve_model, retry_config
    from etcode.config.schema import Config


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'etcode.config' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
