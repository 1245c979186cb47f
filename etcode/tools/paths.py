"""Path handling shared by the file tools: resolve against the working directory,
ask ``external_directory`` for anything outside the worktree, display paths."""

from __future__ import annotations

import os
from pathlib import Path

from etcode.tools.base import ToolContext
from etcode.util.fs import is_within, real_path


def display_path(ctx: ToolContext, path: Path) -> str:
    """``path`` relative to the working directory when inside it, else to the worktree,
    else absolute — always with ``/`` separators."""
    for root in (ctx.directory, ctx.worktree):
        try:
            return path.relative_to(root).as_posix() or "."
        except ValueError:
            pass
        try:
            return real_path(path).relative_to(real_path(root)).as_posix() or "."
        except (ValueError, OSError):
            pass
    return path.as_posix()


def rule_patterns(ctx: ToolContext, path: Path) -> list[str]:
    """The patterns a rule must allow for ``path``: as named (worktree-relative inside) and
    with symlinks resolved — a link to a denied file, and a denied link, are both refused."""
    named = Path(os.path.normpath(path))
    try:
        found = [named.relative_to(ctx.worktree).as_posix() or "."]
    except ValueError:
        found = [named.as_posix()]
    found.append(permission_pattern(ctx, path))
    return list(dict.fromkeys(found))


def permission_pattern(ctx: ToolContext, path: Path) -> str:
    """The pattern a permission rule sees for ``path``: worktree-relative inside, absolute outside."""
    resolved = real_path(path)
    try:
        return resolved.relative_to(real_path(ctx.worktree)).as_posix() or "."
    except ValueError:
        return resolved.as_posix()


async def check_external(ctx: ToolContext, path: Path, tool: str, action: str) -> None:
    """Ask ``external_directory`` when ``path`` (symlinks resolved) is outside the worktree."""
    if is_within(path, ctx.worktree):
        return
    resolved = real_path(path)
    await ctx.check_permission(
        "external_directory",
        [resolved.as_posix()],
        {"tool": tool, "action": action, "path": str(resolved)},
    )


async def resolve_for(ctx: ToolContext, raw: str, tool: str, action: str = "read") -> Path:
    """Resolve ``raw`` against the working directory and run the external-directory check."""
    path = ctx.resolve(raw)
    await check_external(ctx, path, tool, action)
    return path
