"""``Edit``: replace a string in a file, tolerant of whitespace/indent/escape slips."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from etcode.security.redact import replaces_secret
from etcode.tools import client_io
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.tools.diff import DIFF_LIMIT, changed_region, diff_stats, first_changed_line, unified_diff
from etcode.tools.edit_match import (
    AmbiguousMatchError,
    NoMatchError,
    Replacement,
    closest_region,
    looks_line_numbered,
    replace,
)
from etcode.tools.paths import display_path, resolve_for, rule_patterns
from etcode.tools.summary import count_lines, plural
from etcode.util.fs import (
    BOM,
    is_binary_file,
    read_regular_bytes,
    special_kind,
    suggest_names,
    write_target,
)
from etcode.util.json_types import JsonObject

#: Tool output shows configured keys as [REDACTED]; copying that back would destroy them.
SECRET_OVERWRITE = (
    "Not changed: this would write the literal text [REDACTED] where {shown} holds a configured "
    "secret (tool output shows secrets as [REDACTED]; the file has the real value). Leave the "
    "lines with [REDACTED] out of old_string and new_string, or ask the user to change them."
)
SNIPPET_CONTEXT = 3
SNIPPET_MAX_LINES = 40


class EditParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(
        description="Path of the file to edit, absolute or relative to the working directory."
    )
    old_string: str = Field(
        description="The exact text to replace (copied from the file, indentation included, without "
        "ReadFile's line-number prefix). Empty to create a new file."
    )
    new_string: str = Field(description="The text to put in its place (must differ from old_string).")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence of old_string (default false)."
    )


def _printable(text: str) -> str:
    """Text safe to show and serialise: undecodable bytes (kept as surrogates so they are
    written back unchanged) become U+FFFD."""
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _check_encodable(text: str, name: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ToolError(
            f"{name} contains invalid Unicode (a lone surrogate at position {err.start}); "
            "send plain UTF-8 text."
        ) from None


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))


def edit_request(tool: str, path: Path, diff: str) -> JsonObject:
    """What an edit's permission question carries: the diff and its first changed line."""
    return {"tool": tool, "path": str(path), "diff": diff, "line": first_changed_line(diff)}


def refuse_unwritable(path: Path, shown: str) -> None:
    """Refuse a folder, and a link that cannot be written through (a loop) — WriteFile's
    and Edit's first checks of their target."""
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give a file path.")
    try:
        write_target(path)  # a symlink is written through to its target
    except OSError as err:
        raise ToolError(f"Cannot write {shown}: {err.strerror or err}") from None


def _check_target(path: Path, shown: str) -> None:
    """Refuse a folder, a symlink loop, a FIFO or a device."""
    refuse_unwritable(path, shown)
    kind = special_kind(path)
    if kind is not None:  # reading a FIFO would wait for a writer, a device never end
        raise ToolError(f"Cannot edit {shown}: it is {kind}, not a regular file.")


def _not_found(ctx: ToolContext, path: Path, shown: str) -> ToolError:
    near = suggest_names(path)
    hint = f" Did you mean: {', '.join(display_path(ctx, p) for p in near)}?" if near else ""
    return ToolError(
        f"File not found: {shown}.{hint} To create a file, use an empty old_string or WriteFile."
    )


@dataclass(frozen=True)
class _Form:
    """A file's text as read: its ``body`` (without a BOM) and how it is stored. The edit
    works on the body with plain ``\\n`` line ends; ``stored`` puts the CRLFs back."""

    body: str
    bom: bool
    crlf: bool
    lossy: bool  # stray bytes, kept as surrogates so they are written back unchanged

    @classmethod
    def of(cls, original: str, lossy: bool) -> _Form:
        bom = original.startswith(BOM)
        body = original[1:] if bom else original
        crlf = "\r\n" in body and body.count("\r\n") == body.count("\n")
        return cls(body, bom, crlf, lossy)

    def plain(self, text: str) -> str:
        """``text`` with ``\\n`` line ends where the file has CRLF."""
        return text.replace("\r\n", "\n") if self.crlf else text

    def stored(self, text: str) -> str:
        """``text`` with the file's line ends."""
        return text.replace("\n", "\r\n") if self.crlf else text

    def shown(self, text: str) -> str:
        """``text`` safe to show (stray bytes as U+FFFD)."""
        return _printable(text) if self.lossy else text


def _edited(path: Path, shown: str, diff: str, outcome: Replacement, snippet: str) -> ToolResult:
    added, removed = diff_stats(diff)
    how = "" if outcome.matcher == "exact" else f" (matched {outcome.matcher})"
    output = f"Edited {shown}: replaced {plural(outcome.count, 'occurrence')}{how}."
    if snippet:
        output += f"\nThe changed region now reads:\n{snippet}"
    return ToolResult(
        output,
        data={
            "path": str(path),
            "diff": diff,
            "line": first_changed_line(diff),  # where an editor shows the change
            "additions": added,
            "deletions": removed,
            "matcher": outcome.matcher,
            "replacements": outcome.count,
        },
        summary=f"Updated {shown} (+{added} -{removed})",
    )


class EditTool(Tool):
    name = "Edit"
    description = (
        "Replace text in a file: `old_string` becomes `new_string`.\n"
        "- Read the file first (ReadFile) and copy `old_string` exactly from it, with its "
        "indentation, but WITHOUT the line-number prefix ReadFile adds.\n"
        "- `old_string` must identify one place: include enough surrounding lines to make it "
        "unique, or set `replace_all` to change every occurrence (e.g. renaming a variable).\n"
        "- Small slips are tolerated when the match stays unique: differences in indentation, "
        "trailing/inner whitespace, over-escaped text, or a changed middle line in a block whose "
        "first and last lines match. When nothing matches, the error quotes the closest region "
        "of the file so you can correct old_string.\n"
        "- An empty `old_string` creates a new file with `new_string` as its content (fails if "
        "the file exists and is not empty).\n"
        "- Line endings (CRLF) and a UTF-8 BOM are preserved; the write is atomic.\n"
        "- Prefer Edit over WriteFile for changing existing files."
    )
    Params = EditParams
    is_read_only = False
    checks_permission = True

    async def run(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        if params.old_string == params.new_string:
            raise ToolError("old_string and new_string are identical; there is nothing to change.")
        _check_encodable(params.new_string, "new_string")
        path = await resolve_for(ctx, params.file_path, self.name, "edit")
        shown = display_path(ctx, path)
        _check_target(path, shown)
        if params.old_string == "":
            return await self._create(path, shown, params.new_string, ctx)
        if not path.exists():
            raise _not_found(ctx, path, shown)
        await self._check_readable(ctx, path, shown)
        form = _Form.of(*await self._read(ctx, path))
        work = form.plain(form.body)
        outcome = self._replace(shown, form, work, params)
        updated = outcome.content
        if updated == work:
            raise ToolError(f"Edit of {shown} changed nothing (new content is identical).")
        final = form.stored(updated)
        if replaces_secret(form.body, final):
            raise ToolError(SECRET_OVERWRITE.format(shown=shown))
        diff = unified_diff(shown, form.shown(form.body), form.shown(final))
        await ctx.check_permission("edit", rule_patterns(ctx, path), edit_request(self.name, path, diff))
        await client_io.save_text(ctx, path, (BOM if form.bom else "") + final, shown)
        return _edited(path, shown, diff, outcome, form.shown(self._snippet(work, updated)))

    async def _check_readable(self, ctx: ToolContext, path: Path, shown: str) -> None:
        """The result quotes the file (the changed region, or the closest one when nothing
        matches): a file the read rules do not allow is asked (or refused) first."""
        names = rule_patterns(ctx, path)
        if any(ctx.decide_permission("read", name, None) != "allow" for name in names):
            await ctx.check_permission("read", names, {"tool": self.name, "path": str(path)})
        if await asyncio.to_thread(is_binary_file, path):
            raise ToolError(f"Cannot edit binary file: {shown}")

    def _replace(self, shown: str, form: _Form, work: str, params: EditParams) -> Replacement:
        """``params``' replacement made in ``work`` (the body with plain line ends)."""
        old, new = form.plain(params.old_string), form.plain(params.new_string)
        try:
            return replace(work, old, new, params.replace_all)
        except AmbiguousMatchError as err:
            raise ToolError(f"Edit failed for {shown}: {err}") from None
        except NoMatchError:
            raise ToolError(form.shown(self._no_match_message(shown, work, old))) from None

    async def _create(self, path: Path, shown: str, content: str, ctx: ToolContext) -> ToolResult:
        old = await client_io.read_existing(ctx, path) or ""
        if old.strip():
            raise ToolError(
                f"{shown} already exists and is not empty; give old_string to edit it, "
                "or use WriteFile to replace it."
            )
        diff = unified_diff(shown, old, content)
        await ctx.check_permission("edit", rule_patterns(ctx, path), edit_request(self.name, path, diff))
        await client_io.save_text(ctx, path, content, shown)
        added, removed = diff_stats(diff)
        lines = count_lines(content)
        return ToolResult(
            f"Created {shown} ({plural(lines, 'line')}).",
            data={
                "path": str(path),
                "diff": diff,
                "line": first_changed_line(diff),
                "additions": added,
                "deletions": removed,
                "created": True,
            },
            summary=f"Created {shown} ({plural(lines, 'line')})",
        )

    @staticmethod
    async def _read(ctx: ToolContext, path: Path) -> tuple[str, bool]:
        """The text to edit (the front end's copy when it serves files) and whether it had
        stray bytes, kept as surrogates so they are written back unchanged."""
        text = await client_io.read_text(ctx, path)
        if text is not None:
            return text, False
        raw = await asyncio.to_thread(read_regular_bytes, path)
        try:
            return raw.decode("utf-8"), False
        except UnicodeDecodeError:
            return raw.decode("utf-8", errors="surrogateescape"), True

    @staticmethod
    def _no_match_message(shown: str, content: str, old: str) -> str:
        parts = [f"old_string was not found in {shown}."]
        if looks_line_numbered(old):
            parts.append(
                "old_string looks like it includes ReadFile's line-number prefixes "
                "(spaces, a number and a tab); remove them."
            )
        region = closest_region(content, old)
        if region and region.similarity >= 0.3:
            lines = region.text.split("\n")[:SNIPPET_MAX_LINES]
            parts.append(
                f"The closest region is lines {region.first_line}-{region.last_line} "
                f"({round(region.similarity * 100)}% similar):\n{_numbered(lines, region.first_line)}"
            )
        parts.append(
            "Copy old_string exactly from the file (ReadFile it again if it may have changed), "
            "including indentation and without line-number prefixes."
        )
        return "\n".join(parts)

    @staticmethod
    def _snippet(before: str, after: str) -> str:
        """Numbered lines of the edited region of ``after`` with a little context."""
        if len(before) + len(after) > DIFF_LIMIT:  # large: never split the whole texts
            start, _, end = changed_region(before, after, SNIPPET_CONTEXT)
            if end - start > DIFF_LIMIT:
                return ""
            region = after[start:end]
            lines = region.split("\n")
            if region.endswith("\n"):
                lines.pop()
            if len(lines) > SNIPPET_MAX_LINES + 2 * SNIPPET_CONTEXT:
                return ""
            return _numbered(lines, before.count("\n", 0, start) + 1)
        old_lines, new_lines = before.split("\n"), after.split("\n")
        start = 0
        limit = min(len(old_lines), len(new_lines))
        while start < limit and old_lines[start] == new_lines[start]:
            start += 1
        end_old, end_new = len(old_lines), len(new_lines)
        while end_old > start and end_new > start and old_lines[end_old - 1] == new_lines[end_new - 1]:
            end_old -= 1
            end_new -= 1
        first = max(0, start - SNIPPET_CONTEXT)
        last = min(len(new_lines), end_new + SNIPPET_CONTEXT)
        if last - first > SNIPPET_MAX_LINES:
            return ""
        return _numbered(new_lines[first:last], first + 1)

    def params_summary(self, params: JsonObject) -> str:
        return str(params.get("file_path", ""))
