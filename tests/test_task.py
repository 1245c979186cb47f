"""The Task tool: child sessions for subagents, answered by the same fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from etcode import Agent
from etcode.agent.registry import builtin_agents
from etcode.contract import events as ev
from etcode.provider.types import ToolCallPart
from etcode.wiring.agent_access import is_read_only_agent
from tests.fake_llm import Call, FakeLLM, Recorded, Reply, without_environment


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def is_child(request: Recorded) -> bool:
    return not any(m["role"] == "tool" for m in request.body["messages"]) and "Task" not in _tools(request)


def _tools(request: Recorded) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools", [])]


def task(kind: str, prompt: str, description: str = "look around") -> Call:
    return Call("Task", {"description": description, "prompt": prompt, "subagent_type": kind})


async def run(llm: FakeLLM, directory: Path, text: str) -> tuple[Agent, list[ev.Event]]:
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", directory=directory)
    events = [event async for event in agent.stream(text)]
    await agent.aclose()
    return agent, events


def test_read_only_agents() -> None:
    agents = builtin_agents()
    assert is_read_only_agent(agents["explore"])
    assert not is_read_only_agent(agents["plan"])  # it may start Task subagents that write
    assert not is_read_only_agent(agents["general"]) and not is_read_only_agent(agents["build"])


async def test_task_runs_a_child_session_and_returns_its_answer(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(
        Reply(calls=[task("explore", "Find where the config is loaded.")]),
        Reply(text="The config is loaded in etcode/config/loader.py:194."),  # the child
        Reply(text="It is in the loader."),
    )
    agent, events = await run(llm, tmp_path, "where is the config loaded?")
    assert agent.last_result is not None and agent.last_result.text == "It is in the loader."
    parent_tools = _tools(llm.requests[0])
    assert "Task" in parent_tools
    task_schema = next(t for t in llm.requests[0].body["tools"] if t["function"]["name"] == "Task")
    assert "- explore:" in task_schema["function"]["description"]
    assert "- general:" in task_schema["function"]["description"]
    assert "- build" not in task_schema["function"]["description"]
    child = llm.requests[1]
    child_tools = _tools(child)
    assert "ReadFile" in child_tools and "Grep" in child_tools
    assert not {"WriteFile", "Edit", "Task", "TodoWrite"} & set(child_tools)
    last = child.body["messages"][-1]
    assert (
        last["role"] == "user" and f"Working directory: {tmp_path.resolve()}" in last["content"]
    )  # its own env
    assert without_environment(last["content"]) == "Find where the config is loaded."
    assert "where is the config loaded?" not in json.dumps(child.body["messages"])
    tool_message = llm.requests[2].body["messages"][-1]
    assert tool_message["content"] == "The config is loaded in etcode/config/loader.py:194."
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent) and e.name == "Task")
    assert not result.is_error and result.summary == "explore finished in 1 step"
    assert result.data is not None and result.data["parent_session_id"] == agent.session_id
    assert result.data["session_id"] != agent.session_id and result.data["session_id"].startswith("ses")
    start = next(e for e in events if isinstance(e, ev.ToolCallStart) and e.name == "Task")
    assert start.summary == "explore: look around"


async def test_child_tool_calls_are_reported_as_subagent_events(llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    llm.script(
        Reply(calls=[task("general", "Read a.txt and report.")]),
        Reply(calls=[Call("ReadFile", {"file_path": "a.txt"})]),  # child
        Reply(text="a.txt says alpha"),  # child
        Reply(text="Done."),
    )
    _, events = await run(llm, tmp_path, "go")
    nested = [e for e in events if isinstance(e, ev.SubagentEvent)]
    assert [n.event["type"] for n in nested] == ["tool_call_start", "tool_result"]
    assert nested[0].agent == "general" and nested[0].event["name"] == "ReadFile"
    parent_call = next(e for e in events if isinstance(e, ev.ToolCallStart) and e.name == "Task")
    assert nested[0].call_id == parent_call.call_id
    assert json.loads(json.dumps(nested[0].to_dict()))["type"] == "subagent"


def _answer_children(recorded: Recorded) -> Reply:
    prompt = without_environment(recorded.body["messages"][-1]["content"])
    return Reply(text=f"report for: {prompt}", chunk_size=4, delay=0.02)


async def test_read_only_subagents_run_in_parallel(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(
        Reply(calls=[task("explore", "search A"), task("explore", "search B")]),
        _answer_children,
        _answer_children,
        Reply(text="both done"),
    )
    _, events = await run(llm, tmp_path, "search twice")
    order = [
        (type(e).__name__, e.name)
        for e in events
        if isinstance(e, ev.ToolCallStart | ev.ToolResultEvent) and e.name == "Task"
    ]
    assert order == [
        ("ToolCallStart", "Task"),
        ("ToolCallStart", "Task"),
        ("ToolResultEvent", "Task"),
        ("ToolResultEvent", "Task"),
    ]
    contents = [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "tool"]
    assert contents == ["report for: search A", "report for: search B"]  # results kept in call order


async def test_writing_subagents_run_one_at_a_time(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(
        Reply(calls=[task("general", "job A"), task("general", "job B")]),
        _answer_children,
        _answer_children,
        Reply(text="both done"),
    )
    _, events = await run(llm, tmp_path, "two jobs")
    kinds = [type(e).__name__ for e in events if isinstance(e, ev.ToolCallStart | ev.ToolResultEvent)]
    assert kinds == ["ToolCallStart", "ToolResultEvent", "ToolCallStart", "ToolResultEvent"]


async def test_unknown_subagent_is_an_error_result(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(Reply(calls=[task("wizard", "x")]), Reply(text="ok"))
    _, events = await run(llm, tmp_path, "x")
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert result.is_error and "Unknown subagent_type 'wizard'. Available: general, explore" in result.output


async def test_nested_task_only_when_the_agent_allows_it(llm: FakeLLM, tmp_path: Path) -> None:
    config: dict[str, Any] = {
        "agent": {
            "lead": {"description": "Delegates further.", "prompt": "You delegate.", "mode": "subagent",
                     "tools": {"Task": True}},
            "worker": {"description": "Works.", "prompt": "You work.", "mode": "subagent"},
        }
    }  # fmt: skip
    (tmp_path / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    llm.script(
        Reply(calls=[task("lead", "delegate"), task("worker", "work")]),
        Reply(text="lead done"),
        Reply(text="worker done"),
        Reply(text="all done"),
    )
    await run(llm, tmp_path, "go")
    lead, worker = llm.requests[1], llm.requests[2]
    assert "Task" in _tools(lead) and "You delegate." in lead.body["messages"][0]["content"]
    assert "Task" not in _tools(worker)


def test_scheduler_asks_the_per_call_hook() -> None:
    from etcode.tools.registry import ToolRegistry
    from etcode.tools.scheduler import ToolScheduler
    from etcode.tools.task import TaskTool

    class Runner:
        def catalog(self) -> dict[str, str]:
            return {"explore": "", "general": ""}

        def is_read_only(self, name: str) -> bool:
            return name == "explore"

        async def run(self, *args: Any) -> Any:  # pragma: no cover
            raise AssertionError

    scheduler = ToolScheduler(ToolRegistry([TaskTool(Runner())]), lambda c: None, lambda e: None)  # type: ignore[arg-type,return-value]

    def call(n: int, kind: str) -> ToolCallPart:
        return ToolCallPart(
            f"c{n}", "Task", json.dumps({"description": "d", "prompt": "p", "subagent_type": kind})
        )

    waves = scheduler.plan([call(1, "explore"), call(2, "explore"), call(3, "general"), call(4, "explore")])
    assert [[c.id for c in wave] for wave in waves] == [["c1", "c2"], ["c3"], ["c4"]]


async def test_a_read_only_agent_only_gets_read_only_subagents(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(Reply(text="a plan"))
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", directory=tmp_path, agent="plan")
    await agent.run("plan it")
    await agent.aclose()
    schema = next(t for t in llm.requests[0].body["tools"] if t["function"]["name"] == "Task")
    assert "- explore:" in schema["function"]["description"]
    assert "- general:" not in schema["function"]["description"]


async def test_child_session_is_stored_with_its_parent_id(llm: FakeLLM, tmp_path: Path) -> None:
    from etcode.session.store import SessionStore

    store = SessionStore.open(tmp_path / "sessions.db")
    llm.script(
        Reply(calls=[task("explore", "Find it.")]),
        Reply(text="Found it in a.py."),
        Reply(text="It is in a.py."),
    )
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", directory=tmp_path, store=store)
    events = [event async for event in agent.stream("where is it?")]
    await agent.aclose()
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent) and e.name == "Task")
    assert result.data is not None
    child = store.get_session(result.data["session_id"])
    assert child is not None and child.parent_id == agent.session_id
    assert [m.text for m in store.load_messages(child.id)][-1] == "Found it in a.py."
    store.close()
