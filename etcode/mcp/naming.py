"""Tool names the model sees for MCP tools: ``<server>_<tool>``, sanitised.

Providers accept ``^[a-zA-Z0-9_-]{1,64}$``; anything else becomes ``_`` and long names
are shortened with a stable hash suffix so two tools never collide.
"""

from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def sanitize(text: str) -> str:
    """``text`` with every run of characters outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _BAD.sub("_", text.strip()).strip("_") or "x"


def tool_name(server: str, tool: str, taken: set[str] | None = None) -> str:
    """The exposed name of ``tool`` on ``server``; unique among ``taken`` (which it joins)."""
    name = f"{sanitize(server)}_{sanitize(tool)}"
    if len(name) > MAX_LENGTH:
        name = _shorten(name, f"{server}\0{tool}")
    if taken is not None:
        base, number = name, 2
        while name in taken:
            suffix = f"_{number}"
            name = base[: MAX_LENGTH - len(suffix)] + suffix
            number += 1
        taken.add(name)
    return name


def _shorten(name: str, key: str) -> str:
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]
    return f"{name[: MAX_LENGTH - 9]}_{digest}"
