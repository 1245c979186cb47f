"""Code written for the agent-loop design ports with only its import line changed: the usage
patterns of the design's examples and its spec (sync ``run`` with ``content``/``steps``/
``stop_reason``/``todos``, ``arun_stream`` and ``run_stream`` through a ``Renderer`` with
``on_tool``/``on_event`` rules, a ``BaseLLMClient`` subclass, multi-turn ``messages``,
``result.events``). Real HTTP against the fake LLM server."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from etcode import (
    Agent,
    BaseLLMClient,
    Event,
    EventType,
    LLMResponse,
    Renderer,
    TokenUsage,
    ToolCall,
    tool,
)
from tests.fake_llm import Call, FakeLLM, Reply, without_environment


@tool
def search(query: str) -> str:
    """Search the web.

    Args:
        query: what to look for
    """
    return f"results for '{query}': Python appeared in 1991"


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: e.g. 2026 - 1991
    """
    left, _, right = expression.partition("-")
    return str(int(left) - int(right))


@pytest.fixture
def env(llm: FakeLLM, project: Path, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """The design's examples read MODEL/API_KEY/BASE_URL and run in the current directory."""
    monkeypatch.setenv("API_KEY", "sk-test")
    monkeypatch.setenv("BASE_URL", llm.openai_base_url)
    monkeypatch.chdir(project)
    return llm


def design_agent(**kwargs: Any) -> Agent:
    return Agent(
        model=os.getenv("MODEL", "deepseek-chat"),
        api_key=os.environ["API_KEY"],
        base_url=os.getenv("BASE_URL", "https://api.deepseek.com/v1"),
        **kwargs,
    )


def test_basic_pattern(env: FakeLLM) -> None:
    todos = [
        {"content": "Find the year", "status": "completed"},
        {"content": "Subtract", "status": "in_progress"},
    ]
    env.script(
        Reply(calls=[Call("TodoWrite", {"todos": todos}), Call("search", {"query": "Python release"})]),
        Reply(calls=[Call("calculate", {"expression": "2026-1991"})]),
        Reply(text="Python was released in 1991; 35 years."),
    )
    agent = design_agent(
        name="研究助手", tools=[search, calculate], system_prompt="你擅长搜索信息和计算数学表达式。"
    )
    result = agent.run("Python 语言是什么时候发布的？1991 年到 2026 年一共多少年？")
    assert result.content == "Python was released in 1991; 35 years."
    assert result.steps == 3 and result.stop_reason == "end_turn"
    assert [(t["status"], t["content"]) for t in result.todos] == [
        ("completed", "Find the year"),
        ("in_progress", "Subtract"),
    ]
    first = env.requests[0].body
    assert first["model"] == "deepseek-chat"
    system = first["messages"][0]["content"]
    assert "You are 研究助手" in system and "你擅长搜索信息和计算数学表达式。" in system
    tool_messages = [m for m in env.requests[2].body["messages"] if m["role"] == "tool"]
    assert tool_messages[-1]["content"] == "35"


def test_streaming_pattern_with_the_default_renderer(env: FakeLLM) -> None:
    env.script(Reply(text="Let me search.", calls=[Call("search", {"query": "Python"})]), Reply(text="3.13"))
    agent = design_agent(name="搜索助手", tools=[search], system_prompt="你擅长搜索网络信息。")
    renderer = Renderer()
    lines: list[str] = []

    async def main() -> None:
        async for event in agent.arun_stream("搜索 Python 最新版本信息"):
            output = renderer.render(event)
            if output:
                lines.append(output)

    asyncio.run(main())
    text = "\n".join(lines)
    assert "Let me search." in text and "3.13" in text
    assert any(line.startswith("● search") for line in lines)
    assert any(line.lstrip().startswith("└") for line in lines)


def test_custom_renderer_pattern(env: FakeLLM) -> None:
    @tool
    def save_file(filename: str, content: str) -> str:
        """Save a file.

        Args:
            filename: its name
            content: its text
        """
        return f"saved to {filename}"

    renderer = Renderer()

    @renderer.on_tool("search")
    def render_search(event: Event) -> str:
        if event.type == EventType.ACTION:
            return f"searching: {event.data['args']['query']}"
        return f"found: {event.data.get('result', '')}"

    @renderer.on_tool("save_file")
    def render_save(event: Event) -> str:
        if event.type == EventType.ACTION:
            return f"saving: {event.data['args']['filename']}"
        return "saved"

    @renderer.on_event(EventType.SOFT_LIMIT)
    def render_limit(event: Event) -> str:
        return f"adjusting ({event.data['reason']})"

    env.script(
        Reply(calls=[Call("search", {"query": "Python tutorial"})]),
        Reply(calls=[Call("save_file", {"filename": "t.md", "content": "x"})]),
        Reply(text="Done."),
    )
    agent = design_agent(tools=[search, save_file])
    lines = [out for event in agent.run_stream("search and save") if (out := renderer.render(event))]
    assert "searching: Python tutorial" in lines
    assert "found: results for 'Python tutorial': Python appeared in 1991" in lines
    assert lines.index("saving: t.md") < lines.index("saved")


class EchoLLM(BaseLLMClient):
    """The design's custom client: any API behind ``chat``."""

    def __init__(self, model: str) -> None:
        self.model = model

    async def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> LLMResponse:
        last_message = messages[-1]["content"]
        return LLMResponse(
            content=f"[{self.model}] got: {last_message}",
            tool_calls=[],
            usage=TokenUsage(prompt_tokens=10, completion_tokens=20, total_tokens=30),
            raw={},
        )


def test_custom_llm_pattern(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    agent = Agent(llm=EchoLLM(model="my-custom-model"))
    result = agent.run("你好")
    # the only user message: the environment block, then the user's words
    assert result.content.startswith(
        "[my-custom-model] got: You are powered by the model named my-custom-model."
    )
    assert without_environment(result.content.removeprefix("[my-custom-model] got: ")) == "你好"
    assert result.total_tokens == TokenUsage(10, 20, 30)


def test_a_custom_client_calls_tools(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Scripted(BaseLLMClient):
        def __init__(self) -> None:
            self.seen: list[list[dict[str, Any]]] = []

        async def chat(
            self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kwargs: Any
        ) -> LLMResponse:
            self.seen.append(messages)
            if len(self.seen) == 1:
                assert tools is not None and "calculate" in [t["function"]["name"] for t in tools]
                call = ToolCall(id="c1", name="calculate", arguments={"expression": "10-4"})
                return LLMResponse(content=None, tool_calls=[call], usage=TokenUsage(5, 5, 10), raw=None)
            return LLMResponse(
                content=f"it is {messages[-1]['content']}", tool_calls=[], usage=TokenUsage.zero(), raw=None
            )

    monkeypatch.chdir(project)
    client = Scripted()
    result = Agent(llm=client, tools=[calculate], temperature=0.1, seed=3).run("10-4?")
    assert result.content == "it is 6"
    tool_message = client.seen[1][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "c1", "content": "6"} or (
        tool_message["role"] == "tool"
        and tool_message["tool_call_id"] == "c1"
        and tool_message["content"] == "6"
    )


def test_events_multi_turn_and_async_forms(env: FakeLLM) -> None:
    env.script(Reply(text="Sunny today."), Reply(text="Rain tomorrow."), Reply(text="async too"))
    agent = design_agent()
    r1 = agent.run("How is the weather today?")
    kinds = [event.type for event in r1.events]
    assert kinds[0] == EventType.LOOP_START and kinds[-1] == EventType.LOOP_END
    for event in r1.events:
        json.dumps(event.to_dict())  # JSON-serialisable, as the design promises
    end = r1.events[-1].to_dict()
    assert end["type"] == "loop_end" and end["data"]["stop_reason"] == "end_turn"
    assert end["data"]["messages"][-1] == {"role": "assistant", "content": "Sunny today."}
    r2 = agent.run("And tomorrow?", messages=r1.messages)
    assert r2.content == "Rain tomorrow."
    assert [m["role"] for m in env.requests[1].body["messages"]] == ["system", "user", "assistant", "user"]

    async def main() -> str:
        result = await agent.arun("third")
        await agent.aclose()
        return result.content

    assert asyncio.run(main()) == "async too"
