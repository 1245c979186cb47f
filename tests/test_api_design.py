"""Issue 16: the Agent constructor of the agent-loop design (positional order, bare model ids,
``name``, ``temperature`` and ``**llm_kwargs`` in both wire formats), TodoWrite always offered,
and ``run`` as the design calls it (sync from ordinary code, awaitable in async code).
Real HTTP against the fake LLM server."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from etcode import Agent, AgentResult, LoopLimits, RetryConfig, tool
from etcode.config.resolve import spec_from_arguments
from etcode.util.errors import ConfigError
from tests.fake_llm import Call, FakeLLM, Reply, without_environment


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def system_text(body: dict[str, Any]) -> str:
    if "system" in body:  # Anthropic
        system = body["system"]
        return system if isinstance(system, str) else "\n".join(block["text"] for block in system)
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def test_the_constructor_takes_the_designs_positional_order(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(calls=[Call("add", {"a": 2, "b": 3})]), Reply(text="5"))
    agent = Agent(
        "openai/test-model",
        "k",
        llm.openai_base_url,
        None,
        [add],
        "Answer with digits only.",
        "Calculator",
        LoopLimits(max_steps=5),
        RetryConfig(max_retries=0),
        0.2,
        directory=project,
        store=False,
        builtin_tools=False,
    )
    result = agent.run("2+3?")
    assert isinstance(result, AgentResult)
    assert (result.content, result.text, result.steps) == ("5", "5", 2)
    body = llm.requests[0].body
    assert body["temperature"] == 0.2
    assert llm.requests[0].headers["authorization"] == "Bearer k"
    system = system_text(body)
    assert "You are Calculator" in system and "Answer with digits only." in system
    assert [t["function"]["name"] for t in body["tools"]] == ["add", "TodoWrite"]
    assert agent.limits is not None and agent.limits.max_steps == 5


def test_name_shapes_the_prompt_without_a_system_prompt(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="hi"), Reply(text="hi"))
    Agent("openai/gpt-4o", "k", llm.openai_base_url, name="研究助手", directory=project, store=False).run(
        "hi"
    )
    Agent("openai/gpt-4o", "k", llm.openai_base_url, directory=project, store=False).run("hi")
    named, default = (system_text(r.body) for r in llm.requests)
    assert "You are 研究助手," in named and "You are etcode" not in named
    assert "You are etcode," in default


def test_a_bare_model_id_with_base_url_is_sent_as_it_is(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="hello"))
    agent = Agent(
        model="deepseek-chat", api_key="k", base_url=llm.openai_base_url, directory=project, store=False
    )
    assert agent.run("hi").content == "hello"
    assert llm.requests[0].path == "/v1/chat/completions"
    assert llm.requests[0].body["model"] == "deepseek-chat"


@pytest.mark.parametrize(
    ("model", "provider", "wire"),
    [
        ("gpt-4o-mini", "openai", "openai"),
        ("o3-mini", "openai", "openai"),
        ("o4-mini", "openai", "openai"),
        ("claude-sonnet-4-20250514", "anthropic", "anthropic"),
        ("gemini-2.5-flash", "gemini", "openai"),
    ],
)
def test_a_bare_model_id_resolves_by_its_family(model: str, provider: str, wire: str) -> None:
    spec = spec_from_arguments(model, "k", None)
    assert (spec.id, spec.type, spec.model) == (provider, wire, model)


def test_a_bare_model_id_of_no_known_family_needs_a_base_url() -> None:
    with pytest.raises(ConfigError, match=r'model "llama3": give its provider .*base_url='):
        spec_from_arguments("llama3", "k", None)


def test_a_bare_claude_id_talks_anthropic(
    llm: FakeLLM, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.anthropic_base_url)
    llm.script(Reply(text="from claude"))
    result = Agent("claude-sonnet-4-20250514", api_key="k", directory=project, store=False).run("hi")
    assert result.content == "from claude"
    assert llm.requests[0].path == "/v1/messages"
    assert llm.requests[0].body["model"] == "claude-sonnet-4-20250514"


def test_model_keywords_reach_the_openai_body(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="ok"))
    agent = Agent(
        "openai/gpt-4o", "k", llm.openai_base_url, directory=project, store=False,
        top_p=0.5, seed=7, stop=["END"], presence_penalty=0.1,
    )  # fmt: skip
    agent.run("hi")
    body = llm.requests[0].body
    assert (body["top_p"], body["seed"], body["stop"], body["presence_penalty"]) == (0.5, 7, ["END"], 0.1)


def test_model_keywords_reach_the_anthropic_body(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="ok"))
    agent = Agent(
        "anthropic/claude-sonnet-4", "k", llm.anthropic_base_url, directory=project, store=False,
        temperature=0.3, top_p=0.9, top_k=40, stop="END",
    )  # fmt: skip
    agent.run("hi")
    body = llm.requests[0].body
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.3, 0.9, 40)
    assert body["stop_sequences"] == ["END"] and "stop" not in body


def test_local_servers_take_their_own_samplers(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="ok"))
    Agent("qwen2.5", "k", llm.openai_base_url, directory=project, store=False, top_k=20, min_p=0.05).run("hi")
    assert (llm.requests[0].body["top_k"], llm.requests[0].body["min_p"]) == (20, 0.05)


def test_an_option_the_provider_does_not_take_fails_before_any_request(llm: FakeLLM, project: Path) -> None:
    agent = Agent(
        "anthropic/claude-sonnet-4", "k", llm.anthropic_base_url, directory=project, store=False, seed=1
    )
    with pytest.raises(ConfigError) as info:
        agent.run("hi")
    message = str(info.value)
    assert "'seed'" in message and "anthropic" in message and "top_k" in message
    assert "\n" not in message
    hosted = Agent("openai/gpt-4o", "k", llm.openai_base_url, directory=project, store=False, top_k=3)
    with pytest.raises(ConfigError, match="'top_k' is not accepted by provider 'openai'"):
        hosted.run("hi")
    assert llm.requests == []


def test_a_misspelt_agent_keyword_is_not_taken_for_a_model_option() -> None:
    with pytest.raises(TypeError, match="'sesion_id' .*did you mean 'session_id'"):
        Agent("openai/gpt-4o", "k", "http://127.0.0.1:9", sesion_id="x")


def test_todo_write_is_offered_without_the_built_in_tools(llm: FakeLLM, project: Path) -> None:
    todos = [{"content": "Add", "status": "in_progress"}, {"content": "Check", "status": "pending"}]
    llm.script(Reply(calls=[Call("TodoWrite", {"todos": todos})]), Reply(text="planned"))
    result = Agent(
        "openai/m", "k", llm.openai_base_url, directory=project, store=False, builtin_tools=False
    ).run("x")
    assert [t["function"]["name"] for t in llm.requests[0].body["tools"]] == ["TodoWrite"]
    assert [(t["content"], t["status"]) for t in result.todos] == [
        ("Add", "in_progress"),
        ("Check", "pending"),
    ]


async def test_run_is_awaitable_inside_async_code(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="awaited"))
    agent = Agent("openai/m", "k", llm.openai_base_url, directory=project, store=False)
    result = await agent.run("hi")
    await agent.aclose()
    assert result.content == "awaited"


async def test_run_sync_works_inside_a_running_loop(llm: FakeLLM, project: Path) -> None:
    """A notebook cell: plain code, but an event loop is running."""
    llm.script(Reply(text="from a thread"))
    agent = Agent("openai/m", "k", llm.openai_base_url, directory=project, store=False)
    result = agent.run_sync("hi")
    assert result.content == "from a thread"


def test_messages_continue_an_earlier_conversation(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="It is sunny."), Reply(text="Rain tomorrow."))
    first = Agent("openai/m", "k", llm.openai_base_url, directory=project, store=False).run("Weather today?")
    other = Agent("openai/m", "k", llm.openai_base_url, directory=project, store=False)
    second = other.run("And tomorrow?", messages=first.messages)
    assert second.content == "Rain tomorrow."
    sent = [
        (m["role"], without_environment(m.get("content")))
        for m in llm.requests[1].body["messages"]
        if m["role"] != "system"
    ]
    assert sent == [("user", "Weather today?"), ("assistant", "It is sunny."), ("user", "And tomorrow?")]


def test_run_stream_yields_events_as_they_happen(llm: FakeLLM, project: Path) -> None:
    from etcode import EventType

    release = threading.Event()

    def second(recorded: Any) -> Reply:
        release.wait(30)  # held until the caller has seen the first step's events
        return Reply(text="done")

    llm.script(Reply(calls=[Call("add", {"a": 1, "b": 1})]), second)
    agent = Agent("openai/m", "k", llm.openai_base_url, tools=[add], directory=project, store=False)
    seen: list[EventType] = []
    for event in agent.run_stream("1+1"):
        seen.append(event.type)
        if event.type == EventType.OBSERVATION:
            assert event.data["result"] == "2"
            release.set()
    assert seen[0] == EventType.LOOP_START and seen[-1] == EventType.LOOP_END
    assert EventType.ACTION in seen and EventType.THOUGHT in seen


def test_leaving_run_stream_early_stops_the_run(llm: FakeLLM, project: Path) -> None:
    from etcode import EventType

    gate = threading.Event()

    def slow(recorded: Any) -> Reply:
        gate.wait(30)
        return Reply(text="too late")

    llm.script(Reply(calls=[Call("add", {"a": 1, "b": 1})]), slow)
    agent = Agent("openai/m", "k", llm.openai_base_url, tools=[add], directory=project, store=False)
    for event in agent.run_stream("1+1"):
        if event.type == EventType.OBSERVATION:
            break
    gate.set()
    assert agent.last_result is not None and agent.last_result.stop_reason == "interrupted"


def test_run_in_a_plain_function_inside_async_code_is_awaitable(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="x"))
    agent = Agent("openai/m", "k", llm.openai_base_url, directory=project, store=False)

    async def main() -> str:
        pending = agent.run("hi")
        assert asyncio.iscoroutine(pending)
        result = await pending
        await agent.aclose()
        return result.content

    assert asyncio.run(main()) == "x"
