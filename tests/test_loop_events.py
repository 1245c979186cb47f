"""Step-level events (the agent-loop design's ``Event``/``EventType``) derived from etcode's
stream, and their plain-text :class:`Renderer`. Converter tests over hand-built native
events; an end-to-end run of a real Agent against the fake LLM server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from etcode import Agent, tool
from etcode.contract import events as ev
from etcode.contract.events import EventType, LoopEvent
from etcode.contract.results import AgentResult
from etcode.engine.step_events import loop_events
from etcode.ui.loop_renderer import Renderer
from tests.fake_llm import Call, FakeLLM, Reply

T = EventType


async def _native(events: Iterable[ev.Event]) -> AsyncIterator[ev.Event]:
    for event in events:
        yield event


async def convert(events: Iterable[ev.Event], task: str = "the task") -> list[LoopEvent]:
    return [event async for event in loop_events(_native(events), task)]


def start() -> ev.SessionStart:
    return ev.SessionStart("ses_1", "openai/m", "build", "/p")


def done(text: str = "", **fields: object) -> ev.DoneEvent:
    result = AgentResult(text=text, steps=int(str(fields.pop("steps", 1))), **fields)  # type: ignore[arg-type]
    return ev.DoneEvent(result.to_dict())


def call(call_id: str, name: str = "Read", **params: object) -> ev.ToolCallStart:
    return ev.ToolCallStart(call_id, name, dict(params), f"{name.lower()} summary")


def result(
    call_id: str, name: str = "Read", output: str = "out", is_error: bool = False
) -> ev.ToolResultEvent:
    return ev.ToolResultEvent(call_id, name, is_error, f"{name} result", output)


def finish(step: int) -> ev.StepFinish:
    return ev.StepFinish(step, {}, "end_turn")


# ---- the converter -----------------------------------------------------------------


async def test_a_run_becomes_start_thought_action_observation_end() -> None:
    out = await convert(
        [
            start(),
            ev.StepStart(1),
            ev.TextDeltaEvent("Let me "),
            ev.TextDeltaEvent("look."),
            call("c1", file_path="a.txt"),
            result("c1", output="hello"),
            finish(1),
            ev.UsageUpdate(10, None, None, 5, 5, None),
            ev.StepStart(2),
            ev.TextDeltaEvent("It says "),
            ev.TextDeltaEvent("hello."),
            finish(2),
            done("It says hello.", steps=2),
        ]
    )
    assert [e.type for e in out] == [T.LOOP_START, T.THOUGHT, T.ACTION, T.OBSERVATION, T.THOUGHT, T.LOOP_END]
    assert [e.step for e in out] == [0, 1, 1, 1, 2, 2]
    assert out[0].data["task"] == "the task" and out[0].data["session_id"] == "ses_1"
    assert out[1].data == {"content": "Let me look."}
    assert out[2].data == {
        "tool": "Read",
        "args": {"file_path": "a.txt"},
        "summary": "read summary",
        "call_id": "c1",
    }
    assert out[3].data["tool"] == "Read" and out[3].data["result"] == "hello"
    assert out[3].data["summary"] == "Read result" and out[3].data["is_error"] is False
    assert out[4].data["content"] == "It says hello."


async def test_text_is_flushed_before_each_action_and_whitespace_is_dropped() -> None:
    out = await convert(
        [
            start(),
            ev.StepStart(1),
            ev.TextDeltaEvent("\n  "),
            call("c1"),
            ev.TextDeltaEvent("between"),
            call("c2"),
            result("c1"),
            result("c2"),
            finish(1),
            done(),
        ]
    )
    assert [e.type for e in out] == [
        T.LOOP_START,
        T.ACTION,
        T.THOUGHT,
        T.ACTION,
        T.OBSERVATION,
        T.OBSERVATION,
        T.LOOP_END,
    ]
    assert out[2].data["content"] == "between"


async def test_dropped_events_neither_appear_nor_split_a_thought() -> None:
    out = await convert(
        [
            start(),
            ev.StepStart(1),
            ev.TextDeltaEvent("one "),
            ev.ReasoningDeltaEvent("hmm"),
            ev.UsageUpdate(1, None, None, 1, 1, None),
            ev.ToolProgress("c0", "Bash", "x", 0.1),
            ev.SubagentEvent("c0", "general", "ses_2", {"type": "text_delta", "text": "sub"}),
            ev.WorkflowPhase("planning", 1),
            ev.CompactionEvent("auto", "start"),
            ev.TextDeltaEvent("thought"),
            finish(1),
            done("one thought"),
        ]
    )
    # the thinking, even in the middle of the text, is the step's one REASONING before its THOUGHT
    assert [e.type for e in out] == [T.LOOP_START, T.REASONING, T.THOUGHT, T.LOOP_END]
    assert (out[1].data["content"], out[2].data["content"]) == ("hmm", "one thought")


async def test_each_steps_thinking_is_one_reasoning_before_its_actions() -> None:
    native = [
        start(),
        ev.StepStart(1),
        ev.ReasoningDeltaEvent("Look "),
        ev.ReasoningDeltaEvent("first."),
        call("a", "Read"),
        result("a", "Read"),
        finish(1),
        ev.StepStart(2),
        ev.ReasoningDeltaEvent("  \n"),  # whitespace only: dropped
        ev.TextDeltaEvent("done"),
        finish(2),
        ev.StepStart(3),
        ev.ReasoningDeltaEvent("cut short"),  # a stream that ends here keeps it
    ]
    out = await convert(native)
    assert [(e.type, e.step) for e in out] == [
        (T.LOOP_START, 0),
        (T.REASONING, 1),
        (T.ACTION, 1),
        (T.OBSERVATION, 1),
        (T.THOUGHT, 2),
        (T.REASONING, 3),
    ]
    assert [e.data["content"] for e in out if e.type == T.REASONING] == ["Look first.", "cut short"]
    quiet = [event async for event in loop_events(_native(native), "t", reasoning=False)]
    assert T.REASONING not in [e.type for e in quiet] and len(quiet) == 4


async def test_durations_are_non_negative_and_matched_by_call_id() -> None:
    out = await convert(
        [
            start(),
            ev.StepStart(1),
            call("a", "Read"),
            call("b", "Grep"),
            result("b", "Grep"),
            result("a", "Read"),
            result("orphan", "Glob"),
            finish(1),
            done(),
        ]
    )
    observations = [e for e in out if e.type == T.OBSERVATION]
    assert [(o.data["tool"], o.data["call_id"]) for o in observations] == [
        ("Grep", "b"),
        ("Read", "a"),
        ("Glob", "orphan"),
    ]
    assert all(isinstance(o.data["duration"], float) and o.data["duration"] >= 0 for o in observations)
    assert observations[2].data["duration"] == 0.0


async def test_errors_warnings_and_retries_become_error_events() -> None:
    out = await convert(
        [
            start(),
            ev.WarningEvent("no tools here"),
            ev.StepStart(1),
            ev.RetryEvent(1, 2.0, "503 overloaded"),
            ev.TextDeltaEvent("partial"),
            ev.ErrorEvent("the server refused", kind="auth"),
            done(stop_reason="error", error="the server refused"),
        ]
    )
    assert [e.type for e in out] == [T.LOOP_START, T.ERROR, T.ERROR, T.THOUGHT, T.ERROR, T.LOOP_END]
    warning, retry, fatal = out[1].data, out[2].data, out[4].data
    assert warning == {"error": "no tools here", "fatal": False, "kind": "warning"}
    assert retry["fatal"] is False and retry["kind"] == "retry" and retry["attempt"] == 1
    assert retry["error"] == "retrying in 2.0s (attempt 1): 503 overloaded"
    assert fatal == {"error": "the server refused", "fatal": True, "kind": "auth"}
    assert out[3].data["content"] == "partial"  # the text came before the error
    assert out[5].data["stop_reason"] == "error" and out[5].data["error"] == "the server refused"


async def test_done_becomes_loop_end_with_the_result() -> None:
    todos = [{"content": "a", "status": "completed"}]
    out = await convert([start(), ev.StepStart(1), finish(1), done("final", steps=1, todos=todos)])
    end = out[-1]
    assert end.type == T.LOOP_END and end.step == 1
    assert end.data["stop_reason"] == "end_turn"
    assert end.data["content"] == "final"
    assert end.data["messages"] == []
    assert end.data["steps"] == 1 and end.data["todos"] == todos
    assert set(end.data["usage"]) >= {"input_tokens", "output_tokens"}
    assert end.data["stop_message"] == ""


async def test_a_stop_is_not_a_soft_limit_but_rides_on_loop_end() -> None:
    message = "Stopped after 3 steps (limit: max steps)."
    out = await convert(
        [start(), ev.StoppedEvent("max_steps", message), done(stop_reason="max_steps", steps=3)]
    )
    assert [e.type for e in out] == [T.LOOP_START, T.LOOP_END]
    assert out[1].data["stop_reason"] == "max_steps" and out[1].data["stop_message"] == message


async def test_todo_updates_and_workflow_role_text() -> None:
    plan = [{"id": "1", "content": "Do it", "description": "Do it", "status": "pending"}]
    out = await convert(
        [
            start(),
            ev.StepStart(1),
            ev.RoleTextDelta("planner", '{"todos": '),
            ev.RoleTextDelta("planner", "[...]}"),
            ev.TodoUpdate(plan),
            finish(1),
            ev.StepStart(1),  # the executor's own loop counts from 1 again
            ev.RoleTextDelta("executor", "working"),
            ev.RoleTextDelta("verifier", "{}"),
            finish(1),
            ev.TextDeltaEvent("All done."),
            done("All done.", steps=2),
        ]
    )
    kinds = [(e.type, e.step, e.data.get("role")) for e in out]
    assert kinds == [
        (T.LOOP_START, 0, None),
        (T.THOUGHT, 1, "planner"),
        (T.TODO_UPDATE, 1, None),
        (T.THOUGHT, 2, "executor"),
        (T.THOUGHT, 2, "verifier"),
        (T.THOUGHT, 2, None),
        (T.LOOP_END, 2, None),
    ]
    assert out[1].data["content"] == '{"todos": [...]}'
    assert out[2].data == {"todos": plan}
    assert out[5].data == {"content": "All done."}


async def test_text_of_a_stream_cut_short_is_not_lost() -> None:
    out = await convert([start(), ev.StepStart(1), ev.TextDeltaEvent("half")])
    assert [e.type for e in out] == [T.LOOP_START, T.THOUGHT]


def test_event_type_and_loop_event_match_the_design() -> None:
    from etcode.tools.todo import TODO_UPDATE

    assert EventType.TODO_UPDATE == "todo_update" == TODO_UPDATE
    assert [t.value for t in EventType] == [
        "loop_start",
        "thought",
        "action",
        "observation",
        "soft_limit",
        "error",
        "loop_end",
        "todo_update",
        "reasoning",
    ]
    event = LoopEvent.observation(3, "search", "found", 0.5, summary="1 hit")
    assert event.to_dict() == {
        "type": "observation",
        "step": 3,
        "data": {"summary": "1 hit", "tool": "search", "result": "found", "duration": 0.5},
        "timestamp": event.timestamp,
    }
    assert LoopEvent.thought(1, "hi").data == {"content": "hi"}
    assert LoopEvent.action(1, "t", {"a": 1}).data == {"tool": "t", "args": {"a": 1}}
    assert LoopEvent.error(1, "bad").data == {"error": "bad", "fatal": False}
    assert LoopEvent.loop_start("x").step == 0
    assert LoopEvent.loop_end(2, "end_turn").data == {
        "stop_reason": "end_turn",
        "content": "",
        "messages": [],
    }
    assert LoopEvent.soft_limit(2, "step_limit", "p").data == {"reason": "step_limit", "prompt": "p"}
    assert LoopEvent.todo_update(2, []).type == "todo_update"


# ---- end to end ------------------------------------------------------------------------


async def test_a_real_agent_run_in_step_events(llm: FakeLLM, project: Path) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    llm.script(Reply(text="Adding them.", calls=[Call("add", {"a": 2, "b": 3})]), Reply(text="It is 5."))
    agent = Agent(
        "openai/test-model",
        api_key="k",
        base_url=llm.openai_base_url,
        directory=project,
        store=False,
        builtin_tools=False,
        tools=[add],
    )
    try:
        out = [e async for e in loop_events(agent.stream("2+3?"), "2+3?")]
    finally:
        await agent.aclose()
    assert [(e.type, e.step) for e in out] == [
        (T.LOOP_START, 0),
        (T.THOUGHT, 1),
        (T.ACTION, 1),
        (T.OBSERVATION, 1),
        (T.THOUGHT, 2),
        (T.LOOP_END, 2),
    ]
    assert out[0].data["task"] == "2+3?"
    assert out[1].data["content"] == "Adding them."
    assert out[2].data["tool"] == "add" and out[2].data["args"] == {"a": 2, "b": 3}
    assert out[3].data["tool"] == "add" and out[3].data["result"] == "5" and out[3].data["duration"] >= 0
    assert out[3].data["call_id"] == out[2].data["call_id"]
    assert out[4].data["content"] == "It is 5."
    end = out[5].data
    assert end["stop_reason"] == "end_turn" and end["content"] == "It is 5." and end["steps"] == 2
    assert [line for e in out if (line := Renderer().render(e))] == [
        "task: 2+3?",
        "Adding them.",
        "● add (a=2, b=3)",
        "  └ 5",
        "It is 5.",
        "end (end_turn, 2 steps)",
    ]


async def test_a_real_todo_write_gives_a_todo_update(llm: FakeLLM, project: Path) -> None:
    todos = [{"content": "Write it", "status": "in_progress", "activeForm": "Writing it"}]
    llm.script(Reply(calls=[Call("TodoWrite", {"todos": todos})]), Reply(text="planned"))
    agent = Agent(
        "openai/test-model",
        api_key="k",
        base_url=llm.openai_base_url,
        directory=project,
        store=False,
        builtin_tools=False,
    )
    try:
        out = [e async for e in loop_events(agent.stream("plan"), "plan")]
    finally:
        await agent.aclose()
    assert [e.type for e in out] == [
        T.LOOP_START,
        T.ACTION,
        T.TODO_UPDATE,
        T.OBSERVATION,
        T.THOUGHT,
        T.LOOP_END,
    ]
    assert out[2].data["todos"] == todos
    assert out[-1].data["todos"] == todos
    assert Renderer().render(out[2]) == "[~] Write it (Writing it)\n[0/1 completed]"


# ---- the renderer ----------------------------------------------------------------------


def test_default_lines_follow_etcodes_display() -> None:
    r = Renderer()
    assert r.render(LoopEvent.loop_start("fix the bug\nplease")) == "task: fix the bug"
    assert r.render(LoopEvent.thought(1, "  I will read it.\n")) == "I will read it."
    assert r.render(LoopEvent.action(1, "Read", {"file_path": "a.py"}, summary="a.py")) == "● Read (a.py)"
    assert r.render(LoopEvent.action(1, "add", {"a": 1, "b": "x"})) == "● add (a=1, b='x')"
    assert r.render(LoopEvent.action(1, "now", {})) == "● now"
    assert (
        r.render(LoopEvent.observation(1, "Read", "...", 0.1, summary="Read 3 lines")) == "  └ Read 3 lines"
    )
    assert r.render(LoopEvent.observation(1, "add", "5\nmore", 0.1)) == "  └ 5"
    failed = LoopEvent.observation(
        1, "Read", "Error: no such file", 0.1, summary="no such file", is_error=True
    )
    assert r.render(failed) == "  └ ⚠ error: no such file"
    assert r.render(LoopEvent.error(1, "boom", fatal=True)) == "error: boom"
    assert r.render(LoopEvent.error(1, "slow", fatal=False)) == "warning: slow"
    todos = [
        {"content": "a", "status": "completed"},
        {"content": "b", "status": "in_progress", "activeForm": "Doing b"},
        {"content": "c", "status": "pending"},
    ]
    assert r.render(LoopEvent.todo_update(1, todos)) == "[x] a\n[~] b (Doing b)\n[ ] c\n[1/3 completed]"
    assert r.render(LoopEvent.todo_update(1, [])) == "(the todo list is empty)"
    end = LoopEvent.loop_end(
        1, "max_steps", steps=1, stop_message="Stopped after 1 steps (limit: max steps)."
    )
    assert r.render(end) == "end (max_steps, 1 step): Stopped after 1 steps (limit: max steps)."
    assert r.render(LoopEvent.soft_limit(1, "step_limit", "hurry")) == (
        "warning: soft step limit (step_limit): the model was asked to wrap up"
    )


def test_a_tool_rule_beats_an_event_rule_beats_the_default() -> None:
    r = Renderer()

    @r.on_event(EventType.ACTION)
    def any_action(event: LoopEvent) -> str:
        return f"action {event.data['tool']}"

    @r.on_tool("search")
    def search(event: LoopEvent) -> str:
        return f"search {event.type.value}"

    assert r.render(LoopEvent.action(1, "search", {"query": "x"})) == "search action"
    assert r.render(LoopEvent.observation(1, "search", "r", 0.0)) == "search observation"
    assert r.render(LoopEvent.action(1, "Read", {})) == "action Read"
    assert r.render(LoopEvent.observation(1, "Read", "r", 0.0, summary="ok")) == "  └ ok"
    assert any_action(LoopEvent.action(1, "x", {})) == "action x"  # decorators return the function


def test_the_designs_custom_renderer_pattern() -> None:
    renderer = Renderer()

    @renderer.on_tool("search")
    def render_search(event: LoopEvent) -> str:
        if event.type == EventType.ACTION:
            return f"searching: {event.data['args']['query']}"
        return f"found: {event.data.get('result', '')}"

    @renderer.on_tool("save_file")
    def render_save(event: LoopEvent) -> str:
        if event.type == EventType.ACTION:
            return f"saving: {event.data['args']['filename']}"
        return "saved"

    @renderer.on_event(EventType.SOFT_LIMIT)
    def render_limit(event: LoopEvent) -> str:
        return f"note: adjusting ({event.data['reason']})"

    events = [
        LoopEvent.action(1, "search", {"query": "python"}),
        LoopEvent.observation(1, "search", "10 results", 0.2),
        LoopEvent.action(2, "save_file", {"filename": "a.md", "content": "x"}),
        LoopEvent.observation(2, "save_file", "ok", 0.1),
        LoopEvent.soft_limit(2, "step_limit", "p"),
        LoopEvent.error(2, "late", fatal=False),
    ]
    assert [renderer.render(e) for e in events] == [
        "searching: python",
        "found: 10 results",
        "saving: a.md",
        "saved",
        "note: adjusting (step_limit)",
        "warning: late",
    ]


def test_the_renderer_imports_nothing_heavy() -> None:
    code = (
        "import sys, etcode.ui.loop_renderer\n"
        "heavy = ['textual', 'rich', 'httpx', 'pydantic', 'tiktoken', 'mcp']\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env
    )
    assert out.stdout.strip() == "[]"
