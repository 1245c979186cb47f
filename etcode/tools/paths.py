"""Path handling shared by the file tools: resolve against the working directory,
ask ``external_directory`` for anything outside the worktree, display paths."""

from __future__ import annotations

import os
from pathlib import Path

from etcode.tools.base import ToolContext
from etcode.util.fs import real_path


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


def permission_pattern(ctx: ToolContext, path: Path) -> str:
    """The pattern a permission rule sees for ``path``: worktree-relative inside, absolute outside."""
    resolved = real_path(path)
    try:
        return resolved.relative_to(real_path(ctx.worktree)).as_posix() or "."
    except ValueError:
        return resolved.as_posix()


def named_path(path: Path) -> Path:
    """The directory entry ``path`` names, absolute: for a symlink the link itself (its
    folder resolved, its own name kept), for anything else the resolved path."""
    normal = Path(os.path.normpath(path))
    if normal.name in ("", "..") or not os.path.islink(normal):
        return real_path(normal)
    return real_path(normal.parent) / normal.name


def _names(ctx: ToolContext, path: Path) -> list[Path]:
    """``path`` as named and resolved (one entry when they agree). The worktree itself,
    even when reached through a link, is only its resolved self."""
    real = real_path(path)
    named = named_path(path)
    return [real] if named == real or real == real_path(ctx.worktree) else [named, real]


def rule_patterns(ctx: ToolContext, path: Path) -> list[str]:
    """The patterns a rule must allow for ``path``: the name it was given (the link, when
    it is a symlink) and the file it leads to. A rule on either name holds: a link named
    ``CLAUDE.md`` to ``AGENTS.md`` is refused by ``{"CLAUDE.md": "deny"}`` and by
    ``{"AGENTS.md": "deny"}``, and ``.env`` linking to ``config/prod`` still asks."""
    root = real_path(ctx.worktree)
    found = []
    for candidate in _names(ctx, path):
        try:
            found.append(candidate.relative_to(root).as_posix() or ".")
        except ValueError:
            found.append(candidate.as_posix())
    return found


async def check_external(ctx: ToolContext, path: Path, tool: str, action: str) -> None:
    """Ask ``external_directory`` when ``path`` is outside the worktree — the name as given
    (a symlink's own place) or the file it leads to (symlinks resolved)."""
    root = real_path(ctx.worktree)
    outside = [p.as_posix() for p in reversed(_names(ctx, path)) if not _inside(p, root)]
    if not outside:
        return
    await ctx.check_permission(
        "external_directory",
        outside,
        {"tool": tool, "action": action, "path": outside[0]},
    )


def _inside(path: Path, root: Path) -> bool:
    """``path`` (absolute, normalized) is ``root`` or below it, by its text: a link
    inside the worktree is inside, wherever it points."""
    return path == root or path.is_relative_to(root)


async def resolve_for(ctx: ToolContext, raw: str, tool: str, action: str = "read") -> Path:
    """Resolve ``raw`` against the working directory and run the external-directory check."""
    path = ctx.resolve(raw)
    await check_external(ctx, path, tool, action)
    return path
