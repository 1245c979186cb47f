"""Issue 33, item 1: the todo types of the agent-loop design (``TodoItem(content=...)``,
``TodoStore.write``/``todos``, ``create_todo_tool(store)``) and its tool name ``todo_write``,
accepted from a model, in an agent's ``tools`` settings and permission rules, and shown in the
step-level events. Through ``from etcode import ...``; real HTTP against the fake LLM server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from etcode import Agent, EventType, Renderer, TodoItem, TodoStore, create_todo_tool
from tests.fake_llm import Call, FakeLLM, Reply
from tests.project_support import write_config


def test_a_todo_item_takes_the_designs_forms() -> None:
    item = TodoItem(content="Write it")
    assert (item.content, item.status, item.activeForm, item.priority) == (
        "Write it",
        "pending",
        None,
        "medium",
    )
    assert item.to_dict() == {"content": "Write it", "status": "pending"}  # the design's two keys
    assert TodoItem(content="Run", activeForm="Running").to_dict()["activeForm"] == "Running"
    ranked = TodoItem(content="Ship", status="cancelled", priority="high")
    assert ranked.to_dict() == {
        "content": "Ship",
        "status": "cancelled",
        "priority": "high",
    }
    for status in ("pending", "in_progress", "completed", "cancelled"):
        assert TodoItem(content="x", status=status).status == status
    with pytest.raises(ValueError, match="status"):
        TodoItem(content="x", status="unknown")
    with pytest.raises(ValueError, match="priority"):
        TodoItem(content="x", priority="urgent")


def test_write_replaces_the_list_and_returns_what_the_model_is_told() -> None:
    store = TodoStore()
    assert store.todos == [] and store.items == []
    told = store.write(
        [
            {"content": "Search", "status": "completed"},
            TodoItem(content="Analyse", status="in_progress", activeForm="Analysing"),
            {"content": "Report", "status": "pending", "priority": "low"},
            {"content": "Old idea", "status": "cancelled"},
        ]
    )
    assert told == "Todo list updated:\n[x] Search\n[~] Analyse (Analysing)\n[ ] Report\n[-] Old idea"
    assert [(t.content, t.status, t.priority) for t in store.todos] == [
        ("Search", "completed", "medium"),
        ("Analyse", "in_progress", "medium"),
        ("Report", "pending", "low"),
        ("Old idea", "cancelled", "medium"),
    ]
    assert store.items[2] == {"content": "Report", "status": "pending", "priority": "low"}
    store.todos.clear()
    store.todos[0].content = "changed"
    assert len(store.todos) == 4 and store.todos[0].content == "Search"  # copies
    assert store.write([]) == "Todo list updated:\n(The todo list is empty.)" and store.todos == []
    assert store.replace([{"content": "A"}]) == "Todo list updated:\n[ ] A"  # etcode's name
    with pytest.raises(ValueError, match="status"):
        store.write([{"content": "New", "status": "bad"}])
    assert [t.content for t in store.todos] == ["A"]  # a refused list leaves the old one


def request_tools(llm: FakeLLM, index: int = 0) -> dict[str, Any]:
    return {t["function"]["name"]: t["function"] for t in llm.requests[index].body["tools"]}


def test_the_schema_the_model_reads_offers_neither_priority_nor_cancelled(
    llm: FakeLLM, project: Path
) -> None:
    llm.script(Reply(text="ok"))
    Agent("openai/m", "k", llm.openai_base_url, directory=project, store=False, builtin_tools=False).run_sync(
        "x"
    )
    item = request_tools(llm)["TodoWrite"]["parameters"]["properties"]["todos"]["items"]
    assert set(item["properties"]) == {"content", "status", "activeForm"}
    assert item["required"] == ["content", "status"] and "default" not in item["properties"]["status"]
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert "description" not in item  # the class's docstring is not sent


DESIGN_TODOS = [
    {"content": "Search", "status": "in_progress", "priority": "high"},
    {"content": "Guess", "status": "cancelled"},
]


async def test_a_model_that_calls_todo_write_reaches_todowrite(llm: FakeLLM, project: Path) -> None:
    """A design-trained model calls ``todo_write`` with the design's values: the call runs
    TodoWrite (bound to the program's store), the history names the tool offered, and the step
    events show the design's name (a design renderer hides it) with etcode's beside it."""
    llm.script(Reply(calls=[Call("todo_write", {"todos": DESIGN_TODOS})]), Reply(text="planned"))
    store = TodoStore()
    agent = Agent(
        "openai/m",
        "k",
        llm.openai_base_url,
        tools=[create_todo_tool(store)],
        directory=project,
        store=False,
        builtin_tools=False,
    )
    try:
        events = [event async for event in agent.arun_stream("plan")]
    finally:
        await agent.aclose()
    assert [(t.content, t.status, t.priority) for t in store.todos] == [
        ("Search", "in_progress", "high"),
        ("Guess", "cancelled", "medium"),
    ]
    second = llm.requests[1].body["messages"]
    call = next(m for m in second if m["role"] == "assistant")["tool_calls"][0]
    assert call["function"]["name"] == "TodoWrite"
    result = next(m for m in second if m["role"] == "tool")["content"]
    assert result == "Todo list updated:\n[~] Search\n[-] Guess"
    action, todo, observation = (
        next(e for e in events if e.type == kind)
        for kind in (EventType.ACTION, EventType.TODO_UPDATE, EventType.OBSERVATION)
    )
    assert (action.data["tool"], action.data["etcode_name"]) == ("todo_write", "TodoWrite")
    assert (observation.data["tool"], observation.data["etcode_name"]) == ("todo_write", "TodoWrite")
    assert observation.data["is_error"] is False
    assert [t["status"] for t in todo.data["todos"]] == ["in_progress", "cancelled"]
    end = events[-1]
    assert end.type == EventType.LOOP_END and end.data["todos"] == store.items
    renderer = Renderer()  # etcode's renderer shows etcode's name; a rule for either name applies
    assert renderer.render(action) == "● TodoWrite (2 tasks)"
    renderer.on_tool("TodoWrite")(lambda event: f"todo {event.type.value}")
    assert renderer.render(observation) == "todo observation"


def test_an_agents_tools_setting_may_name_todo_write(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, agent={"build": {"tools": {"todo_write": False}}})
    llm.script(Reply(text="ok"))
    Agent(directory=project, store=False).run_sync("x")
    offered = request_tools(llm)
    assert "TodoWrite" not in offered and "ReadFile" in offered


def test_a_permission_rule_may_name_todo_write(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, permission={"todo_write": "deny"})
    todos = [{"content": "A", "status": "pending"}]
    llm.script(Reply(calls=[Call("TodoWrite", {"todos": todos})]), Reply(text="refused"))
    result = Agent(directory=project, store=False).run_sync("x")
    tool_message = next(m for m in llm.requests[1].body["messages"] if m["role"] == "tool")
    assert "denied" in tool_message["content"] and "todo_write" in tool_message["content"]
    assert result.todos == []
    assert json.dumps(result.todos) == "[]"
