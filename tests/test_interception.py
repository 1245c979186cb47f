"""The engine's interception seam (``etcode.engine.interception``): a real loop over real
HTTP (the fake LLM server), a real Bash tool and real files."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from etcode.contract import events as ev
from etcode.contract.results import AgentResult
from etcode.engine.interception import Decision, Interceptor, PassThrough
from etcode.engine.loop import AgentLoop
from etcode.engine.settings import LoopSettings
from etcode.provider.factory import make_provider
from etcode.provider.spec import RetryConfig
from etcode.provider.types import Message, ToolCallPart, ToolResultPart
from etcode.tools.base import tool
from etcode.tools.bash import BashTool
from etcode.tools.registry import ToolRegistry
from tests.fake_llm import Call, FakeLLM, Reply


@tool
def shout(text: str) -> str:
    """Shout the text.

    Args:
        text: what to shout
    """
    return text.upper()


async def run(llm: FakeLLM, tmp_path: Path, *interceptors: Interceptor) -> tuple[AgentLoop, list[ev.Event]]:
    provider = make_provider(llm.spec("openai"), RetryConfig(max_retries=0))
    settings = LoopSettings(
        provider=provider,
        model="fake-model",
        system=["You are a test."],
        tools=ToolRegistry([BashTool(), shout]),
        directory=tmp_path,
        worktree=tmp_path,
        session_id="ses_test",
        interceptors=interceptors,
    )
    loop = AgentLoop(settings, [], Message.user("go"))
    try:
        events = [event async for event in loop.events()]
    finally:
        await provider.aclose()
    return loop, events


def tool_messages(llm: FakeLLM, request: int) -> list[str]:
    """What the model was sent as tool results in request number ``request``."""
    return [m["content"] for m in llm.requests[request].body["messages"] if m["role"] == "tool"]


class BlockBash(PassThrough):
    async def before_tool(self, call: ToolCallPart) -> Decision:
        if call.name == "Bash":
            return Decision.block("shell commands are off in this project")
        return Decision.proceed()


@pytest.mark.parametrize("blocked", [True, False])
async def test_a_blocked_bash_call_does_not_run_and_the_model_is_told_why(
    llm: FakeLLM, tmp_path: Path, blocked: bool
) -> None:
    llm.script(Reply(calls=[Call("Bash", {"command": "touch made.txt"})]), Reply(text="ok"))
    loop, events = await run(llm, tmp_path, *([BlockBash()] if blocked else []))
    assert (tmp_path / "made.txt").exists() is not blocked  # without the interceptor it runs
    assert loop.result is not None and loop.result.stop_reason == "end_turn"
    (sent,) = tool_messages(llm, 1)
    results = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert len(results) == 1 and results[0].is_error is blocked
    if blocked:
        assert sent == "Blocked before it ran: shell commands are off in this project"


class Rewrite(PassThrough):
    async def after_tool(self, call: ToolCallPart, result: ToolResultPart) -> ToolResultPart:
        return ToolResultPart(result.call_id, result.name, f"rewritten: {result.output.lower()}")


async def test_a_rewritten_result_is_what_the_model_sees_next(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(Reply(calls=[Call("shout", {"text": "hi"})]), Reply(text="ok"))
    loop, _ = await run(llm, tmp_path, Rewrite())
    assert tool_messages(llm, 1) == ["rewritten: hi"]
    assert loop.result is not None and loop.result.messages[-2].tool_results[0].output == "rewritten: hi"


class Reroute(PassThrough):
    async def before_tool(self, call: ToolCallPart) -> Decision:
        return Decision.replace({"text": "replaced"})


async def test_replaced_arguments_are_what_the_tool_runs_with(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(Reply(calls=[Call("shout", {"text": "hi"})]), Reply(text="ok"))
    await run(llm, tmp_path, Reroute())
    assert tool_messages(llm, 1) == ["REPLACED"]


class Journal(PassThrough):
    """Writes down each call it gets; tags the prompt."""

    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    async def before_turn(self, prompt: Message) -> Message:
        self.seen.append(f"{self.name} before_turn {prompt.text}")
        return Message.user(f"{prompt.text} [{self.name}]")

    async def before_tool(self, call: ToolCallPart) -> Decision:
        self.seen.append(f"{self.name} before_tool {call.name}")
        return Decision.proceed()

    async def after_tool(self, call: ToolCallPart, result: ToolResultPart) -> ToolResultPart:
        self.seen.append(f"{self.name} after_tool {result.output}")
        return result

    async def after_turn(self, result: AgentResult) -> None:
        self.seen.append(f"{self.name} after_turn {result.stop_reason} {result.text}")


async def test_turn_and_tool_hooks_are_called_once_each_in_order(llm: FakeLLM, tmp_path: Path) -> None:
    seen: list[str] = []
    llm.script(Reply(calls=[Call("shout", {"text": "hi"})]), Reply(text="done"))
    await run(llm, tmp_path, Journal("a", seen), Journal("b", seen))
    assert seen == [
        "a before_turn go",
        "b before_turn go [a]",
        "a before_tool shout",
        "b before_tool shout",
        "a after_tool HI",
        "b after_tool HI",
        "a after_turn end_turn done",
        "b after_turn end_turn done",
    ]
    first = llm.requests[0].body["messages"]
    assert [m["content"] for m in first if m["role"] == "user"] == ["go [a] [b]"]


class Broken(PassThrough):
    def __init__(self, place: str) -> None:
        self.place = place

    async def before_tool(self, call: ToolCallPart) -> Decision:
        if self.place == "before_tool":
            raise RuntimeError("hook script not found")
        return Decision.proceed()

    async def after_turn(self, result: AgentResult) -> None:
        if self.place == "after_turn":
            raise RuntimeError("hook script not found")


@pytest.mark.parametrize(
    ("place", "line"),
    [
        ("before_tool", "interceptor Broken failed in before_tool (Bash): hook script not found"),
        ("after_turn", "interceptor Broken failed in after_turn: hook script not found"),
    ],
)
async def test_an_interceptor_that_raises_ends_the_run_with_one_error_line(
    llm: FakeLLM, tmp_path: Path, place: str, line: str
) -> None:
    llm.script(
        Reply(calls=[Call("Bash", {"command": "touch made.txt"}), Call("shout", {"text": "hi"})]),
        Reply(text="ok"),
    )
    loop, events = await run(llm, tmp_path, Broken(place))
    assert [e.message for e in events if isinstance(e, ev.ErrorEvent)] == [line]
    assert isinstance(events[-1], ev.DoneEvent)
    assert loop.result is not None and loop.result.stop_reason == "error" and loop.result.error == line
    calls = [p for m in loop.result.messages for p in m.parts if isinstance(p, ToolCallPart)]
    answered = [r for m in loop.result.messages for r in m.tool_results]
    assert {r.call_id for r in answered} == {c.id for c in calls} and len(calls) == 2
    if place == "before_tool":  # nothing ran, nothing more was asked
        assert not (tmp_path / "made.txt").exists() and len(llm.requests) == 1
        assert all(r.output.startswith("Not run: interceptor Broken failed") for r in answered)
    else:
        assert len(llm.requests) == 2 and tool_messages(llm, 1)[1] == "HI"


def test_the_loop_and_the_workflow_are_runs(tmp_path: Path) -> None:
    """Both are driven alike (``etcode.wiring.runs.start_run`` returns either as a ``Run``)."""
    from etcode.engine.run import Run
    from etcode.workflow.engine import WorkflowLimits, WorkflowRun
    from etcode.workflow.prompts import PromptManager
    from tests.scripted import ScriptedProvider

    settings = LoopSettings(
        provider=ScriptedProvider(),
        model="m",
        system=["You are a test."],
        tools=ToolRegistry(),
        directory=tmp_path,
        worktree=tmp_path,
        session_id="ses_test",
    )
    loop: Run = AgentLoop(settings, [], Message.user("go"))
    flow: Run = WorkflowRun(settings, [], "go", limits=WorkflowLimits(), prompts=PromptManager(tmp_path))
    assert isinstance(loop, Run) and isinstance(flow, Run)
    assert not isinstance(settings, Run)
    assert loop.result is None and flow.result is None


async def test_the_workflow_calls_the_turn_hooks_once_and_the_tool_hooks_for_each_call(
    llm: FakeLLM, tmp_path: Path
) -> None:
    """The planner, executor and verifier turns are the workflow's own: an interceptor sees the
    user's turn once (its rewritten prompt is what the planner plans) and every tool call."""
    import json

    from etcode.workflow.engine import WorkflowLimits, WorkflowRun
    from etcode.workflow.prompts import PromptManager

    plan = {"summary": "p", "needsMorePlanning": False, "todos": [{"id": "1", "description": "shout"}]}
    verdict = {"allCompleted": True, "userNeedsSatisfied": True, "summary": "shouted", "tasks": []}
    llm.script(
        Reply(text=json.dumps(plan)),
        Reply(calls=[Call("shout", {"text": "hi"})]),
        Reply(text=json.dumps({"summary": "did it", "taskCompleted": True})),
        Reply(text=json.dumps(verdict)),
    )
    seen: list[str] = []
    provider = make_provider(llm.spec("openai"), RetryConfig(max_retries=0))
    settings = LoopSettings(
        provider=provider,
        model="fake-model",
        system=["You are a test."],
        tools=ToolRegistry([shout]),
        directory=tmp_path,
        worktree=tmp_path,
        session_id="ses_test",
        interceptors=(Journal("a", seen),),
    )
    flow = WorkflowRun(settings, [], "go", limits=WorkflowLimits(), prompts=PromptManager(tmp_path))
    try:
        events = [event async for event in flow.events()]
    finally:
        await provider.aclose()
    assert isinstance(events[-1], ev.DoneEvent) and flow.result is not None
    assert seen == [
        "a before_turn go",
        "a before_tool shout",
        "a after_tool HI",
        f"a after_turn end_turn {flow.result.text}",
    ]
    planner_request = json.dumps(llm.requests[0].body["messages"])
    assert "go [a]" in planner_request


# ---- the optional points (issue 28: hooks) ---------------------------------------------------
class KeepGoing(PassThrough):
    """``before_stop``: always asks for more (the loop caps it)."""

    def __init__(self) -> None:
        self.seen: list[bool] = []

    async def before_stop(self, active: bool) -> str | None:
        self.seen.append(active)
        return "check the tests once more"


async def test_before_stop_makes_the_model_go_on_three_times_at_most(llm: FakeLLM, tmp_path: Path) -> None:
    from etcode.engine.interception import MAX_STOP_CONTINUES

    llm.script(*(Reply(text=f"answer {n}") for n in range(6)))
    keep = KeepGoing()
    loop, _ = await run(llm, tmp_path, keep)
    assert len(llm.requests) == 1 + MAX_STOP_CONTINUES == 4
    assert keep.seen == [False, True, True]
    assert llm.requests[1].body["messages"][-1] == {"role": "user", "content": "check the tests once more"}
    assert loop.result is not None and loop.result.stop_reason == "end_turn"


class Refuse(PassThrough):
    async def before_turn(self, prompt: Message) -> Message:
        from etcode.engine.interception import StopRun

        raise StopRun("prompts are closed today")


async def test_stop_run_in_before_turn_ends_the_run_without_asking_the_model(
    llm: FakeLLM, tmp_path: Path
) -> None:
    loop, events = await run(llm, tmp_path, Refuse())
    assert llm.requests == []
    assert loop.result is not None and loop.result.stop_reason == "blocked" and loop.result.error is None
    assert [(e.reason, e.message) for e in events if isinstance(e, ev.StoppedEvent)] == [
        ("blocked", "prompts are closed today")
    ]
    assert loop.result.messages == []  # the refused prompt is not kept


class Answer(PassThrough):
    def __init__(self, answer: str) -> None:
        self.answer: Literal["allow", "ask"] = "allow" if answer == "allow" else "ask"

    async def before_tool(self, call: ToolCallPart) -> Decision:
        return Decision(permission=self.answer)


@pytest.mark.parametrize("answer", ["allow", "ask"])
async def test_a_permission_answer_in_advance_reaches_the_check_with_its_call(
    llm: FakeLLM, tmp_path: Path, answer: str
) -> None:
    seen: list[dict] = []

    async def check(permission: str, patterns: list[str], metadata: dict) -> None:
        seen.append(metadata)

    provider = make_provider(llm.spec("openai"), RetryConfig(max_retries=0))
    settings = LoopSettings(
        provider=provider, model="fake-model", system=["t"], tools=ToolRegistry([shout]),
        directory=tmp_path, worktree=tmp_path, session_id="ses_test",
        interceptors=(Answer(answer),), check_permission=check,
    )  # fmt: skip
    llm.script(Reply(calls=[Call("shout", {"text": "hi"}, id="c1")]), Reply(text="ok"))
    try:
        _ = [event async for event in AgentLoop(settings, [], Message.user("go")).events()]
    finally:
        await provider.aclose()
    assert seen and all(m["pre_answer"] == answer and m["call_id"] == "c1" for m in seen)
