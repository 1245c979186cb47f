"""The scheduler honours the optional abilities a tool declares (``ToolAbilities``):
a per-call read-only answer lets calls run together, ``checks_permission`` skips its
pre-check of the tool's name."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pydantic import BaseModel

from etcode.provider.types import ToolCallPart
from etcode.tools.base import Tool, ToolContext, ToolResult
from etcode.tools.registry import ToolRegistry
from etcode.tools.scheduler import ToolScheduler
from etcode.util.json_types import JsonObject
from tests.tool_support import make_ctx


class ProbeParams(BaseModel):
    mode: str


class PerCallProbe(Tool):
    """Not read-only as a class; a ``mode: read`` call is. Each read call waits until
    the other read call is running too, so run one at a time they would never finish."""

    name = "probe"
    Params = ProbeParams

    def __init__(self) -> None:
        self.running = 0
        self.both_running = asyncio.Event()

    def is_read_only_call(self, arguments: JsonObject) -> bool:
        return arguments.get("mode") == "read"

    async def run(self, params: ProbeParams, ctx: ToolContext) -> ToolResult:
        self.running += 1
        if self.running == 2:
            self.both_running.set()
        try:
            await asyncio.wait_for(self.both_running.wait(), 60)  # alone: fails, not hangs
        finally:
            self.running -= 1
        return ToolResult(f"{params.mode} done")


class SelfChecking(Tool):
    name = "self_checking"
    checks_permission = True

    async def run(self, params: BaseModel, ctx: ToolContext) -> ToolResult:
        await ctx.check_permission("own_permission", ["own pattern"], {})
        return ToolResult("checked")


class Plain(Tool):
    name = "plain"

    async def run(self, params: BaseModel, ctx: ToolContext) -> ToolResult:
        return ToolResult("ran")


def call(number: int, name: str, arguments: JsonObject) -> ToolCallPart:
    return ToolCallPart(f"c{number}", name, json.dumps(arguments))


async def test_per_call_read_only_calls_run_together(tmp_path: Path) -> None:
    probe = PerCallProbe()
    scheduler = ToolScheduler(
        ToolRegistry([probe]), lambda c: make_ctx(tmp_path, call_id=c.id), lambda e: None
    )
    calls = [
        call(1, "probe", {"mode": "read"}),
        call(2, "probe", {"mode": "read"}),
        call(3, "probe", {"mode": "x"}),
    ]
    assert [[c.id for c in wave] for wave in scheduler.plan(calls)] == [["c1", "c2"], ["c3"]]
    results = await scheduler.run(calls[:2], asyncio.Event())
    assert [(r.output, r.is_error) for r in results] == [("read done", False), ("read done", False)]


async def test_only_tools_without_their_own_check_are_pre_checked(tmp_path: Path) -> None:
    asked: list[tuple[str, list[str]]] = []

    async def check(permission: str, patterns: list[str], metadata: JsonObject) -> None:
        asked.append((permission, patterns))

    def context(c: ToolCallPart) -> ToolContext:
        return make_ctx(tmp_path, call_id=c.id, check_permission=check)

    scheduler = ToolScheduler(ToolRegistry([SelfChecking(), Plain()]), context, lambda e: None)
    results = await scheduler.run([call(1, "self_checking", {}), call(2, "plain", {})], asyncio.Event())
    assert [r.output for r in results] == ["checked", "ran"]
    assert asked == [("own_permission", ["own pattern"]), ("plain", ["*"])]
