"""Task subagents: child sessions run for the ``Task`` tool.

A child is an ordinary agent with the subagent's prompt, tools and permissions, built by
the runtime's :class:`~etcode.wiring.runtime.ChildFactory` (the public ``Agent`` gives its
own; this module never imports ``etcode.api``). It shares its parent's provider
connection (when the model's provider is the same), configuration, permission asker and
MCP servers, gets a session id of its own and records its parent's
(``parent_session_id``; stored as the session's ``parent_id`` when the parent has a
session store). Nested ``Task`` is off in a child
unless its agent enables ``Task`` explicitly, and never deeper than :data:`MAX_DEPTH`.
An agent that may not write files (``plan``) is offered only read-only subagents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

from etcode.contract.events import HookRun, SubagentEvent, ToolCallStart, ToolResultEvent, WarningEvent
from etcode.tools.base import ToolContext, ToolResult
from etcode.tools.task import TaskTool
from etcode.util.json_types import JsonObject
from etcode.wiring.agent_access import cannot_write_files, explicitly_enabled, is_read_only_agent
from etcode.wiring.run_limits import child_limits

if TYPE_CHECKING:
    from etcode.agent.registry import AgentInfo
    from etcode.contract.tools import TokenBudget
    from etcode.wiring.runtime import Runtime
    from etcode.wiring.settings import AgentSettings, ChildAgent

#: Subagents may start subagents (when allowed) down to this depth.
MAX_DEPTH = 3
#: Agents that are never offered as subagents.
NOT_SUBAGENTS = ("workflow",)


def subagents_for(runtime: Runtime) -> dict[str, AgentInfo]:
    """The agents ``Task`` may start: every agent whose mode is not ``primary``."""
    from etcode.agent.registry import load_agents

    config = runtime.config
    agents = load_agents(
        config.agent,
        directory=runtime.instance.directory,
        worktree=runtime.instance.worktree,
        without=config.without,
    )
    return {
        name: info for name, info in agents.items() if info.mode != "primary" and name not in NOT_SUBAGENTS
    }


def task_tool_for(agent: AgentSettings, runtime: Runtime) -> TaskTool | None:
    """The ``Task`` tool for this session, or None when the agent may not use it."""
    info = runtime.agent_info
    if runtime.depth >= MAX_DEPTH:
        return None
    allowed = info.tool_enabled("Task") if runtime.depth == 0 else explicitly_enabled(info, "Task")
    if not allowed:
        return None
    agents = subagents_for(runtime)
    if cannot_write_files(info):  # a read-only agent must not write through a subagent
        agents = {name: sub for name, sub in agents.items() if is_read_only_agent(sub)}
    if not agents:
        return None
    return TaskTool(SubagentSpawner(agent, runtime, agents))


class SubagentSpawner:
    """Runs subagents for one parent session (the ``Task`` tool's runner)."""

    def __init__(self, parent: AgentSettings, runtime: Runtime, agents: Mapping[str, AgentInfo]) -> None:
        self.parent = parent
        self.runtime = runtime
        self.agents = dict(agents)
        #: Child agents started so far (their ``session_id`` and ``parent_session_id``).
        self.children: list[ChildAgent] = []

    def catalog(self) -> dict[str, str]:
        return {name: info.description or "" for name, info in self.agents.items()}

    def is_read_only(self, name: str) -> bool:
        info = self.agents.get(name)
        return info is not None and is_read_only_agent(info)

    async def child(self, name: str, budget: TokenBudget | None = None) -> ChildAgent:
        """A ready child agent for subagent ``name`` (its runtime built from the parent's),
        with its parent's limits and what is left of the run's token ``budget``."""
        info = self.agents[name]
        parent, runtime = self.parent, self.runtime
        if runtime.make_child is None:
            raise RuntimeError("this runtime builds no subagents")
        limits = child_limits(
            runtime.limits,
            runtime.config,
            info.steps,
            defaults=parent.limit_defaults,
            remaining=budget.remaining() if budget is not None else None,
        )
        model = info.model or runtime.spec.full_id
        same_provider = model.partition("/")[0] == runtime.spec.id
        child = await runtime.make_child(
            runtime,
            model=model,
            agent=name,
            tools=[t for t in parent.custom_tools if info.tool_enabled(t.name)],
            builtin_tools=parent.builtin_tools,
            name=parent.name,
            retry=parent.retry,
            max_tokens=parent.max_tokens,
            directory=runtime.instance.directory,
            config=runtime.config,
            provider=runtime.provider if same_provider else None,
            asker=parent.asker,
            llm_kwargs=parent.llm_kwargs if same_provider else {},
            reasoning=parent.reasoning,
            limits=limits,
        )
        self.children.append(child)
        return child

    async def run(self, name: str, description: str, prompt: str, ctx: ToolContext) -> ToolResult:
        child = await self.child(name, ctx.budget)
        watcher = asyncio.create_task(_interrupt_on(ctx.abort, child))
        try:
            async for event in child.stream(prompt):
                if isinstance(event, ToolCallStart | ToolResultEvent | HookRun | WarningEvent):
                    ctx.emit(SubagentEvent(ctx.call_id, name, child.session_id, event.to_dict()))
                elif isinstance(event, SubagentEvent):  # a nested subagent's, under this Task call:
                    # front ends see every call that may ask (an editor shows its question on it)
                    ctx.emit(SubagentEvent(ctx.call_id, event.agent, event.session_id, event.event))
        finally:
            watcher.cancel()
            await child.aclose()
        result = child.last_result
        if result is not None and ctx.add_usage is not None:  # the parent's totals include it
            await ctx.add_usage(result.usage, child.cost, child.model or "")
        if result is not None and ctx.budget is not None:  # and the run's token budget
            ctx.budget.add_tokens(result.counted_output_tokens)
        return _tool_result(name, child)


async def _interrupt_on(abort: asyncio.Event, child: ChildAgent) -> None:
    await abort.wait()
    child.interrupt()


def _tool_result(name: str, child: ChildAgent) -> ToolResult:
    result = child.last_result
    data: JsonObject = {
        "agent": name,
        "session_id": child.session_id,
        "parent_session_id": child.parent_session_id,
    }
    if result is None:
        return ToolResult(f"The {name} subagent produced no result.", is_error=True, data=data)
    data.update(steps=result.steps, usage=result.usage.to_dict(), stop_reason=result.stop_reason)
    text = result.text.strip()
    steps = f"{result.steps} step{'s' if result.steps != 1 else ''}"
    if result.is_error:
        reason = result.stop_reason + (f": {result.error}" if result.error else "")
        output = f"The {name} subagent stopped early ({reason})."
        if text:
            output += f" Its last answer:\n{text}"
        return ToolResult(output, is_error=True, data=data, summary=f"{name} stopped ({result.stop_reason})")
    return ToolResult(
        text or f"The {name} subagent finished without a final answer.",
        data=data,
        summary=f"{name} finished in {steps}",
    )


def add_task_tool(agent: AgentSettings, runtime: Runtime) -> None:
    """Offer the ``Task`` tool when the agent may use it (see :func:`task_tool_for`)."""
    task = task_tool_for(agent, runtime)
    if task is not None:
        runtime.tools.add(task)
