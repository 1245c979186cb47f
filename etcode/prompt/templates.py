"""Prompt text files: found once, read once, kept in memory.

The files live in ``<repo>/prompts`` in a source checkout and in ``etcode/_prompts`` in an
installed wheel (pyproject force-includes the folder there). A template may include a
module with ``{{module:role}}`` (→ ``modules/role.md``); :func:`render` fills ``{{name}}``
style slots in a single pass, so a value is never itself expanded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

_INCLUDE = re.compile(r"\{\{\s*module:([A-Za-z0-9_\-]+)\s*\}\}")
_SLOT = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_MAX_DEPTH = 8


@cache
def prompts_dir() -> Path:
    """The folder holding the prompt text files (installed copy first, then the checkout)."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_prompts", package.parent / "prompts"):
        if (candidate / "provider").is_dir():
            return candidate
    raise FileNotFoundError(
        f"etcode prompt files not found (looked in {package / '_prompts'} and {package.parent / 'prompts'})"
    )


@cache
def _raw(name: str) -> str:
    return (prompts_dir() / name).read_text(encoding="utf-8")


def exists(name: str) -> bool:
    """Whether ``name`` (e.g. ``"agent/plan.txt"``) is a prompt file."""
    return (prompts_dir() / name).is_file()


@cache
def load(name: str) -> str:
    """The text of ``name`` (relative to the prompts folder) with module includes expanded."""
    return _expand(_raw(name), depth=0).strip() + "\n"


def module(name: str) -> str:
    """The text of ``modules/<name>.md``."""
    return load(f"modules/{name}.md")


def _expand(text: str, depth: int) -> str:
    if depth > _MAX_DEPTH:
        raise ValueError("prompt module includes nest too deeply (a cycle?)")

    def include(match: re.Match[str]) -> str:
        return _expand(_raw(f"modules/{match.group(1)}.md"), depth + 1).strip()

    return _INCLUDE.sub(include, text)


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill ``{{key}}`` slots from ``values``; unknown slots are left as they are."""

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        return values[key] if key in values else match.group(0)

    return _SLOT.sub(fill, template)


def clear_cache() -> None:
    """Forget every file read so far (tests, or after editing prompts at run time)."""
    for cached in (prompts_dir, _raw, load):
        cached.cache_clear()
