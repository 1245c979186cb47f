"""``ReadManyFiles``: read many files (paths and globs) in one call, concurrently."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pathspec
from pydantic import BaseModel, ConfigDict, Field

from etcode.tools.base import PermissionDenied, Tool, ToolContext, ToolResult
from etcode.tools.paths import check_external, display_path, permission_pattern
from etcode.tools.summary import plural
from etcode.tools.truncate import truncate_output
from etcode.util.fs import BINARY_EXTENSIONS, BOM, expand_user, format_size, looks_binary, real_path
from etcode.util.ignore import IgnoreMatcher, glob_static_prefix, glob_to_regex, has_glob

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 20 * 1024 * 1024
BATCH_SIZE = 32
MAX_CONCURRENT_BATCHES = 8
#: Reading slower than this per file (plus size / FAST_BYTES_PER_SECOND) means I/O bound.
FAST_FILE_SECONDS = 0.0005
FAST_BYTES_PER_SECOND = 300 * 1024 * 1024


class ReadManyFilesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(
        min_length=1,
        description=(
            "Files or glob patterns relative to the working directory, e.g. "
            '["README.md", "src/**/*.ts"]. A path naming an existing file is taken literally.'
        ),
    )
    include: list[str] | None = Field(default=None, description="Extra glob patterns to add.")
    exclude: list[str] | None = Field(
        default=None,
        description="Patterns to leave out (gitignore syntax: `*.log` matches at any depth). Exclude wins.",
    )
    use_default_excludes: bool = Field(
        default=True,
        description="Skip .git, node_modules, build output, lock files, binaries, .env (default true).",
    )


@dataclass
class _Read:
    """Outcome of reading one file in a worker thread."""

    path: str
    shown: str
    explicit: bool
    pattern: str | None = None  # the permission pattern, when already known
    content: str = ""
    size: int = 0
    lines: int = 0
    truncated: bool = False
    error: str | None = None
    skipped: str | None = None


def _read_one(item: _Read) -> _Read:
    try:
        if os.path.splitext(item.path)[1].lower() in BINARY_EXTENSIONS:
            item.skipped = "binary file"
            return item
        with open(item.path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_FILE_BYTES:
                item.error = f"File too large ({format_size(size)} > {format_size(MAX_FILE_BYTES)})"
                return item
            data = handle.read()
    except FileNotFoundError:
        item.error = "File not found"
        return item
    except IsADirectoryError:
        item.error = "Is a directory"
        return item
    except OSError as err:
        item.error = err.strerror or str(err)
        return item
    if data.find(b"\x00", 0, 8192) != -1:
        item.skipped = "binary file"
        return item
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if looks_binary(data[:8192]):
            item.skipped = "binary file"
            return item
        text = data.decode("utf-8", errors="replace")
    if text.startswith(BOM):
        text = text[1:]
    item.size = len(data)
    item.lines = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    long_lines = has_long_line(text, MAX_LINE_CHARS)
    if item.lines > MAX_LINES or long_lines:
        item.truncated = True
        lines = text.split("\n")[:MAX_LINES]
        shown = [
            line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "... [line truncated]"
            for line in lines
        ]
        text = "\n".join(shown)
        if item.lines > MAX_LINES:
            text += (
                f"\n[... truncated: showing the first {MAX_LINES} of {item.lines} lines; "
                f"use ReadFile with offset={MAX_LINES + 1} to read more ...]"
            )
        else:
            text += "\n[... truncated: lines longer than 2000 characters were cut ...]"
    item.content = text
    return item


def has_long_line(text: str, limit: int) -> bool:
    """True when a line of ``text`` is longer than ``limit`` characters (without
    splitting: jump from line start to the last newline within ``limit + 1`` chars)."""
    size = len(text)
    start = 0
    while start + limit < size:
        newline = text.rfind("\n", start, start + limit + 1)
        if newline == -1:
            return True
        start = newline + 1
    return False


def _read_batch(items: list[_Read]) -> list[_Read]:
    return [_read_one(item) for item in items]


def _walk_matches(
    base: Path, cwd: str, pattern: str, matcher: IgnoreMatcher, exclude: pathspec.GitIgnoreSpec | None
) -> list[tuple[str, str, bool]]:
    """(path, cwd-relative path, is symlink) of the files under ``base`` matching ``pattern``."""
    found: list[tuple[str, str, bool]] = []
    if not base.is_dir():
        return found
    regex = glob_to_regex(pattern)
    prefix = cwd.rstrip(os.sep) + os.sep
    for entry in matcher.iter_entries(base):
        path = entry.path
        if path.startswith(prefix):
            rel = path[len(prefix) :].replace(os.sep, "/")
        else:
            rel = os.path.relpath(path, cwd).replace(os.sep, "/")
        if regex.match(rel) and not (exclude and exclude.match_file(rel)):
            found.append((path, rel, entry.is_symlink()))
    return found


def _worktree_prefixes(worktree: Path) -> list[str]:
    raw = os.path.normpath(os.path.abspath(worktree))
    return [p.rstrip(os.sep) + os.sep for p in dict.fromkeys([raw, os.path.realpath(worktree)])]


def _inside(path: str, prefixes: list[str]) -> str | None:
    """``path`` relative to the worktree (``/``-separated) when inside it, else None."""
    for prefix in prefixes:
        if path.startswith(prefix):
            return path[len(prefix) :].replace(os.sep, "/")
    return None


def _rel(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return os.path.relpath(path, cwd).replace(os.sep, "/")


class ReadManyFilesTool(Tool):
    name = "ReadManyFiles"
    description = (
        "Read the contents of many files in one call and return them concatenated, each under a "
        "header `=== File: <path> (<size>, <lines> lines) ===`, followed by any errors and a "
        "summary. Use it to load several related files (a module and its tests, all configs, "
        "`src/**/*.py`) instead of many ReadFile calls.\n"
        "- `paths`: file paths or glob patterns, relative to the working directory. An entry that "
        "names an existing file is read literally (brackets in names like `app/[id]/page.tsx` are "
        "fine); other entries are globs: `*` stays within one folder (`*.txt` is not recursive), "
        "`**` crosses folders, `{a,b}` gives alternatives. A folder name reads the folder recursively.\n"
        "- `include` adds patterns; `exclude` removes matches (gitignore syntax, always wins).\n"
        "- By default .git, node_modules, __pycache__, virtualenvs, dist/build, lock files, "
        "binary formats and .env files are skipped, and .gitignore is respected; set "
        "`use_default_excludes` to false to include the defaults.\n"
        f"- Binary files are skipped; files over {MAX_LINES} lines (or with very long lines) are "
        "truncated with a visible marker (use ReadFile with offset for the rest); files over "
        "20 MB are reported as errors; a missing file is an error entry while the others are still read.\n"
        "- Very large combined output is cut and the full text saved to a file whose path is given."
    )
    Params = ReadManyFilesParams
    is_read_only = True
    checks_permission = True

    async def run(self, params: ReadManyFilesParams, ctx: ToolContext) -> ToolResult:
        cwd = ctx.directory
        matcher = IgnoreMatcher(ctx.worktree, default_excludes=params.use_default_excludes)
        exclude = pathspec.GitIgnoreSpec.from_lines(params.exclude) if params.exclude else None
        errors: list[dict[str, str]] = []
        chosen: dict[str, _Read] = {}
        cwd_s = os.path.normpath(str(cwd))
        roots = _worktree_prefixes(ctx.worktree)

        def add(path: str, shown: str, key: str, explicit: bool, checked: str | None = None) -> None:
            if key not in chosen:
                chosen[key] = _Read(path=path, shown=shown, explicit=explicit, pattern=checked)
            elif explicit:
                chosen[key].explicit = True

        patterns: list[str] = []
        for entry in [*params.paths, *(params.include or [])]:
            entry = entry.strip()
            if not entry:
                continue
            target = ctx.resolve(entry)
            if target.is_file():
                try:
                    await check_external(ctx, target, self.name, "read")
                except PermissionDenied as err:
                    errors.append({"path": entry, "error": str(err)})
                    continue
                if exclude and exclude.match_file(_rel(target, cwd)):
                    continue
                real = os.path.realpath(target)
                add(str(target), display_path(ctx, target), real, True, permission_pattern(ctx, target))
            elif target.is_dir():
                patterns.append(_rel(target, cwd).rstrip("/") + "/**" if target != cwd else "**")
            elif has_glob(entry):
                patterns.append(entry)
            else:
                errors.append({"path": entry, "error": "File not found"})

        for pattern in patterns:
            absolute = expand_user(pattern)
            if absolute.is_absolute():
                pattern = _rel(absolute, cwd)
            static, _rest = glob_static_prefix(pattern)
            base = real_path(cwd / static) if static else cwd
            try:
                await check_external(ctx, base, self.name, "read")
            except PermissionDenied as err:
                errors.append({"path": pattern, "error": str(err)})
                continue
            found = await asyncio.to_thread(_walk_matches, base, cwd_s, pattern, matcher, exclude)
            if not found:
                errors.append({"path": pattern, "error": "No files matched"})
            for path, rel, is_link in found:
                if is_link:  # a link may point anywhere: treat it like a literal path
                    link = Path(path)
                    try:
                        await check_external(ctx, link, self.name, "read")
                    except PermissionDenied as err:
                        errors.append({"path": rel, "error": str(err)})
                        continue
                    add(path, rel, os.path.realpath(path), False, permission_pattern(ctx, link))
                else:
                    add(path, rel, path, False, _inside(path, roots))

        items = sorted(chosen.values(), key=lambda item: item.shown)
        allowed: list[_Read] = []
        for item in items:
            pattern = item.pattern or permission_pattern(ctx, Path(item.path))
            try:
                await ctx.check_permission("read", [pattern], {"tool": self.name, "path": item.path})
            except PermissionDenied as err:
                errors.append({"path": item.shown, "error": str(err)})
                continue
            allowed.append(item)

        done = await _read_concurrently(allowed)
        files = [item for item in done if item.error is None and item.skipped is None]
        skipped = [{"path": item.shown, "reason": item.skipped} for item in done if item.skipped]
        for item in done:
            if item.error is not None:
                errors.append({"path": item.shown, "error": item.error})
            elif item.skipped and item.explicit:
                errors.append({"path": item.shown, "error": f"Skipped: {item.skipped}"})

        output = _format(files, errors, skipped)
        reminders: list[str] = []
        folders_seen: set[str] = set()
        for item in files:  # nested AGENTS.md depend on the folder: ask once per folder
            folder = os.path.dirname(item.path)
            if folder in folders_seen:
                continue
            folders_seen.add(folder)
            extra = await ctx.instructions_for(Path(item.path))
            if extra and extra not in reminders:
                reminders.append(extra)
        if reminders:
            output += "\n\n" + "\n\n".join(reminders)
        lines = sum(item.lines for item in files) + 2 * len(files) + len(errors) + 8
        truncated = await asyncio.to_thread(truncate_output, output, line_count=lines)
        total_size = sum(item.size for item in files)
        data: dict[str, Any] = {
            "files": [
                {
                    "path": item.shown,
                    "content": item.content,
                    "size": item.size,
                    "lineCount": item.lines,
                    "isTruncated": item.truncated,
                }
                for item in files
            ],
            "totalFiles": len(files),
            "totalSize": total_size,
            "errors": errors,
            "skipped": skipped,
        }
        if truncated.truncated:
            data["outputPath"] = truncated.path
        return ToolResult(truncated.text, data=data)

    def params_summary(self, params: dict[str, Any]) -> str:
        paths = [str(p) for p in params.get("paths") or []] + [str(p) for p in params.get("include") or []]
        if len(paths) == 1:
            return paths[0]
        return (
            plural(len(paths), "file") if all(not has_glob(p) for p in paths) else plural(len(paths), "path")
        )

    def result_summary(self, params: dict[str, Any], result: ToolResult) -> str:
        if result.summary:
            return result.summary
        data = result.data or {}
        if result.is_error or "totalFiles" not in data:
            return super().result_summary(params, result)
        text = f"Read {plural(data['totalFiles'], 'file')} ({format_size(data['totalSize'])})"
        if data["errors"]:
            text += f", {plural(len(data['errors']), 'error')}"
        return text


async def _read_concurrently(items: list[_Read]) -> list[_Read]:
    """Read files off the event loop, concurrently when that pays.

    The first batch is read in one worker thread and timed. When files come slowly (cold
    cache, network filesystem: I/O bound), the rest is read in up to
    :data:`MAX_CONCURRENT_BATCHES` threads at once. When they come fast (page cache: CPU
    bound), threads would only fight over the GIL, so the rest is read in one thread.
    """
    if not items:
        return []
    first, rest = items[:BATCH_SIZE], items[BATCH_SIZE:]
    started = time.perf_counter()
    done = await asyncio.to_thread(_read_batch, first)
    elapsed = time.perf_counter() - started
    if not rest:
        return done
    bytes_read = sum(item.size for item in done)
    expected = len(first) * FAST_FILE_SECONDS + bytes_read / FAST_BYTES_PER_SECOND
    if elapsed <= expected:
        return done + await asyncio.to_thread(_read_batch, rest)
    size = max(1, min(BATCH_SIZE, -(-len(rest) // MAX_CONCURRENT_BATCHES)))
    batches = [rest[i : i + size] for i in range(0, len(rest), size)]
    gate = asyncio.Semaphore(MAX_CONCURRENT_BATCHES)

    async def one(batch: list[_Read]) -> list[_Read]:
        async with gate:
            return await asyncio.to_thread(_read_batch, batch)

    results = await asyncio.gather(*(one(batch) for batch in batches))
    return done + [item for batch in results for item in batch]


def _format(files: list[_Read], errors: list[dict[str, str]], skipped: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for item in files:
        parts.append(f"=== File: {item.shown} ({format_size(item.size)}, {plural(item.lines, 'line')}) ===\n")
        parts.append(item.content)
        parts.append("\n" if item.content.endswith("\n") or not item.content else "\n\n")
    if not files:
        parts.append("No files were read.\n\n")
    if errors:
        parts.append("=== Errors ===\n" + "".join(f"- {e['path']}: {e['error']}\n" for e in errors) + "\n")
    summary = (
        f"--- Summary ---\nTotal: {plural(len(files), 'file')}, {format_size(sum(f.size for f in files))}"
    )
    if errors:
        summary += f"\nErrors: {len(errors)}"
    if skipped:
        summary += f"\nSkipped: {len(skipped)} (binary)"
    parts.append(summary)
    return "".join(parts)
