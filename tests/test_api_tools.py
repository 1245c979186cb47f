"""Issue 16, first part: tools given as dicts (the agent-loop design's shape), pydantic-model
parameters arriving as model instances, and the todo types usable without the built-in tools.
Real HTTP against the fake LLM server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import etcode
from etcode import Agent, tool
from tests.fake_llm import Call, FakeLLM, Reply


def agent_for(llm: FakeLLM, project: Path, **kwargs: Any) -> Agent:
    return Agent(
        "openai/test-model",
        api_key="k",
        base_url=llm.openai_base_url,
        directory=project,
        store=False,
        **kwargs,
    )


def tool_output(result: Any, name: str) -> str:
    for message in result.messages:
        for part in message.parts:
            if getattr(part, "output", None) is not None and getattr(part, "name", name) == name:
                return part.output
    raise AssertionError(f"no result of {name}")


def test_a_tool_given_as_a_dict_is_offered_and_called(llm: FakeLLM, project: Path) -> None:
    seen: list[tuple[float, float]] = []

    def add(a: float, b: float) -> float:
        seen.append((a, b))
        return a + b

    add_tool = {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        "function": add,
    }
    llm.script(Reply(calls=[Call("add", {"a": 2, "b": 3})]), Reply(text="5"))
    result = agent_for(llm, project, tools=[add_tool], builtin_tools=False).run_sync("2+3?")
    assert result.text == "5"
    assert seen == [(2, 3)]
    offered = llm.requests[0].body["tools"]
    assert offered[0]["function"]["name"] == "add"
    assert offered[0]["function"]["parameters"]["required"] == ["a", "b"]
    assert "5" in str(llm.requests[1].body["messages"][-1])


def test_a_dict_tool_with_bad_arguments_tells_the_model(llm: FakeLLM, project: Path) -> None:
    async def shout(text: str) -> str:
        return text.upper()

    spec = {
        "name": "shout",
        "description": "Upper-case a text.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "function": shout,
    }
    llm.script(
        Reply(calls=[Call("shout", {"txt": 1})]),
        Reply(calls=[Call("shout", {"text": "hi"})]),
        Reply(text="ok"),
    )
    agent_for(llm, project, tools=[spec], builtin_tools=False).run_sync("shout hi")
    first = str(llm.requests[1].body["messages"][-1])
    assert "Invalid arguments for shout" in first and "'text' is a required property" in first
    assert "HI" in str(llm.requests[2].body["messages"][-1])  # the async function ran


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"description": "x", "function": print}, '"name"'),
        ({"name": "t", "function": "not callable"}, '"function" must be a callable'),
        ({"name": "t", "function": print, "parameters": {"type": "objekt"}}, "not a valid JSON schema"),
        ({"name": "t", "function": print, "params": {}}, "unknown keys ['params']"),
    ],
)
def test_a_malformed_tool_dict_is_a_clear_error(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Agent("openai/test-model", api_key="k", tools=[spec], store=False)


class Point(BaseModel):
    x: int
    y: int


def test_a_pydantic_model_parameter_arrives_as_the_model(llm: FakeLLM, project: Path) -> None:
    received: list[Any] = []

    @tool
    def plot(point: Point) -> str:
        """Plot a point."""
        received.append(point)
        return f"plotted {point.x},{point.y}"

    llm.script(Reply(calls=[Call("plot", {"point": {"x": 1, "y": 2}})]), Reply(text="done"))
    agent_for(llm, project, tools=[plot], builtin_tools=False).run_sync("plot it")
    assert len(received) == 1 and isinstance(received[0], Point) and received[0].y == 2


def test_todo_types_without_the_builtin_tools(llm: FakeLLM, project: Path) -> None:
    store = etcode.TodoStore()
    updates: list[Any] = []
    todos = [{"content": "Write the code", "status": "in_progress", "activeForm": "Writing the code"}]
    llm.script(Reply(calls=[Call("TodoWrite", {"todos": todos})]), Reply(text="planned"))
    agent = agent_for(
        llm,
        project,
        tools=[etcode.create_todo_tool(store)],
        builtin_tools=False,
        on_event=lambda e: updates.append(e) if e.type == etcode.TODO_UPDATE else None,
    )

    async def run() -> None:
        async for event in agent.stream("plan"):
            if event.type == etcode.TODO_UPDATE:
                updates.append(event)
        await agent.aclose()

    asyncio.run(run())
    assert [t["function"]["name"] for t in llm.requests[0].body["tools"]] == ["TodoWrite"]
    assert store.items == [
        {"content": "Write the code", "status": "in_progress", "activeForm": "Writing the code"}
    ]
    assert updates and updates[-1].todos[0]["content"] == "Write the code"
    event = etcode.todo_update_event(store.items)
    assert isinstance(event, etcode.TodoUpdate) and event.type == etcode.TODO_UPDATE
    assert etcode.TodoItem(content="x", status="pending").status == "pending"
