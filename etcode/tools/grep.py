"""``Grep``: regex search over file contents (ripgrep, or a Python fallback)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from etcode.tools import ripgrep
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.tools.glob_tool import newest_first
from etcode.tools.paths import display_path, permission_pattern, resolve_for, rule_patterns
from etcode.tools.summary import plural
from etcode.tools.truncate import truncate_output
from etcode.util.fs import is_binary_file
from etcode.util.ignore import SEARCH_EXCLUDES, SECRET_FILES, IgnoreMatcher, glob_match, is_secret_file
from etcode.util.json_types import JsonObject

MAX_MATCHES = 100
MAX_FILES = 100
MAX_LINE_CHARS = 500

OutputMode = Literal["content", "files", "count"]


class GrepParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description=r'Regular expression to search for, e.g. "def \w+_handler" or "TODO".')
    path: str | None = Field(
        default=None, description="File or folder to search (default: the working directory)."
    )
    include: str | None = Field(
        default=None, description='Only search files matching this glob, e.g. "*.py" or "src/**/*.{ts,tsx}".'
    )
    output_mode: OutputMode = Field(
        default="content",
        description='"content": matching lines with line numbers (default); "files": only the paths '
        'of matching files; "count": the number of matching lines per file.',
    )


@dataclass
class _FileHits:
    path: Path
    lines: list[tuple[int, str]] = field(default_factory=list)
    count: int = 0


def _include_matches(include: str, rel: str) -> bool:
    if "/" in include.strip("/"):
        return glob_match(include.lstrip("/"), rel)
    return glob_match(include, rel.rsplit("/", 1)[-1])


def _clip(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"


async def _search_rg(ctx: ToolContext, base: Path, target: Path, params: GrepParams) -> dict[Path, _FileHits]:
    args = ["--json", "--hidden", "--no-require-git", "--no-messages", *ripgrep.exclude_args()]
    if params.include:
        args += ["--glob", params.include]
    if target.is_dir():  # .env files are searched only when given as the path (which asks)
        args += ripgrep.exclude_args(SECRET_FILES)  # after include: the last matching glob wins
    args += ["-e", params.pattern, "--", str(target)]
    _, out = await ripgrep.run_rg(args, base, ctx.abort)
    hits: dict[Path, _FileHits] = {}
    for raw in out.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        kind = event.get("type")
        if kind not in ("match", "end"):
            continue
        data = event["data"]
        path_text = data.get("path", {}).get("text")
        if path_text is None:
            continue
        path = Path(path_text)
        entry = hits.setdefault(path, _FileHits(path))
        if kind == "match":
            text = data.get("lines", {}).get("text")
            if text is None:
                text = "<non-UTF-8 line>"
            for offset, line in enumerate(text.splitlines() or [""]):
                entry.lines.append((data["line_number"] + offset, _clip(line)))
        else:
            entry.count = data.get("stats", {}).get("matched_lines", len(entry.lines))
    return {path: item for path, item in hits.items() if item.lines or item.count}


def _search_python(base: Path, target: Path, root: Path, params: GrepParams) -> dict[Path, _FileHits]:
    try:
        regex = re.compile(params.pattern)
    except re.error as err:
        raise ToolError(f"Invalid regex {params.pattern!r}: {err}") from None
    if target.is_file():
        candidates = [target]
    else:  # symlinks are not followed (nor searched), as with ripgrep
        matcher = IgnoreMatcher(root, default_excludes=SEARCH_EXCLUDES)
        candidates = [Path(e.path) for e in matcher.iter_entries(target) if not e.is_symlink()]
    hits: dict[Path, _FileHits] = {}
    for path in candidates:
        if path != target and is_secret_file(path.name):
            continue
        rel = path.relative_to(target).as_posix() if path != target else path.name
        if params.include and not _include_matches(params.include, rel):
            continue
        try:
            if is_binary_file(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if regex.search(line):
                        entry = hits.setdefault(path, _FileHits(path))
                        entry.lines.append((number, _clip(line)))
        except OSError:
            continue
    for entry in hits.values():
        entry.count = len(entry.lines)
    return hits


@dataclass
class _LeftOut:
    """Files with matches that the ``read`` rules deny, or would ask about."""

    denied: int = 0
    asked: int = 0

    @property
    def total(self) -> int:
        return self.denied + self.asked

    def note(self) -> str:
        parts = [f"{self.denied} denied"] if self.denied else []
        if self.asked:
            parts.append(f"{self.asked} {'needs' if self.asked == 1 else 'need'} approval")
        text = (
            f"({plural(self.total, 'file')} with matches {'is' if self.total == 1 else 'are'} left out: "
            f"the read permission rules do not allow searching {'it' if self.total == 1 else 'them'} "
            f"({', '.join(parts)})."
        )
        if self.asked:
            text += " ReadFile asks the user to read a file that needs approval."
        return text + ")"


def _readable(
    ctx: ToolContext, target: Path, hits: dict[Path, _FileHits], tool: str
) -> tuple[dict[Path, _FileHits], _LeftOut]:
    """The hits in files whose ``read`` rules say ``allow`` (under both the name searched
    and the resolved path), and what was left out. A search never asks: a file that would
    ask, or is denied, is dropped — its matching lines (or its name, which says that it
    matched) would reach the model without the question."""
    left_out = _LeftOut()
    if not hits:
        return hits, left_out
    prefixes = [p + "/" if p != "." else "" for p in rule_patterns(ctx, target)]
    below = os.path.join(os.fspath(target), "")
    cut = len(below)
    decide = ctx.decide_permission
    kept: dict[Path, _FileHits] = {}
    for path, item in hits.items():
        text = os.fspath(path)
        if text.startswith(below):
            rel = text[cut:].replace(os.sep, "/") if os.sep != "/" else text[cut:]
            verdicts = {decide("read", prefix + rel, tool) for prefix in prefixes}
        else:  # not below the target as named: judge it by its own names
            verdicts = {decide("read", pattern, tool) for pattern in rule_patterns(ctx, path)}
        if verdicts == {"allow"}:
            kept[path] = item
        elif "deny" in verdicts:
            left_out.denied += 1
        else:
            left_out.asked += 1
    return kept, left_out


class GrepTool(Tool):
    name = "Grep"
    description = (
        "Search file contents with a regular expression (ripgrep syntax; Python `re` when ripgrep "
        "is missing) and return matches from the most recently modified files first.\n"
        "- `path`: a file or folder (default: the working directory). `include`: a glob on file "
        'names ("*.py", "*.{ts,tsx}"), or on paths when it contains a slash ("src/**/*.go").\n'
        '- `output_mode`: "content" (default) lists `path`, then `line: text` for each match; '
        '"files" lists only matching paths; "count" gives matching lines per file.\n'
        "- .gitignore'd files, .git, node_modules and binary files are skipped; hidden files are "
        "searched, except .env/.envrc files unless given as `path`. Files the read permission "
        "rules do not allow are left out (a note says how many).\n"
        f"- Results are capped ({MAX_MATCHES} matching lines / {MAX_FILES} files) with a note; narrow "
        "the pattern, path or include when you see it. Escape regex metacharacters to search "
        r"for literal text (e.g. `foo\(`)."
    )
    Params = GrepParams
    is_read_only = True
    checks_permission = True

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolResult:
        target = await resolve_for(ctx, params.path or ".", self.name, "read")
        if not target.exists():
            raise ToolError(f"Path not found: {display_path(ctx, target)}")
        await ctx.check_permission(
            "grep", [permission_pattern(ctx, target)], {"tool": self.name, "pattern": params.pattern}
        )
        if target.is_file():  # searching one file reads it: asked (or refused) as ReadFile would
            await ctx.check_permission(
                "read", rule_patterns(ctx, target), {"tool": self.name, "path": str(target)}
            )
        base = target if target.is_dir() else target.parent
        if ripgrep.rg_path() is not None:
            try:
                hits = await _search_rg(ctx, base, target, params)
            except ripgrep.RipgrepError as err:
                raise ToolError(f"Grep failed: {err}") from None
        else:
            hits = await asyncio.to_thread(_search_python, base, target, ctx.worktree, params)
        absolute = {(p if p.is_absolute() else base / p): h for p, h in hits.items()}
        if target.is_dir():
            absolute, left_out = _readable(ctx, target, absolute, self.name)
        else:
            left_out = _LeftOut()
        order = await asyncio.to_thread(newest_first, list(absolute))
        total_lines = sum(item.count or len(item.lines) for item in absolute.values())
        output, shown = self._format(ctx, order, absolute, params.output_mode)
        if not order:
            output = f"No matches found for {params.pattern}"
        if left_out.total:
            output += "\n\n" + left_out.note()
        cut = truncate_output(output)
        data: JsonObject = {
            "mode": params.output_mode,
            "files": len(order),
            "matches": total_lines,
            "truncated": shown < (len(order) if params.output_mode != "content" else total_lines),
        }
        if left_out.total:
            data["hidden"] = left_out.total
        if cut.path:
            data["outputPath"] = cut.path
        return ToolResult(cut.text, data=data)

    @staticmethod
    def _format(
        ctx: ToolContext, order: list[Path], hits: dict[Path, _FileHits], mode: OutputMode
    ) -> tuple[str, int]:
        lines: list[str] = []
        shown = 0
        if mode == "files":
            lines = [display_path(ctx, p) for p in order[:MAX_FILES]]
            shown = len(lines)
            if len(order) > MAX_FILES:
                lines.append(
                    f"\n(Showing {MAX_FILES} of {len(order)} files, newest first. Narrow the search.)"
                )
            return "\n".join(lines), shown
        if mode == "count":
            for path in order[:MAX_FILES]:
                item = hits[path]
                lines.append(f"{display_path(ctx, path)}: {item.count or len(item.lines)}")
            shown = min(len(order), MAX_FILES)
            if len(order) > MAX_FILES:
                lines.append(
                    f"\n(Showing {MAX_FILES} of {len(order)} files, newest first. Narrow the search.)"
                )
            return "\n".join(lines), shown
        total = sum(item.count or len(item.lines) for item in hits.values())
        header = f"Found {plural(total, 'match', 'matches')} in {plural(len(order), 'file')}"
        lines.append(header)
        for path in order:
            if shown >= MAX_MATCHES:
                break
            lines.append("")
            lines.append(display_path(ctx, path))
            for number, text in hits[path].lines:
                if shown >= MAX_MATCHES:
                    break
                lines.append(f"  {number}: {text}")
                shown += 1
        if shown < total:
            lines.append(
                f"\n(Showing the first {shown} of {total} matching lines, newest files first. "
                "Use a more specific pattern, path or include to see the rest.)"
            )
        return "\n".join(lines), shown

    def params_summary(self, params: JsonObject) -> str:
        text = str(params.get("pattern", ""))
        if params.get("path"):
            text += f" in {params['path']}"
        if params.get("include"):
            text += f" ({params['include']})"
        return text

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        if result.summary:
            return result.summary
        data = result.data or {}
        if result.is_error or "files" not in data:
            return super().result_summary(params, result)
        if data["mode"] == "files":
            return f"Found {plural(data['files'], 'file')}"
        return f"Found {plural(data['matches'], 'match', 'matches')} in {plural(data['files'], 'file')}"
