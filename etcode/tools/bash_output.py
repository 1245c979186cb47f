"""``BashOutput`` and ``KillBash``: read and end the session's background processes
(Claude Code's names and parameters)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from etcode.tools.background import of_state
from etcode.tools.base import Tool, ToolContext, ToolResult
from etcode.tools.bash_background import status_text, with_output
from etcode.tools.summary import shorten
from etcode.util.json_types import JsonObject


class BashOutputParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bash_id: str = Field(description="The id of the background process (from Bash with run_in_background).")
    filter: str | None = Field(
        default=None,
        description="A regular expression: only the new lines matching it are returned; the others "
        "are dropped and cannot be read again.",
    )


class BashOutputTool(Tool):
    name = "BashOutput"
    description = (
        "Read the new output of a background process started by Bash with `run_in_background`: "
        "what it printed (stdout and stderr) since the last read, and whether it is still running, "
        "exited (with its code) or was killed.\n"
        "- Each call returns only what is new; a long output keeps its last part and says how many "
        "bytes were skipped.\n"
        "- `filter` keeps only the lines matching a regular expression."
    )
    Params = BashOutputParams
    is_read_only = True

    async def run(self, params: BashOutputParams, ctx: ToolContext) -> ToolResult:
        registry = of_state(ctx.state)
        found = await registry.read_new(params.bash_id, params.filter)
        info = found.info
        head = f"{info.id} ({shorten(info.command)}): {status_text(found)}"
        text, path = await with_output(head, found, "(no new output)")
        data: JsonObject = {"status": info.status, "exitCode": info.exit_code, "skipped": found.skipped}
        if path:
            data["outputPath"] = path
        return ToolResult(text, data=data)

    def params_summary(self, params: JsonObject) -> str:
        return str(params.get("bash_id", ""))

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        data = result.data or {}
        status = data.get("status")
        if status is None:
            return super().result_summary(params, result)
        return f"exited {data.get('exitCode')}" if status == "exited" else str(status)


class KillBashParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    shell_id: str = Field(description="The id of the background process to end.")


class KillBashTool(Tool):
    name = "KillBash"
    description = (
        "End a background process started by Bash with `run_in_background`, with every process it "
        "started (SIGTERM, then SIGKILL after 2 s)."
    )
    Params = KillBashParams
    is_read_only = False

    async def run(self, params: KillBashParams, ctx: ToolContext) -> ToolResult:
        registry = of_state(ctx.state)
        ended = await registry.kill(params.shell_id)
        info = registry.get(params.shell_id)
        assert info is not None  # kill raised for an unknown id
        if ended:
            return ToolResult(f"Killed {info.id} ({shorten(info.command)}).", data={"killed": True})
        already = f"exited with code {info.exit_code}" if info.status == "exited" else info.status
        return ToolResult(f"{info.id} had already ended ({already}).", data={"killed": False})

    def params_summary(self, params: JsonObject) -> str:
        return str(params.get("shell_id", ""))

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        data = result.data or {}
        if "killed" not in data:
            return super().result_summary(params, result)
        return "killed" if data["killed"] else "already ended"
