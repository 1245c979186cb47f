"""Issue 33, item 3: the model's thinking through the public API — REASONING step events,
``LLMResponse.reasoning_content``, ``TokenUsage.reasoning_tokens``/``cached_tokens``, and one
``reasoning=`` setting sent as each wire's own field (an explicit option wins). Real HTTP
against the fake server, which replays a real llama.cpp reasoning stream
(``tests/fixtures/llama-server/``) and Anthropic thinking streams in the API's SSE format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from etcode import (
    Agent,
    AllowAsker,
    BaseLLMClient,
    Event,
    EventType,
    LLMResponse,
    Renderer,
    TokenUsage,
    ToolCall,
)
from etcode.contract.events import WarningEvent
from etcode.provider.types import ReasoningPart
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Recording, Reply

FIXTURES = Path(__file__).parent / "fixtures"
LLAMA_REASONING = FIXTURES / "llama-server" / "stream-reasoning.txt"
ANTHROPIC_TOOL = FIXTURES / "sse" / "anthropic_thinking_tool_use.sse"
ANTHROPIC_ANSWER = FIXTURES / "sse" / "anthropic_thinking_answer.sse"


def kinds(events: list[Any]) -> list[tuple[str, int]]:
    return [(str(e.type), e.step) for e in events]


def test_a_recorded_llama_reasoning_stream_reaches_run_stream(llm: FakeLLM, project: Path) -> None:
    llm.script(Recording.from_file(LLAMA_REASONING))
    agent = Agent("local/smollm2", "x", llm.openai_base_url, directory=project, store=False, reasoning="low")
    events = list(agent.run_stream("What is 2 + 2?"))
    assert kinds(events) == [("loop_start", 0), ("reasoning", 1), ("thought", 1), ("loop_end", 1)]
    assert events[1].type == EventType.REASONING
    assert events[1].data["content"] == "The user asks for 2 + 2. Two plus two is four.\n"
    assert events[2].data["content"] == "The answer is 4."
    # the reasoning is kept in the answer's message (never sent back on this wire)
    assistant = agent.history[-1]
    assert assistant.parts[0] == ReasoningPart("The user asks for 2 + 2. Two plus two is four.\n")
    # the recorded usage: 28 prompt tokens of which 27 cached, 47 completion; llama.cpp
    # does not count reasoning tokens on their own
    result = agent.last_result
    assert result is not None
    used = result.total_tokens
    assert (used.prompt_tokens, used.completion_tokens, used.total_tokens) == (28, 47, 75)
    assert (used.cached_tokens, used.reasoning_tokens) == (27, None)
    # a server of your own is asked with llama.cpp's field
    assert llm.requests[0].body["reasoning_effort"] == "low"


def test_an_anthropic_thinking_stream_reaches_run_stream(llm: FakeLLM, project: Path) -> None:
    (project / "notes.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    llm.script(Recording.from_file(ANTHROPIC_TOOL), Recording.from_file(ANTHROPIC_ANSWER))
    agent = Agent(
        "anthropic/claude-sonnet-4-20250514",
        "k",
        llm.anthropic_base_url,
        temperature=0.3,
        directory=project,
        store=False,
        reasoning="high",
    )
    result = agent.run_sync("How many lines does notes.txt have?")
    assert kinds(result.events) == [
        ("loop_start", 0),
        ("reasoning", 1),
        ("thought", 1),
        ("action", 1),
        ("observation", 1),
        ("reasoning", 2),
        ("thought", 2),
        ("loop_end", 2),
    ]
    first, second = (e.data["content"] for e in result.events if e.type == EventType.REASONING)
    assert first == (
        "The user wants to know how many lines notes.txt has. I should read the file rather than guess."
    )
    assert second == "The file has three lines: alpha, beta and gamma."
    assert result.content == "notes.txt has 3 lines."
    # the level as Anthropic's own field; max_tokens above the budget, no temperature
    body = llm.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert body["max_tokens"] > 16384 and "temperature" not in body
    # the signed thinking block goes back with the tool result, as the API requires
    sent_back = llm.requests[1].body["messages"][1]["content"][0]
    assert sent_back["type"] == "thinking" and sent_back["signature"].startswith("ErUBCkYIBRgC")
    used = result.total_tokens
    assert used.prompt_tokens == (1894 + 1630) + (146 + 1630)
    assert (used.completion_tokens, used.cached_tokens, used.reasoning_tokens) == (170, 1630, None)


class ThinkingClient(BaseLLMClient):
    """A client of the user's own that returns its model's thinking."""

    def __init__(self) -> None:
        self.kwargs: list[dict[str, JsonValue]] = []

    async def chat(
        self, messages: list[JsonObject], tools: list[JsonObject] | None = None, **kwargs: JsonValue
    ) -> LLMResponse:
        self.kwargs.append(kwargs)
        if len(self.kwargs) == 1:
            usage = TokenUsage(100, 30, 130, reasoning_tokens=20, cached_tokens=64)
            call = ToolCall("c1", "TodoWrite", {"todos": [{"content": "count", "status": "pending"}]})
            return LLMResponse(None, [call], usage, reasoning_content="I should plan first.")
        usage = TokenUsage(150, 10, 160, reasoning_tokens=5)
        return LLMResponse("Done.", [], usage, reasoning_content="The plan is written.")


def test_a_users_client_returns_reasoning_like_a_built_in_provider(project: Path) -> None:
    client = ThinkingClient()
    agent = Agent(llm=client, directory=project, store=False, thinking_level="medium")
    result = agent.run_sync("plan it")
    assert kinds(result.events) == [
        ("loop_start", 0),
        ("reasoning", 1),
        ("action", 1),
        ("todo_update", 1),
        ("observation", 1),
        ("reasoning", 2),
        ("thought", 2),
        ("loop_end", 2),
    ]
    assert [e.data["content"] for e in result.events if e.type == EventType.REASONING] == [
        "I should plan first.",
        "The plan is written.",
    ]
    assistant = result.messages[1]
    assert assistant.role == "assistant" and assistant.parts[0] == ReasoningPart("I should plan first.")
    # the design's thinking_level reaches a client as OpenAI's field
    assert [k.get("reasoning_effort") for k in client.kwargs] == ["medium", "medium"]
    used = result.total_tokens
    assert (used.prompt_tokens, used.completion_tokens, used.total_tokens) == (250, 40, 290)
    assert (used.reasoning_tokens, used.cached_tokens) == (25, 64)


def test_reasoning_events_can_be_left_out(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="4", reasoning="two and two"), Reply(text="4", reasoning="two and two"))
    quiet = Agent("openai/o4-mini", "k", llm.openai_base_url, directory=project, store=False,
                  emit_reasoning_events=False)  # fmt: skip
    assert kinds(quiet.run_sync("2+2?").events) == [("loop_start", 0), ("thought", 1), ("loop_end", 1)]
    # the design's flag, as its programs pass it
    loud = Agent("openai/o4-mini", "k", llm.openai_base_url, directory=project, store=False,
                 thinking_level="high", emit_reasoning_events=True)  # fmt: skip
    events = loud.run_sync("2+2?").events
    assert [e.data["content"] for e in events if e.type == EventType.REASONING] == ["two and two"]
    assert "reasoning_effort" not in llm.requests[0].body
    assert llm.requests[1].body["reasoning_effort"] == "high"


def test_token_usage_adds_as_the_design_does() -> None:
    plain = TokenUsage(10, 5, 15)
    assert (plain.reasoning_tokens, plain.cached_tokens) == (None, None)
    both_none = plain + TokenUsage(1, 1, 2)
    assert (both_none.total_tokens, both_none.reasoning_tokens, both_none.cached_tokens) == (17, None, None)
    mixed = plain + TokenUsage(1, 1, 2, reasoning_tokens=3, cached_tokens=0)
    assert (mixed.reasoning_tokens, mixed.cached_tokens) == (3, 0)
    assert LLMResponse("hi").reasoning_content is None


@pytest.mark.parametrize(
    ("model", "reasoning", "expected"),
    [
        ("openai/gpt-5", "medium", {"reasoning_effort": "medium"}),
        ("openai/gpt-5", 20000, {"reasoning_effort": "high"}),
        ("local/qwen3", 3000, {"reasoning_effort": "low", "thinking_budget_tokens": 3000}),
        (
            "gemini/gemini-2.5-flash",
            800,
            {"extra_body": {"google": {"thinking_config": {"thinking_budget": 800}}}},
        ),
        (
            "anthropic/claude-sonnet-4-20250514",
            "low",
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        ),
        ("anthropic/claude-sonnet-4-20250514", 500, {"thinking": {"type": "enabled", "budget_tokens": 1024}}),
        ("openai/gpt-5", "off", {}),
    ],
)
def test_one_setting_becomes_each_wires_field(
    llm: FakeLLM, project: Path, model: str, reasoning: str | int, expected: JsonObject
) -> None:
    llm.script(Reply(text="ok"))
    base = llm.anthropic_base_url if model.startswith("anthropic/") else llm.openai_base_url
    Agent(model, "k", base, directory=project, store=False, reasoning=reasoning).run_sync("hi")  # type: ignore[arg-type]
    body = llm.requests[0].body
    fields = ("reasoning_effort", "thinking_budget_tokens", "extra_body", "thinking")
    assert {key: body[key] for key in fields if key in body} == expected


def test_an_explicit_wire_option_wins(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="ok"), Reply(text="ok"))
    Agent("openai/gpt-5", "k", llm.openai_base_url, directory=project, store=False,
          reasoning="high", reasoning_effort="minimal").run_sync("hi")  # fmt: skip
    Agent("anthropic/claude-sonnet-4-20250514", "k", llm.anthropic_base_url, directory=project,
          store=False, reasoning="high", thinking={"type": "enabled", "budget_tokens": 3000}).run_sync("hi")  # fmt: skip
    assert llm.requests[0].body["reasoning_effort"] == "minimal"
    assert llm.requests[1].body["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    # llama.cpp's own budget field, accepted as a model keyword of your own server
    llm.script(Reply(text="ok"))
    Agent("local/qwen3", "k", llm.openai_base_url, directory=project, store=False,
          reasoning=9000, thinking_budget_tokens=500).run_sync("hi")  # fmt: skip
    body = llm.requests[2].body
    assert body["thinking_budget_tokens"] == 500 and "reasoning_effort" not in body


def test_bad_settings_are_one_clear_error(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"^Agent\(reasoning=\): expected \"off\", \"low\""):
        Agent("openai/gpt-5", reasoning="extreme", directory=project)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"thinking_level"):
        Agent("openai/gpt-5", thinking_level=0, directory=project)
    with pytest.raises(TypeError, match="reasoning= or thinking_level="):
        Agent("openai/gpt-5", reasoning="high", thinking_level="low", directory=project)


def test_the_renderer_shows_a_steps_thinking(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="4", reasoning="Two plus two.\nThat is four."))
    agent = Agent("openai/o4-mini", "k", llm.openai_base_url, directory=project, store=False)
    lines = [Renderer().render(e) for e in agent.run_stream("2+2?")]
    assert lines[1] == "thinking: Two plus two. …"
    # the design's factory
    assert Event.reasoning(2, "hm").to_dict()["type"] == "reasoning" == EventType.REASONING


def test_the_config_key_reaches_the_request_and_an_agent_overrides_it(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, reasoning="high", provider={"options": {}})
    llm.script(Reply(text="ok"), Reply(text="ok"), Reply(text="ok"))
    done = etcode("run", "hi", cwd=project)
    assert done.returncode == 0, done.stderr
    assert llm.requests[0].body["reasoning_effort"] == "high"
    Agent(directory=project, store=False, reasoning="low").run_sync("hi")
    assert llm.requests[1].body["reasoning_effort"] == "low"
    Agent(directory=project, store=False, reasoning="off").run_sync("hi")
    assert "reasoning_effort" not in llm.requests[2].body


def test_a_providers_configured_option_wins_over_the_config_key(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, "anthropic", provider={"options": {"thinking": {"type": "disabled"}}},
                 reasoning="medium")  # fmt: skip
    llm.script(Reply(text="ok"))
    Agent(directory=project, store=False).run_sync("hi")
    assert llm.requests[0].body["thinking"] == {"type": "disabled"}


@pytest.mark.parametrize("value", ['"extreme"', "0", "true"])
def test_a_bad_config_value_is_one_line_naming_the_key(llm: FakeLLM, project: Path, value: str) -> None:
    write_config(project, llm)
    config = json.loads((project / "etcode.json").read_text(encoding="utf-8"))
    (project / "etcode.json").write_text(
        json.dumps(config)[:-1] + f', "reasoning": {value}}}', encoding="utf-8"
    )
    done = etcode("run", "hi", cwd=project)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "etcode.json: reasoning: expected" in lines[0] and value in lines[0]
    assert "Traceback" not in done.stderr
    assert llm.requests == []


def test_a_tool_call_after_thinking_keeps_the_design_order(llm: FakeLLM, project: Path) -> None:
    """OpenAI-compatible wire: thinking, then a tool call with no text: REASONING, ACTION."""
    (project / "a.txt").write_text("x\n", encoding="utf-8")
    llm.script(
        Reply(reasoning="Read it first.", calls=[Call("ReadFile", {"file_path": "a.txt"})]),
        Reply(text="It says x."),
    )
    agent = Agent("deepseek/deepseek-reasoner", "k", llm.openai_base_url, directory=project, store=False)
    assert kinds(agent.run_sync("what is in a.txt?").events) == [
        ("loop_start", 0),
        ("reasoning", 1),
        ("action", 1),
        ("observation", 1),
        ("thought", 2),
        ("loop_end", 2),
    ]


def test_a_task_subagent_asks_anthropic_for_thinking_not_reasoning_effort(
    llm: FakeLLM, project: Path
) -> None:
    """The child shares its parent's Anthropic provider: its requests take Anthropic's field."""
    llm.script(
        Reply(
            calls=[
                Call("Task", {"description": "find", "prompt": "list the files", "subagent_type": "general"})
            ]
        ),
        Reply(text="child done"),
        Reply(text="parent done"),
    )
    agent = Agent("anthropic/claude-sonnet-4-20250514", "k", llm.anthropic_base_url, directory=project,
                  store=False, reasoning="high", asker=AllowAsker())  # fmt: skip
    result = agent.run_sync("go")
    assert result.text == "parent done", result.error
    child = llm.requests[1].body
    assert "list the files" in json.dumps(child["messages"])
    assert "reasoning_effort" not in child
    assert child["thinking"] == {"type": "enabled", "budget_tokens": 16384}


def test_an_anthropic_provider_passed_in_is_asked_in_its_own_wire(llm: FakeLLM, project: Path) -> None:
    from etcode.provider.factory import make_provider
    from etcode.provider.spec import ProviderSpec

    spec = ProviderSpec(id="anthropic", type="anthropic", base_url=llm.anthropic_base_url,
                        model="claude-sonnet-4-20250514", api_key="k")  # fmt: skip
    llm.script(Reply(text="ok"))
    agent = Agent("anthropic/claude-sonnet-4-20250514", directory=project, store=False,
                  provider=make_provider(spec), reasoning="low")  # fmt: skip
    agent.run_sync("hi")
    body = llm.requests[0].body
    assert "reasoning_effort" not in body and body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


@pytest.mark.parametrize(
    ("model", "field"),
    [("openai/gpt-4o", "reasoning_effort"), ("anthropic/claude-3-5-sonnet-20241022", "thinking")],
)
async def test_a_model_the_catalog_knows_does_not_reason_gets_no_setting(
    llm: FakeLLM, project: Path, model: str, field: str
) -> None:
    """OpenAI answers 400 to reasoning_effort on gpt-4o: nothing is sent, one warning says so."""
    base = llm.anthropic_base_url if model.startswith("anthropic/") else llm.openai_base_url
    llm.script(Reply(text="ok"), Reply(text="again"))
    agent = Agent(model, "k", base, directory=project, store=False, reasoning="high")
    told = []
    try:
        for turn in ("hi", "more"):
            told += [e.message async for e in agent.stream(turn) if isinstance(e, WarningEvent)]
    finally:
        await agent.aclose()
    assert all(field not in r.body for r in llm.requests)
    assert told == [f"reasoning: model {model} does not take it; not sent"]


def test_the_config_key_is_not_sent_to_a_model_that_does_not_reason(llm: FakeLLM, project: Path) -> None:
    """models.dev's ``reasoning: false`` (here the config's override of a hosted model) holds
    the config key back; the same provider's reasoning model still gets it."""
    config = {
        "model": "openai/gpt-5",
        "reasoning": "medium",
        "provider": [
            {
                "id": "openai",
                "baseURL": llm.openai_base_url,
                "apiKey": "k",
                "models": {"gpt-5": {"reasoning": False}},
            }
        ],  # fmt: skip
    }
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    llm.script(Reply(text="ok"), Reply(text="ok"))
    done = etcode("run", "hi", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "reasoning: model openai/gpt-5 does not take it; not sent" in done.stderr
    assert "reasoning_effort" not in llm.requests[0].body
    Agent("openai/o3", directory=project, store=False).run_sync("hi")
    assert llm.requests[1].body["reasoning_effort"] == "medium"
