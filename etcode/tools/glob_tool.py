"""``Glob``: find files by name pattern, newest first."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from etcode.tools import ripgrep
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.tools.paths import display_path, permission_pattern, resolve_for
from etcode.tools.summary import plural
from etcode.util.ignore import glob_match, is_secret_file, names_secret_file
from etcode.util.json_types import JsonObject

MAX_RESULTS = 100


class GlobParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description='Glob pattern, e.g. "**/*.py" or "src/**/test_*.ts".')
    path: str | None = Field(
        default=None, description="Folder to search in (default: the working directory)."
    )


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def newest_first(paths: list[Path]) -> list[Path]:
    """Sort by modification time, newest first (ties by path)."""
    return sorted(paths, key=lambda p: (-_mtime(p), str(p)))


def _rg_glob(pattern: str) -> str:
    """Our glob (anchored, ``*`` within a folder) as a ripgrep ``--glob``."""
    return pattern if "/" in pattern.strip("/") or pattern.startswith("**") else "/" + pattern


class GlobTool(Tool):
    name = "Glob"
    description = (
        "Find files whose path matches a glob pattern; returns matching paths, most recently "
        "modified first.\n"
        "- Patterns are relative to `path` (default: the working directory): `*` matches within "
        "one folder (`*.py` is top-level only), `**` crosses folders (`**/*.py` finds them "
        "everywhere), `{ts,tsx}` gives alternatives, `[abc]` a character class.\n"
        "- .gitignore'd files and folders such as .git and node_modules are skipped; hidden files "
        "are included, except .env/.envrc files unless the pattern names them (`**/.env*`).\n"
        f"- At most {MAX_RESULTS} paths are returned; a note says when there are more, so narrow "
        "the pattern or path.\n"
        "- Use it to locate files by name; use Grep to search file contents."
    )
    Params = GlobParams
    is_read_only = True
    checks_permission = True

    async def run(self, params: GlobParams, ctx: ToolContext) -> ToolResult:
        base = await resolve_for(ctx, params.path or ".", self.name, "list")
        if not base.is_dir():
            raise ToolError(f"Not a directory: {display_path(ctx, base)}")
        await ctx.check_permission(
            "glob", [permission_pattern(ctx, base)], {"tool": self.name, "pattern": params.pattern}
        )
        pattern = params.pattern.strip()
        if Path(pattern).is_absolute():
            pattern = os.path.relpath(pattern, base).replace(os.sep, "/")
        pattern = pattern.removeprefix("./")
        try:
            files = await ripgrep.list_files(base, ctx.worktree, ctx.abort, glob=_rg_glob(pattern))
        except ripgrep.RipgrepError as err:
            raise ToolError(f"Glob failed: {err}") from None
        matched = [p for p in files if glob_match(pattern, p.relative_to(base).as_posix())]
        if not names_secret_file(pattern):  # .env files only when asked for by name
            matched = [p for p in matched if not is_secret_file(p.name)]
        ordered = await asyncio.to_thread(newest_first, matched)
        shown = [display_path(ctx, p) for p in ordered[:MAX_RESULTS]]
        if not shown:
            output = f"No files found matching {params.pattern}"
        else:
            output = "\n".join(shown)
            if len(ordered) > MAX_RESULTS:
                output += (
                    f"\n\n(Showing {MAX_RESULTS} of {len(ordered)} matches, newest first. "
                    "Use a more specific pattern or path to narrow the results.)"
                )
        return ToolResult(
            output,
            data={"files": shown, "count": len(ordered), "truncated": len(ordered) > MAX_RESULTS},
        )

    def params_summary(self, params: JsonObject) -> str:
        pattern = str(params.get("pattern", ""))
        return f"{pattern} in {params['path']}" if params.get("path") else pattern

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        if result.summary:
            return result.summary
        data = result.data or {}
        if result.is_error or "count" not in data:
            return super().result_summary(params, result)
        return f"Found {plural(data['count'], 'file')}"
