"""``ListFiles``: a tree of the files under a folder (breadth first, capped)."""

from __future__ import annotations

from typing import TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from etcode.tools import ripgrep
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.tools.paths import display_path, permission_pattern, resolve_for
from etcode.tools.summary import plural
from etcode.util.fs import real_path
from etcode.util.ignore import gitignore_spec
from etcode.util.json_types import JsonObject

MAX_ENTRIES = 200


class ListFilesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="Folder to list (default: the working directory).")
    ignore: list[str] | None = Field(
        default=None, description='Patterns to leave out (gitignore syntax), e.g. ["*.log", "fixtures/"].'
    )


#: A folder: its entries by name, a sub-folder (``name/``) as its own tree, a file as None.
_Tree: TypeAlias = dict[str, "_Tree | None"]


def render_tree(root_label: str, files: list[str]) -> str:
    """An indented tree of ``/``-separated relative paths (folders end with ``/``)."""
    tree: _Tree = {}
    for rel in files:
        node = tree
        parts = rel.split("/")
        for part in parts[:-1]:
            folder = node.get(part + "/")
            if folder is None:
                folder = node[part + "/"] = {}
            node = folder
        node.setdefault(parts[-1], None)
    lines = [root_label]

    def walk(node: _Tree, depth: int) -> None:
        folders = sorted(((k, v) for k, v in node.items() if v is not None), key=lambda item: item[0])
        names = sorted(k for k, v in node.items() if v is None)
        for name, folder in folders:
            lines.append("  " * depth + name)
            walk(folder, depth + 1)
        for name in names:
            lines.append("  " * depth + name)

    walk(tree, 1)
    return "\n".join(lines)


class ListFilesTool(Tool):
    name = "ListFiles"
    description = (
        "List the files under a folder as an indented tree (folders end with `/`).\n"
        "- `path`: the folder (default: the working directory); `ignore`: patterns to leave out "
        "(gitignore syntax).\n"
        "- .gitignore'd files and folders such as .git, node_modules and virtualenvs are left out; "
        "empty folders are not shown.\n"
        f"- At most {MAX_ENTRIES} files are shown, shallowest first, so the top levels are always "
        "visible; list a subfolder to see deeper. Prefer Glob to find files by pattern."
    )
    Params = ListFilesParams
    is_read_only = True
    checks_permission = True

    async def run(self, params: ListFilesParams, ctx: ToolContext) -> ToolResult:
        base = await resolve_for(ctx, params.path or ".", self.name, "list")
        if not base.exists():
            raise ToolError(f"Folder not found: {display_path(ctx, base)}")
        if not base.is_dir():
            raise ToolError(f"{display_path(ctx, base)} is a file, not a folder; use ReadFile to read it.")
        await ctx.check_permission("list", [permission_pattern(ctx, base)], {"tool": self.name})
        try:
            files = await ripgrep.list_files(base, ctx.worktree, ctx.abort)
        except ripgrep.RipgrepError as err:
            raise ToolError(f"ListFiles failed: {err}") from None
        rels = [p.relative_to(base).as_posix() for p in files]
        if params.ignore:
            spec = gitignore_spec(params.ignore)
            rels = [rel for rel in rels if not spec.match_file(rel)]
        rels.sort(key=lambda rel: (rel.count("/"), rel))
        shown = rels[:MAX_ENTRIES]
        label = real_path(base).as_posix().rstrip("/") + "/"
        output = render_tree(label, shown) if shown else f"{label}\n  (no files)"
        if len(rels) > MAX_ENTRIES:
            output += (
                f"\n\n(Showing {MAX_ENTRIES} of {len(rels)} files, shallowest first. List a subfolder "
                "or use Glob to see more.)"
            )
        return ToolResult(
            output, data={"count": len(rels), "shown": len(shown), "truncated": len(rels) > len(shown)}
        )

    def params_summary(self, params: JsonObject) -> str:
        return str(params.get("path") or ".")

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        if result.summary:
            return result.summary
        data = result.data or {}
        if result.is_error or "count" not in data:
            return super().result_summary(params, result)
        text = f"Listed {plural(data['count'], 'file')}"
        return text + f" (showing {data['shown']})" if data["truncated"] else text
