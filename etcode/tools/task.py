"""``Task``: hand a self-contained job to a subagent that runs in its own child session.

The tool only describes and validates the call; the session layer supplies the
:class:`SubagentRunner` that builds and runs the child (``etcode.wiring.subagent``).
A call is read-only for scheduling — so several may run at once — exactly when its
``subagent_type`` names a read-only agent such as ``explore``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult, _one_line
from etcode.util.json_types import JsonObject


class TaskParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(description="A short (3-5 word) description of the task.")
    prompt: str = Field(
        min_length=1,
        description="The complete task for the subagent: what to do, what to look at, and what to report back.",
    )
    subagent_type: str = Field(description="Which subagent runs the task (see the list in the description).")


class SubagentRunner(Protocol):
    """What ``Task`` needs from the session: the subagents and a way to run one."""

    def catalog(self) -> Mapping[str, str]:
        """Subagent name → one-line description."""
        ...

    def is_read_only(self, name: str) -> bool: ...

    async def run(self, name: str, description: str, prompt: str, ctx: ToolContext) -> ToolResult: ...


#: The line before the subagent list in ``Task``'s description (the lean description keeps the list).
CATALOG_HEADING = "Available subagent types:"

_DESCRIPTION = """Launch a subagent to handle a self-contained task in its own session, with its own context.

The subagent starts fresh: it does not see this conversation, so the prompt must say everything it needs (the goal, the relevant paths, what to return). It answers once, with a final report; that report is this tool's result and is not shown to the user, so summarise what matters.

Use it for broad searches and research that would flood this conversation, or for independent pieces of work. Several read-only subagents (such as explore) can run at the same time: put several Task calls in one answer. For a single known file or symbol, use ReadFile/Grep/Glob directly instead.

{heading}
{catalog}"""


class TaskTool(Tool):
    name = "Task"
    Params = TaskParams
    is_read_only = False

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner
        lines = [f"- {name}: {text or 'no description'}" for name, text in runner.catalog().items()]
        self._description = _DESCRIPTION.format(
            heading=CATALOG_HEADING, catalog="\n".join(lines) or "- general"
        )

    @property
    def description(self) -> str:  # type: ignore[override]
        return self._description

    def is_read_only_call(self, arguments: JsonObject) -> bool:
        """Read-only (may run alongside other read-only calls) for read-only subagents."""
        return self.runner.is_read_only(str(arguments.get("subagent_type", "")))

    def params_summary(self, params: JsonObject) -> str:
        kind = params.get("subagent_type") or "?"
        text = params.get("description") or params.get("prompt") or ""
        return f"{kind}: {_one_line(str(text), 70)}" if text else str(kind)

    async def run(self, params: TaskParams, ctx: ToolContext) -> ToolResult:
        known = self.runner.catalog()
        if params.subagent_type not in known:
            raise ToolError(
                f"Unknown subagent_type '{params.subagent_type}'. Available: {', '.join(known) or 'none'}."
            )
        return await self.runner.run(params.subagent_type, params.description, params.prompt, ctx)
