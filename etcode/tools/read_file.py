"""``ReadFile``: a window of a text file with numbered lines, or an image (PNG, JPEG, GIF,
WebP: known by its first bytes) the model sees, scaled down to the providers' limits."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from etcode.provider.images import sniff_file
from etcode.tools import client_io
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.tools.paths import display_path, resolve_for, rule_patterns
from etcode.tools.summary import plural
from etcode.tools.truncate import is_pending, wait_saved
from etcode.util.fs import BOM, is_binary_file, regular_opener, special_kind, suggest_names
from etcode.util.json_types import JsonObject

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_OUTPUT_BYTES = 50 * 1024


class ReadFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(
        description="Path of the file to read, absolute or relative to the working directory."
    )
    offset: int | None = Field(
        default=None, ge=1, description="1-based line number to start reading from (default 1)."
    )
    limit: int | None = Field(
        default=None, ge=1, description=f"Maximum number of lines to read (default {DEFAULT_LIMIT})."
    )


class _Window:
    """The lines of one read, plus what the caller needs to say about the rest."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.total = 0
        self.cut_lines = 0
        self.stopped_at_bytes = False
        #: Where the text came from: "disk", or "client" (the front end's copy).
        self.source = "disk"


def read_window(path: Path, offset: int, limit: int) -> _Window:
    """Read lines ``offset .. offset+limit-1`` (1-based), counting every line of the file."""
    with open(path, encoding="utf-8", errors="replace", newline="", opener=regular_opener) as handle:
        return window_of(handle, offset, limit)


def window_of(raw_lines: Iterable[str], offset: int, limit: int) -> _Window:
    """The numbered window of ``raw_lines`` (each with its line ending, as a text file
    opened with ``newline=""`` yields them)."""
    window = _Window()
    size = 0
    for number, raw in enumerate(raw_lines, start=1):
        window.total = number
        if number < offset or len(window.lines) >= limit or window.stopped_at_bytes:
            continue
        line = raw.rstrip("\r\n")
        if number == 1 and line.startswith(BOM):
            line = line[1:]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f"... [line truncated: {len(line)} chars]"
            window.cut_lines += 1
        rendered = f"{number:>6}\t{line}"
        size += len(rendered.encode("utf-8")) + 1
        if size > MAX_OUTPUT_BYTES and window.lines:
            window.stopped_at_bytes = True
            continue
        window.lines.append(rendered)
    return window


class ReadFileTool(Tool):
    name = "ReadFile"
    description = (
        "Read a text file from the local filesystem and return its lines numbered like `cat -n` "
        "(line number, a tab, then the line).\n"
        "- `file_path` may be absolute or relative to the working directory.\n"
        f"- By default up to {DEFAULT_LIMIT} lines are returned from the start of the file. For "
        "long files pass `offset` (1-based line number) and `limit` to read another window; the "
        "result says when the file has more lines and which offset continues it.\n"
        f"- Lines longer than {MAX_LINE_CHARS} characters are cut; output is capped near 50 KB.\n"
        "- A PNG, JPEG, GIF or WebP image is returned as an image you can see (scaled down to "
        "1568 px on its long edge when larger).\n"
        "- Other binary files are refused; reading a directory fails (use ListFiles); a missing file "
        "fails with suggestions of similar names.\n"
        "- The line-number prefix is not part of the file: never include it in Edit's "
        "old_string/new_string.\n"
        "- To read several files at once prefer ReadManyFiles; to search use Grep or Glob."
    )
    Params = ReadFileParams
    is_read_only = True
    checks_permission = True

    async def run(self, params: ReadFileParams, ctx: ToolContext) -> ToolResult:
        path = await resolve_for(ctx, params.file_path, self.name, "read")
        shown = display_path(ctx, path)
        if not path.exists():
            hint = ""
            near = suggest_names(path)
            if near:
                hint = " Did you mean: " + ", ".join(display_path(ctx, p) for p in near) + "?"
            raise ToolError(f"File not found: {shown}.{hint}")
        if path.is_dir():
            raise ToolError(f"{shown} is a directory, not a file; use ListFiles to see its contents.")
        kind = special_kind(path)
        if kind is not None:  # reading a FIFO would wait for a writer, a device never end
            raise ToolError(f"Cannot read {shown}: it is {kind}, not a regular file.")
        await ctx.check_permission("read", rule_patterns(ctx, path), {"tool": self.name, "path": str(path)})
        if await asyncio.to_thread(sniff_file, path) is not None:
            return await _read_image(ctx, path, shown)
        if await asyncio.to_thread(is_binary_file, path):
            raise ToolError(f"Cannot read binary file: {shown}")
        if is_pending(path):  # a saved tool output still being written
            await asyncio.to_thread(wait_saved, path)
        offset = params.offset or 1
        limit = params.limit or DEFAULT_LIMIT
        window = await self._window(ctx, path, shown, offset, limit)

        if window.total == 0:
            output = f"(File {shown} is empty)"
        elif offset > window.total:
            raise ToolError(f"offset={offset} is past the end of {shown} ({plural(window.total, 'line')}).")
        else:
            output = "\n".join(window.lines)
            last = offset + len(window.lines) - 1
            if last < window.total:
                why = " (output size limit reached)" if window.stopped_at_bytes else ""
                output += (
                    f"\n\n(File has more lines{why}: showed lines {offset}-{last} of {window.total}; "
                    f"use offset={last + 1} to continue.)"
                )
            if window.cut_lines:
                output += (
                    f"\n({plural(window.cut_lines, 'line')} longer than {MAX_LINE_CHARS} chars were cut.)"
                )
        extra = await ctx.instructions_for(path)
        if extra:
            output += "\n\n" + extra
        shown_lines = len(window.lines)
        return ToolResult(
            output,
            data={
                "path": str(path),
                "offset": offset,
                "lines": shown_lines,
                "totalLines": window.total,
                "isTruncated": offset + shown_lines - 1 < window.total,
                **({"source": window.source} if window.source != "disk" else {}),
            },
        )

    @staticmethod
    async def _window(ctx: ToolContext, path: Path, shown: str, offset: int, limit: int) -> _Window:
        """The window from the front end's copy (an editor's unsaved buffer) when it serves
        files, else from the disk."""
        text = await client_io.read_text(ctx, path)
        if text is not None:
            window = await asyncio.to_thread(window_of, io.StringIO(text, newline=""), offset, limit)
            window.source = "client"
            return window
        try:
            return await asyncio.to_thread(read_window, path, offset, limit)
        except OSError as err:
            raise ToolError(f"Cannot read {shown}: {err.strerror or err}") from None

    def params_summary(self, params: JsonObject) -> str:
        text = str(params.get("file_path", ""))
        offset, limit = params.get("offset"), params.get("limit")
        if offset or limit:
            start = offset or 1
            text += f":{start}-{start + limit - 1}" if limit else f":{start}-"
        return text

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        if result.summary:
            return result.summary
        data = result.data or {}
        if result.is_error or "lines" not in data:
            return super().result_summary(params, result)
        lines, total = data["lines"], data["totalLines"]
        if total and lines < total:
            return f"Read {plural(lines, 'line')} (of {total})"
        return f"Read {plural(lines, 'line')}"


async def _read_image(ctx: ToolContext, path: Path, shown: str) -> ToolResult:
    """The image at ``path`` for the model to see, with a line saying what it is (and what
    the file was, when the copy sent is scaled down or re-encoded)."""
    from etcode.provider.images import ImageError, describe, image_facts, load_image

    try:
        prepared = await load_image(path, shown)
    except ImageError as err:
        raise ToolError(str(err)) from None
    image = prepared.image
    output = f"Image {describe(prepared)}, shown below."
    extra = await ctx.instructions_for(path)
    if extra:
        output += "\n\n" + extra
    return ToolResult(
        output,
        data={
            "path": str(path),
            "image": image_facts(prepared),
        },
        summary=f"Read image ({image.width}×{image.height})",
        images=[image],
    )
