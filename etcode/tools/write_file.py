"""``WriteFile``: create or overwrite a file (atomically), reporting a diff."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from etcode.security.redact import replaces_secret
from etcode.tools import client_io
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.tools.diff import diff_stats, first_changed_line, unified_diff
from etcode.tools.edit import SECRET_OVERWRITE, edit_request, refuse_unwritable
from etcode.tools.paths import display_path, resolve_for, rule_patterns
from etcode.tools.summary import count_lines, plural
from etcode.util.json_types import JsonObject


class WriteFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(
        description="Path of the file to write, absolute or relative to the working directory."
    )
    content: str = Field(description="The complete new content of the file.")


class WriteFileTool(Tool):
    name = "WriteFile"
    description = (
        "Write a file to the local filesystem, creating it (and missing parent folders) or "
        "replacing its whole content.\n"
        "- `file_path` may be absolute or relative to the working directory.\n"
        "- `content` is written exactly as given (UTF-8); it replaces everything in the file.\n"
        "- Prefer Edit for changing part of an existing file: it is safer and cheaper. Read a "
        "file before overwriting it so nothing is lost.\n"
        "- The write is atomic: the file is either fully old or fully new.\n"
        "- Do not create documentation or README files unless asked."
    )
    Params = WriteFileParams
    is_read_only = False
    checks_permission = True

    async def run(self, params: WriteFileParams, ctx: ToolContext) -> ToolResult:
        try:
            params.content.encode("utf-8")  # a lone surrogate cannot be written
        except UnicodeEncodeError as err:
            raise ToolError(
                f"content contains invalid Unicode (a lone surrogate at position {err.start}); "
                "send plain UTF-8 text."
            ) from None
        path = await resolve_for(ctx, params.file_path, self.name, "write")
        shown = display_path(ctx, path)
        refuse_unwritable(path, shown)
        if path.exists() and not path.is_file():  # reading a device/FIFO would never end
            raise ToolError(f"{shown} is not a regular file (a device, FIFO or socket); not written.")
        try:
            old = await client_io.read_existing(ctx, path)
        except OSError as err:
            raise ToolError(f"Cannot read {shown}: {err.strerror or err}") from None
        if old and replaces_secret(old, params.content):
            raise ToolError(SECRET_OVERWRITE.format(shown=shown))
        diff = unified_diff(shown, old or "", params.content)
        await ctx.check_permission(
            "edit",
            rule_patterns(ctx, path),
            edit_request(self.name, path, diff),
        )
        await client_io.save_text(ctx, path, params.content, shown)
        lines = count_lines(params.content)
        added, removed = diff_stats(diff)
        verb = "Created" if old is None else ("Overwrote" if old != params.content else "Rewrote (unchanged)")
        return ToolResult(
            f"{verb} {shown} ({plural(lines, 'line')}).",
            data={
                "path": str(path),
                "created": old is None,
                "lines": lines,
                "diff": diff,
                "line": first_changed_line(diff),  # where an editor shows the change
                "additions": added,
                "deletions": removed,
            },
            summary=f"Wrote {plural(lines, 'line')} to {shown}",
        )

    def params_summary(self, params: JsonObject) -> str:
        return str(params.get("file_path", ""))
