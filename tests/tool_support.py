"""The one way tests build a tool's context (``make_ctx``): a session ``s`` and call ``c`` in
``root`` (its directory and worktree); ``fields`` set the rest (``check_permission``,
``emit``, ``state``...)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from etcode.tools.base import ToolContext


def make_ctx(root: Path, *, call_id: str = "c", **fields: Any) -> ToolContext:
    """A tool context working in ``root`` (every check allows unless ``fields`` say otherwise)."""
    return ToolContext(session_id="s", call_id=call_id, directory=root, worktree=root, **fields)
