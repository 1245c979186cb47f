"""The Planner → Executor → Verifier workflow, with scripted JSON answers from the fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from etcode import Agent
from etcode.contract import events as ev
from etcode.tools.base import Tool, ToolContext, ToolResult
from etcode.tools.registry import ToolRegistry
from etcode.workflow.cache import CACHED_NOTE, ToolCache, cached_registry
from etcode.workflow.engine import WorkflowLimits
from etcode.workflow.jsonparse import JsonAnswerError, parse_object, parse_partial
from etcode.workflow.models import ExecutorReport, Plan
from etcode.workflow.prompts import PromptManager
from etcode.workflow.steps import is_step
from tests.fake_llm import Call, FakeLLM, Recorded, Reply
from tests.tool_support import make_ctx


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def plan(*todos: tuple[str, str, str], more: bool = False, summary: str = "The plan") -> Reply:
    items = [{"id": i, "description": d, "priority": p, "status": "pending"} for i, d, p in todos]
    body = {"summary": summary, "needsMorePlanning": more, "todos": items}
    return Reply(text=f"```json\n{json.dumps(body, indent=2)}\n```", chunk_size=7)


def report(summary: str, completed: bool | None = True, action: str | None = None, **extra: Any) -> Reply:
    body: dict[str, Any] = {"summary": summary, **extra}
    if completed is not None:
        body["taskCompleted"] = completed
    if action is not None:
        body["nextAction"] = action
    return Reply(text=json.dumps(body))


def verdict(ok: bool, summary: str = "", improvements: list[str] | None = None, feedback: str = "") -> Reply:
    body = {
        "allCompleted": ok,
        "userNeedsSatisfied": ok,
        "overallFeedback": feedback or ("Looks good." if ok else "Not done."),
        "summary": summary,
        "improvements": improvements or [],
        "tasks": [{"id": "1", "completed": ok, "feedback": "checked"}],
    }
    return Reply(text=json.dumps(body) + "\nHope this helps!")


def role_of(request: Recorded) -> str:
    system = request.body["messages"][0]["content"]
    for role in ("Planner", "Executor", "Verifier"):
        if system.startswith(f"You are the {role}"):
            return role.lower()
    return "?"


async def run_workflow(llm: FakeLLM, directory: Path, task: str, **state: Any) -> tuple[Any, list[ev.Event]]:
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", agent="workflow", directory=directory)
    agent.state.update(state)
    events = [event async for event in agent.stream(task)]
    await agent.aclose()
    return agent.last_result, events


# ---- units ------------------------------------------------------------------------------------


def test_parse_object_of_a_hostile_nesting_is_an_answer_error_not_a_crash() -> None:
    deep = '{"plan": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(JsonAnswerError, match="nested too deeply"):
        parse_object(deep)
    assert parse_partial(deep[:12000]) is None


def test_parse_object_tolerates_fences_prose_and_trailing_commas() -> None:
    assert parse_object('Here:\n```json\n{"a": [1, 2,],}\n```\nDone.') == {"a": [1, 2]}
    assert parse_object('Sure. {"x": {"y": "}"}} and then {"z": 1}') == {"x": {"y": "}"}}
    with pytest.raises(JsonAnswerError, match="no JSON object"):
        parse_object("I could not do it.")
    with pytest.raises(JsonAnswerError, match="not valid"):
        parse_object('{"a": 1,, }')


def test_parse_partial_grows_with_the_stream() -> None:
    text = '```json\n{"summary": "Do it", "todos": [{"id": "1", "description": "Read the \\"code\\""}, {"id": "2"'
    seen = [parse_partial(text[:n]) for n in range(len(text) + 1)]
    assert seen[0] is None and {"summary": "Do"} in seen
    assert seen[-1] == {
        "summary": "Do it",
        "todos": [{"id": "1", "description": 'Read the "code"'}, {"id": "2"}],
    }
    assert all(value is None or isinstance(value, dict) for value in seen)


def test_parse_partial_takes_what_models_send_and_refuses_what_is_not_a_plan() -> None:
    assert parse_partial('{"todos": [{"id": "1"},], "more": tr') == {"todos": [{"id": "1"}]}  # trailing comma
    assert parse_partial('Here it is: {"summary": "x"} and that is all.') == {"summary": "x"}
    assert parse_partial('{"a": ' * 100_000) is None  # nested absurdly deep
    assert parse_partial('["not", "an object"]') is None and parse_partial("no JSON yet") is None


def test_executor_completion_precedence() -> None:
    assert (
        ExecutorReport.from_dict({"taskCompleted": False, "nextAction": "complete"}).completed("1") is False
    )
    assert ExecutorReport.from_dict({"nextAction": "complete"}).completed("1") is True
    assert ExecutorReport.from_dict({"nextAction": "continue"}).completed("1") is False
    done = {"todos": [{"id": 1, "status": "completed"}]}
    assert ExecutorReport.from_dict(done).completed("1") is True
    assert ExecutorReport.from_dict({"summary": "?"}).completed("1") is False


def test_plan_needs_todos_and_sorts_by_priority() -> None:
    with pytest.raises(ValueError, match="todos"):
        Plan.from_dict({"summary": "x"})
    parsed = Plan.from_dict(
        {"todos": [{"description": "c", "priority": "low"}, {"description": "a", "priority": 1}, "b"]}
    )
    assert [t.description for t in sorted(parsed.todos, key=lambda t: t.rank)] == ["a", "b", "c"]
    assert [t.id for t in parsed.todos] == ["1", "2", "3"]


def test_prompt_manager_business_context(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".etcode" / "prompts").mkdir(parents=True)
    (root / ".etcode" / "prompts" / "planner.md").write_text("We ship on Fridays.\n", encoding="utf-8")
    sub = root / "pkg"
    sub.mkdir()
    manager = PromptManager(sub, root, {"planner": "ignored", "verifier": "Check the changelog."})
    assert manager.get("planner").rstrip().endswith("We ship on Fridays.")
    assert manager.source("planner") == str(root / ".etcode" / "prompts" / "planner.md")
    assert manager.get("verifier").rstrip().endswith("Check the changelog.")
    assert "{{businessContext}}" not in manager.get("executor") and "(none given)" in manager.get("executor")
    manager.set_business_context("executor", "Use tabs.")
    assert manager.get("executor").rstrip().endswith("Use tabs.")
    manager.override("verifier", "Custom verifier. Context: {{businessContext}}")
    assert manager.get("verifier") == "Custom verifier. Context: Check the changelog.\n"
    with pytest.raises(ValueError, match="unknown workflow role"):
        manager.get("critic")


class Counting(Tool):
    def __init__(self, name: str, read_only: bool) -> None:
        self._name, self._ro, self.calls = name, read_only, 0

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    @property
    def is_read_only(self) -> bool:  # type: ignore[override]
        return self._ro

    def parse(self, arguments: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        return arguments

    async def run(self, params: Any, ctx: ToolContext) -> ToolResult:
        self.calls += 1
        return ToolResult(f"{self._name} #{self.calls}")


async def test_read_only_cache_until_a_write() -> None:
    read, write = Counting("Read", True), Counting("Write", False)
    tools = cached_registry(ToolRegistry([read, write]), ToolCache())
    ctx = make_ctx(Path("."))

    async def call(name: str, args: dict[str, Any]) -> str:
        item = tools.get(name)
        assert item is not None
        return (await item.run(item.parse(args), ctx)).output

    assert await call("Read", {"p": 1}) == "Read #1"
    assert await call("Read", {"p": 1}) == f"Read #1\n\n{CACHED_NOTE}"
    assert await call("Read", {"p": 2}) == "Read #2"
    assert await call("Write", {"p": 1}) == "Write #1"
    assert await call("Read", {"p": 1}) == "Read #3"
    assert read.calls == 3


# ---- end to end over HTTP ---------------------------------------------------------------------


async def test_happy_path(llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the number is 7\n", encoding="utf-8")
    llm.script(
        plan(("2", "Write answer.txt", "low"), ("1", "Read notes.txt", "high")),
        Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        report("notes.txt says 7", action="complete"),
        Reply(
            calls=[
                Call("ReadFile", {"file_path": "notes.txt"}),
                Call("WriteFile", {"file_path": "answer.txt", "content": "7\n"}),
            ]
        ),
        Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        report("wrote answer.txt", completed=True),
        verdict(True, summary="answer.txt now holds 7."),
    )
    result, events = await run_workflow(llm, tmp_path, "put the number in answer.txt")
    assert result.text == "answer.txt now holds 7." and result.stop_reason == "end_turn"
    assert (tmp_path / "answer.txt").read_text(encoding="utf-8") == "7\n"
    assert [role_of(r) for r in llm.requests] == ["planner"] + ["executor"] * 5 + ["verifier"]
    assert "tools" not in llm.requests[0].body and "tools" not in llm.requests[-1].body
    executor_tools = {t["function"]["name"] for t in llm.requests[1].body["tools"]}
    assert "ReadFile" in executor_tools and "TodoWrite" not in executor_tools
    # Priority order: todo 1 (high) ran first.
    phases = [(e.phase, e.todo_id) for e in events if isinstance(e, ev.WorkflowPhase)]
    assert phases == [
        ("planning", None),
        ("planned", None),
        ("executing", "1"),
        ("executed", "1"),
        ("executing", "2"),
        ("executed", "2"),
        ("verifying", None),
        ("verified", None),
        ("finished", None),
    ]
    # The plan streamed in as todo updates before the planner finished.
    updates = [e.todos for e in events if isinstance(e, ev.TodoUpdate)]
    first_full = next(
        i for i, u in enumerate(updates) if len(u) == 2 and u[1]["description"] == "Read notes.txt"
    )
    partial = updates[:first_full]  # before it: the first todo alone, its text growing
    assert partial and all(
        len(u) <= 1 and all(t["id"] == "2" and "Write answer.txt".startswith(t["description"]) for t in u)
        for u in partial
    )
    assert any(len(u) == 1 for u in partial)
    assert updates[-1][0]["status"] == "completed" and updates[-1][1]["status"] == "completed"
    assert {t["id"] for t in result.todos} == {"1", "2"}
    # Identical read-only calls: the repeat before the write and the one after it.
    tool_results = [e for e in events if isinstance(e, ev.ToolResultEvent) and e.name == "ReadFile"]
    assert [CACHED_NOTE in e.output for e in tool_results] == [False, True, False]
    assert any(isinstance(e, ev.RoleTextDelta) and e.role == "planner" for e in events)
    verification = next(e for e in events if isinstance(e, ev.VerificationResult))
    assert verification.all_completed and verification.user_needs_satisfied
    texts = [e.text for e in events if isinstance(e, ev.TextDeltaEvent)]
    assert texts == ["answer.txt now holds 7."]
    assert isinstance(events[-1], ev.DoneEvent) and events[-1].result["result"] == "answer.txt now holds 7."


async def test_improvements_start_a_new_cycle(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(
        plan(("1", "Do the thing", "high")),
        report("did half of it", completed=True),
        verdict(False, improvements=["Also update the README"], feedback="README missing."),
        plan(("1", "Update the README", "high"), summary="Fix what is missing"),
        report("README updated", completed=True),
        verdict(True, summary="Thing done and README updated."),
    )
    result, events = await run_workflow(llm, tmp_path, "do the thing")
    assert result.text == "Thing done and README updated."
    second_planner = llm.requests[3]
    assert role_of(second_planner) == "planner"
    request_text = second_planner.body["messages"][-1]["content"]
    assert "cycle 2 of 3" in request_text and "Also update the README" in request_text
    assert "did half of it" in request_text
    cycles = [e.cycle for e in events if isinstance(e, ev.VerificationResult)]
    assert cycles == [1, 2]


async def test_three_unsatisfied_cycles_give_the_best_result_with_a_note(
    llm: FakeLLM, tmp_path: Path
) -> None:
    for _ in range(3):
        llm.script(
            plan(("1", "Try", "high")),
            report("tried", completed=True),
            verdict(False, improvements=["Try harder"], feedback="Still failing."),
        )
    result, _ = await run_workflow(llm, tmp_path, "impossible")
    assert result.stop_reason == "end_turn" and llm.remaining == 0
    assert "Note: after 3 plan → execute → verify cycles the verifier is still not satisfied" in result.text
    assert "Still failing." in result.text and "- still to do: Try harder" in result.text


async def test_executor_round_limit(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(plan(("1", "Endless", "high"), ("2", "Next", "low")))
    llm.script(*[report(f"still working {n}", completed=False, action="continue") for n in range(1, 4)])
    llm.script(report("done", completed=True), verdict(True, summary="ok"))
    limits = WorkflowLimits(executor_rounds=3)
    result, events = await run_workflow(llm, tmp_path, "loop", workflow_limits=limits)
    roles = [role_of(r) for r in llm.requests]
    assert roles == ["planner", "executor", "executor", "executor", "executor", "verifier"]
    continued = llm.requests[2].body["messages"][-1]["content"]
    assert "Continue on todo [1]" in continued and "round 2 of 3" in continued
    executed = [e.message for e in events if isinstance(e, ev.WorkflowPhase) and e.phase == "executed"]
    assert executed[0].startswith("round_limit") and executed[1].startswith("completed")
    verifier_request = llm.requests[-1].body["messages"][-1]["content"]
    assert "(stopped: no completion after 3 rounds)" in verifier_request
    assert result.text == "ok"


async def test_default_executor_limit_is_ten_rounds(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(plan(("1", "Endless", "high")))
    llm.script(*[report("more", completed=False, action="retry") for _ in range(10)])
    llm.script(verdict(True, summary="gave up politely"))
    result, _ = await run_workflow(llm, tmp_path, "loop")
    assert [role_of(r) for r in llm.requests].count("executor") == 10
    assert "Try again with a different approach" in llm.requests[2].body["messages"][-1]["content"]
    assert result.text == "gave up politely"


async def test_bad_json_is_retried_once_then_taken_as_prose(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(
        Reply(text="I think we should just do it."),  # planner: not JSON
        Reply(text="Plan: do it. Still no JSON."),  # planner retry: prose → one todo
        Reply(text='{"summary": "done", "taskCompleted": tru'),  # executor: broken JSON
        report("done after retry", completed=True),  # executor retry
        Reply(text="Everything looks fine to me."),  # verifier: prose
        Reply(text="Really, all fine."),  # verifier retry: prose → trusts the executor
    )
    result, events = await run_workflow(llm, tmp_path, "fix the bug in parser.py")
    retry = llm.requests[1].body["messages"][-1]["content"]
    assert retry.startswith("Your last answer could not be used: the answer contains no JSON object")
    executor_retry = llm.requests[3].body["messages"][-1]["content"]
    assert "could not be used: the JSON object is not valid" in executor_retry
    updates = [e.todos for e in events if isinstance(e, ev.TodoUpdate)]
    assert updates[0] == [
        {
            "id": "1",
            "content": "fix the bug in parser.py",
            "description": "fix the bug in parser.py",
            "priority": "high",
            "status": "pending",
        }
    ]
    assert result.text == "Really, all fine." and result.stop_reason == "end_turn"


async def test_needs_more_planning_asks_the_planner_again(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(
        plan(("1", "Rough", "high"), more=True),
        plan(("1", "Refined", "high")),
        report("ok", completed=True),
        verdict(True, summary="fine"),
    )
    result, _ = await run_workflow(llm, tmp_path, "x")
    assert [role_of(r) for r in llm.requests[:2]] == ["planner", "planner"]
    assert "planning round 2 of 3" in llm.requests[1].body["messages"][-1]["content"]
    assert result.todos[0]["description"] == "Refined"


def test_cli_json_format_ends_with_the_result_line(llm: FakeLLM, tmp_path: Path) -> None:
    config = {
        "model": "fake/m",
        "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url}],
    }
    (tmp_path / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    llm.script(plan(("1", "Say hi", "high")), report("said hi"), verdict(True, summary="Hi!"))
    proc = subprocess.run(
        [sys.executable, "-m", "etcode", "run", "--agent", "workflow", "--format", "json", "greet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FAKE_API_KEY": "k"},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "Hi!" and not lines[-1]["is_error"]
    assert lines[-1]["todos"][0]["status"] == "completed"
    types = {line["type"] for line in lines}
    assert {"workflow_phase", "role_text_delta", "todo_update", "verification_result"} <= types
    text = subprocess.run(
        [sys.executable, "-m", "etcode", "run", "--agent", "workflow", "greet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert text.returncode == 1  # nothing scripted any more: a provider error, one clean line
    assert "Traceback" not in text.stderr and "◆ Planning (cycle 1 of 3)" in text.stderr


async def test_follow_up_requests_see_the_earlier_turns(llm: FakeLLM, tmp_path: Path) -> None:
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", agent="workflow", directory=tmp_path)
    llm.script(
        plan(("1", "Add a flag", "high")), report("added --json"), verdict(True, summary="Added --json.")
    )
    first = await agent.run("add a --json flag")
    llm.script(plan(("1", "Document it", "high")), report("documented"), verdict(True, summary="Documented."))
    second = await agent.run("now document it")
    await agent.aclose()
    assert first.text == "Added --json." and second.text == "Documented."
    planner = llm.requests[3].body["messages"][-1]["content"]
    assert planner.startswith("You are powered by the model named m.")  # the environment block first
    planner = planner.split("</env>\n\n", 1)[1]
    assert planner.startswith(
        "Earlier in this conversation:\nuser: add a --json flag\n\nassistant: Added --json."
    )
    # The history holds each turn's finished role steps between the request and the answer;
    # the digest of a finished turn leaves them out.
    assert [m.text.partition("]")[0] if is_step(m) else m.text for m in agent.history] == [
        "add a --json flag",
        "[workflow planner",
        "[workflow executor",
        "[workflow verifier",
        "Added --json.",
        "now document it",
        "[workflow planner",
        "[workflow executor",
        "[workflow verifier",
        "Documented.",
    ]


async def test_interrupt_stops_the_workflow(llm: FakeLLM, tmp_path: Path) -> None:
    slow = plan(("1", "Slow", "high"))
    slow.delay = 0.05
    llm.script(slow)
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", agent="workflow", directory=tmp_path)
    events = []
    async for event in agent.stream("x"):
        events.append(event)
        if isinstance(event, ev.RoleTextDelta):
            agent.interrupt()
    await agent.aclose()
    assert agent.last_result is not None and agent.last_result.stop_reason == "interrupted"
    assert any(isinstance(e, ev.StoppedEvent) and e.reason == "interrupted" for e in events)
    assert len(llm.requests) == 1


async def test_the_token_budget_is_the_whole_workflows(llm: FakeLLM, tmp_path: Path) -> None:
    """``LoopLimits.max_tokens`` counts every role's answers: spent by the planner and the
    executor together, the workflow stops before the next turn with ``token_limit``."""
    import dataclasses

    from etcode import LoopLimits

    llm.script(
        dataclasses.replace(plan(("1", "Write it", "high"), ("2", "Check it", "low")), usage=(10, 60)),
        dataclasses.replace(report("wrote it", completed=True), usage=(10, 60)),
        report("checked", completed=True),
        verdict(True, summary="never reached"),
    )
    agent = Agent(
        "fake/m", base_url=llm.openai_base_url, api_key="k", agent="workflow", directory=tmp_path,
        limits=LoopLimits(max_tokens=100),
    )  # fmt: skip
    events = [event async for event in agent.stream("write and check")]
    await agent.aclose()
    result = agent.last_result
    assert result is not None and (result.stop_reason, result.is_error) == ("token_limit", True)
    assert result.counted_output_tokens == 120  # what the budget counted, the roles' together
    assert [role_of(r) for r in llm.requests] == ["planner", "executor"]
    stopped = [e for e in events if isinstance(e, ev.StoppedEvent)]
    assert [e.reason for e in stopped] == ["token_limit"] and "max_tokens 100" in stopped[0].message
