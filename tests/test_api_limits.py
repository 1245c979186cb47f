"""Issue 33, item 4: the agent-loop design's limits through the public API, over real HTTP
against the fake LLM server (a client of the test's own where the provider reports no
usage): ``LoopLimits`` (a soft step limit that warns and goes on, a hard one whose last step
answers without tools, the run's token budget, the doom-loop threshold), ``RetryConfig``'s
``base_delay``, and the same settings in ``etcode.json`` for ``etcode run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from etcode import Agent, AllowAsker, EventType, LimitExceededError, LoopLimits, RetryConfig, tool
from etcode.engine.limits import UNREPORTED_MIN_TOKENS
from etcode.provider.chat_client import BaseLLMClient, LLMResponse, ToolCall
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Reply, user_texts

ADDED: list[tuple[int, int]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    ADDED.append((a, b))
    return a + b


def adds(count: int, **reply: Any) -> list[Reply]:
    """``count`` answers that each call ``add`` (different arguments: no doom loop)."""
    return [Reply(calls=[Call("add", {"a": 1, "b": i})], **reply) for i in range(count)]


def make_agent(llm: FakeLLM, project: Path, wire: str = "openai", **kwargs: Any) -> Agent:
    base = llm.openai_base_url if wire == "openai" else llm.anthropic_base_url
    return Agent(
        f"{wire}/test-model",
        "k",
        base,
        tools=[add],
        builtin_tools=False,
        directory=project,
        store=False,
        **kwargs,
    )


# ---- LoopLimits itself ----------------------------------------------------------------


def test_loop_limits_defaults_are_the_designs() -> None:
    limits = LoopLimits()
    assert (limits.max_steps, limits.step_limit_mode, limits.max_tokens, limits.doom_loop_threshold) == (
        None,
        "soft",
        200_000,
        3,
    )
    assert (limits.soft_limit_interval, limits.timeout, limits.max_tool_calls) == (None, None, 64)
    assert (
        "{current_steps}" in limits.soft_limit_prompt and "tools are turned off" in limits.hard_limit_prompt
    )
    assert LoopLimits(max_steps=10).effective_soft_interval == 10
    assert LoopLimits(max_steps=10, soft_limit_interval=5).effective_soft_interval == 5
    # the design's positional order, then etcode's own fields
    assert LoopLimits(20, "hard", 50_000, 5).max_tokens == 50_000


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"step_limit_mode": "sometimes"}, "LoopLimits.step_limit_mode"),
        ({"max_steps": 0}, "LoopLimits.max_steps"),
        ({"max_tokens": -1}, "LoopLimits.max_tokens"),
        ({"doom_loop_threshold": 1}, "LoopLimits.doom_loop_threshold"),
        ({"soft_limit_interval": 0}, "LoopLimits.soft_limit_interval"),
    ],
)
def test_a_bad_limit_is_one_line_naming_the_field(kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as info:
        LoopLimits(**kwargs)
    assert str(info.value).startswith(named + ":") and "\n" not in str(info.value)


# ---- the soft step limit ----------------------------------------------------------------


def test_a_soft_limit_tells_the_model_to_wrap_up_and_the_run_goes_on(llm: FakeLLM, project: Path) -> None:
    llm.script(*adds(5), Reply(text="all added"))
    agent = make_agent(llm, project, limits=LoopLimits(max_steps=2, soft_limit_interval=3))
    events = list(agent.run_stream("add things"))
    soft = [e for e in events if e.type == EventType.SOFT_LIMIT]
    assert [e.step for e in soft] == [2, 5]  # at max_steps, then every soft_limit_interval steps
    assert soft[0].data["reason"] == "step_limit" and soft[0].data["steps"] == 2
    assert "Steps taken on this task so far: 2." in str(soft[0].data["prompt"])
    end = events[-1]
    assert end.type == EventType.LOOP_END and end.data["stop_reason"] == "end_turn"
    assert end.data["content"] == "all added" and end.data["steps"] == 6
    # the prompt went to the model with the next request, as a user message
    assert any("Steps taken on this task so far: 2." in text for text in user_texts(llm.requests[2].body))
    assert not any("Steps taken on this task" in text for text in user_texts(llm.requests[1].body))
    assert any("Steps taken on this task so far: 5." in text for text in user_texts(llm.requests[5].body))


def test_a_library_agent_without_limits_has_no_step_limit(llm: FakeLLM, project: Path) -> None:
    llm.script(*adds(55), Reply(text="done"))
    result = make_agent(llm, project).run_sync("keep adding")
    assert (result.stop_reason, result.steps, result.text) == ("end_turn", 56, "done")
    assert not [e for e in result.events if e.type == EventType.SOFT_LIMIT]


def test_a_library_agent_takes_the_configs_step_limit_softly(llm: FakeLLM, project: Path) -> None:
    """``max_steps`` in etcode.json, no ``limits`` block: the Python API's soft mode (the
    CLI's hard stop for the same file: ``test_the_cli_stops_hard_at_its_configured_step_limit``)."""
    write_config(project, llm, max_steps=2)
    llm.script(*adds(3), Reply(text="done"))
    agent = Agent(tools=[add], builtin_tools=False, directory=project, store=False)
    result = agent.run_sync("add")
    assert (result.stop_reason, result.steps) == ("end_turn", 4)
    assert [e.step for e in result.events if e.type == EventType.SOFT_LIMIT] == [2]


# ---- the hard step limit ----------------------------------------------------------------


def test_a_hard_limit_asks_for_a_last_answer_without_tools(llm: FakeLLM, project: Path) -> None:
    llm.script(*adds(1), Reply(text="Summary: added 1+0; nothing left."))
    agent = make_agent(llm, project, limits=LoopLimits(max_steps=2, step_limit_mode="hard"))
    result = agent.run_sync("add")
    assert (result.stop_reason, result.steps, result.is_error) == ("max_steps", 2, True)
    assert result.text == "Summary: added 1+0; nothing left."
    first, last = (r.body for r in llm.requests)
    assert "tools" in first and "tools" not in last
    assert "step limit of this task is reached" in user_texts(last)[-1]
    end = result.events[-1]
    assert end.data["stop_reason"] == "max_steps" and "without tools" in str(end.data["stop_message"])


def test_a_call_made_anyway_in_the_last_step_is_not_run(llm: FakeLLM, project: Path) -> None:
    """Anthropic wants tools defined while the history holds tool blocks: they stay, with
    ``tool_choice`` none; a model that calls one anyway gets "not run" and the run ends."""
    ADDED.clear()
    llm.script(*adds(2))
    agent = make_agent(llm, project, "anthropic", limits=LoopLimits(max_steps=2, step_limit_mode="hard"))
    result = agent.run_sync("add")
    assert (result.stop_reason, result.steps) == ("max_steps", 2)
    assert ADDED == [(1, 0)]  # the second call did not run
    last = llm.requests[1].body
    assert last["tool_choice"] == {"type": "none"} and last["tools"]
    assert "tool_choice" not in llm.requests[0].body
    answered = result.messages[-1].tool_results
    assert answered and answered[0].is_error and answered[0].output.startswith("Not run: the step limit")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_last_step_drops_a_users_tool_choice(llm: FakeLLM, project: Path, wire: str) -> None:
    """OpenAI refuses ``tool_choice``/``parallel_tool_calls`` without tools; Anthropic's last
    step is ``tool_choice`` none, whatever the user asked for the others."""
    llm.script(*adds(1), Reply(text="Summary."))
    options: dict[str, Any] = (
        {"tool_choice": "required", "parallel_tool_calls": False}
        if wire == "openai"
        else {"tool_choice": {"type": "any"}}
    )
    agent = make_agent(llm, project, wire, limits=LoopLimits(max_steps=2, step_limit_mode="hard"), **options)
    assert agent.run_sync("add").text == "Summary."
    first, last = (r.body for r in llm.requests)
    assert {key: first[key] for key in options} == options
    if wire == "openai":
        assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(last)
    else:
        assert last["tool_choice"] == {"type": "none"} and last["tools"]


def test_a_users_client_gets_no_tool_choice_without_tools(project: Path) -> None:
    seen: list[tuple[bool, set[str]]] = []

    class Records(BaseLLMClient):
        async def chat(
            self, messages: list[JsonObject], tools: list[JsonObject] | None = None, **kwargs: JsonValue
        ) -> LLMResponse:
            seen.append((tools is not None, set(kwargs)))
            return LLMResponse("", [ToolCall(f"c{len(seen)}", "add", {"a": 1, "b": len(seen)})])

    agent = Agent(llm=Records(), tools=[add], builtin_tools=False, directory=project, store=False,
                  limits=LoopLimits(max_steps=2, step_limit_mode="hard"), tool_choice="required")  # fmt: skip
    agent.run_sync("add")
    assert [(with_tools, "tool_choice" in kwargs) for with_tools, kwargs in seen] == [
        (True, True),
        (False, False),
    ]


def test_the_stop_messages_count_one_step_in_the_singular(llm: FakeLLM, project: Path) -> None:
    from etcode import Renderer

    llm.script(Reply(text="Summary."))
    hard = make_agent(llm, project, limits=LoopLimits(max_steps=1, step_limit_mode="hard")).run_sync("add")
    assert hard.events[-1].data["stop_message"] == (
        "Stopped at the step limit (1 step); the last answer was asked for without tools."
    )
    llm.script(*adds(1, usage=(10, 60)))
    budget = make_agent(llm, project, limits=LoopLimits(max_tokens=50)).run_sync("add")
    assert str(budget.events[-1].data["stop_message"]).startswith("Stopped after 1 step: ")
    llm.script(*adds(1), Reply(text="done"))
    soft = make_agent(llm, project, limits=LoopLimits(max_steps=1)).run_sync("add")
    lines = [Renderer().render(e) for e in soft.events if e.type == EventType.SOFT_LIMIT]
    assert lines == ["warning: soft step limit after 1 step (step_limit): the model was asked to wrap up"]


# ---- the run's token budget ---------------------------------------------------------------


def test_the_token_budget_stops_the_run_with_its_own_reason(llm: FakeLLM, project: Path) -> None:
    llm.script(*adds(5, usage=(100, 60)), Reply(text="never"))
    agent = make_agent(llm, project, limits=LoopLimits(max_tokens=100), max_tokens=50)
    result = agent.run_sync("add")
    assert (result.stop_reason, result.steps, result.is_error) == ("token_limit", 2, True)
    assert result.total_tokens.completion_tokens == 120
    # Agent(max_tokens=) is each answer's cap, sent with every request; the budget is not sent
    assert [r.body["max_completion_tokens"] for r in llm.requests] == [50, 50]
    end = result.events[-1]
    assert end.data["stop_reason"] == "token_limit" and "max_tokens 100" in str(end.data["stop_message"])
    assert result.to_dict()["stop_reason"] == "token_limit" and result.to_dict()["is_error"] is True


def test_the_budget_counts_output_tokens_only(llm: FakeLLM, project: Path) -> None:
    llm.script(*adds(2, usage=(5_000, 10)), Reply(text="fine"))
    result = make_agent(llm, project, limits=LoopLimits(max_tokens=100)).run_sync("add")
    assert (result.stop_reason, result.text) == ("end_turn", "fine")


class CountsNothing(BaseLLMClient):
    """A client that reports no usage and never stops calling a tool."""

    model = "counts-nothing"

    def __init__(self) -> None:
        self.calls = 0

    async def chat(
        self, messages: list[JsonObject], tools: list[JsonObject] | None = None, **kwargs: JsonValue
    ) -> LLMResponse:
        self.calls += 1
        return LLMResponse("", [ToolCall(f"c{self.calls}", "add", {"a": self.calls, "b": 1})])


def test_without_a_step_limit_the_budget_still_ends_the_run(project: Path) -> None:
    """No step limit and a client that counts no tokens: each answer counts at least 256
    tokens (its estimate, about four characters a token, is far less for a small call), so
    the budget ends the run within a known number of calls: 4 for 1,000 tokens (782 for the
    default 200,000); the error and the result carry the tokens counted, not the 0 reported."""
    client = CountsNothing()
    agent = Agent(llm=client, tools=[add], builtin_tools=False, directory=project, store=False,
                  limits=LoopLimits(max_tokens=1000))  # fmt: skip
    result = agent.run_sync("add forever")
    assert (result.stop_reason, client.calls, result.steps) == ("token_limit", 4, 4)
    assert result.usage.output_tokens == 0 and result.counted_output_tokens == 4 * UNREPORTED_MIN_TOKENS
    error = result.exception
    assert isinstance(error, LimitExceededError)
    assert (error.limit_type, error.limit_value, error.current_value) == ("token_limit", 1000, 1024)
    assert str(error) == "stopped by the token_limit limit: 1024 (limit: 1000)"
    assert -(-LoopLimits().max_tokens // UNREPORTED_MIN_TOKENS) == 782  # type: ignore[operator]


def test_a_task_subagent_spends_from_the_parents_budget(llm: FakeLLM, project: Path) -> None:
    """The child gets what is left of the run's budget (1,000 - 300) and its tokens count in
    the parent's: the child stops at its 700, the parent at 300 + 800."""
    todo = Call("TodoWrite", {"todos": [{"content": "look", "status": "pending"}]})
    task = Call("Task", {"description": "look", "prompt": "look around", "subagent_type": "general"})
    llm.script(
        Reply(calls=[task], usage=(10, 300)),
        Reply(calls=[todo], usage=(10, 400)),  # the child: 400 of its 700
        Reply(calls=[todo], usage=(10, 400)),  # 800: the child's budget is spent
        Reply(text="child done"),
        Reply(text="parent done"),
    )
    limits = LoopLimits(max_steps=5, step_limit_mode="hard", max_tokens=1000)
    agent = Agent("openai/test-model", "k", llm.openai_base_url, directory=project, store=False,
                  asker=AllowAsker(), limits=limits)  # fmt: skip
    result = agent.run_sync("go")
    assert len(llm.requests) == 3
    answer = result.messages[2].tool_results[0]
    assert answer.name == "Task" and "stopped early (token_limit" in answer.output
    assert (result.stop_reason, result.counted_output_tokens) == ("token_limit", 1100)
    assert result.usage.output_tokens == 1100  # the usage counts the child's too
    assert isinstance(result.exception, LimitExceededError) and result.exception.current_value == 1100


def test_a_task_subagent_keeps_its_parents_limits(llm: FakeLLM, project: Path) -> None:
    """A hard step limit of the parent's is the child's too (no ``max_steps`` in the config):
    the child's second call is its summary, without tools."""
    todo = Call("TodoWrite", {"todos": [{"content": "look", "status": "pending"}]})
    task = Call("Task", {"description": "look", "prompt": "look around", "subagent_type": "general"})
    llm.script(
        Reply(calls=[task]), Reply(calls=[todo]), Reply(text="child summary"), Reply(text="parent done")
    )
    agent = Agent("openai/test-model", "k", llm.openai_base_url, directory=project, store=False,
                  asker=AllowAsker(), limits=LoopLimits(max_steps=2, step_limit_mode="hard"))  # fmt: skip
    result = agent.run_sync("go")
    assert ["tools" in r.body for r in llm.requests] == [True, True, False, False]
    answer = result.messages[2].tool_results[0]
    assert "stopped early (max_steps" in answer.output and "child summary" in answer.output
    assert result.text == "parent done"


# ---- the doom-loop threshold --------------------------------------------------------------


def repeated_warning(body: dict[str, Any]) -> bool:
    return any(
        "identical arguments" in str(m.get("content")) for m in body["messages"] if m["role"] == "tool"
    )


@pytest.mark.parametrize(("threshold", "warned_in"), [(2, 2), (3, 3)])
def test_the_doom_loop_threshold_is_a_setting(
    llm: FakeLLM, project: Path, threshold: int, warned_in: int
) -> None:
    same = [Reply(calls=[Call("add", {"a": 2, "b": 2})]) for _ in range(3)]
    llm.script(*same, Reply(text="stuck"))
    make_agent(llm, project, limits=LoopLimits(doom_loop_threshold=threshold)).run_sync("add")
    # request k carries the results of the first k-1 calls
    assert [repeated_warning(r.body) for r in llm.requests][1:] == [n >= warned_in for n in (1, 2, 3)]


# ---- RetryConfig ----------------------------------------------------------------------------


def test_retry_config_takes_the_designs_base_delay(llm: FakeLLM, project: Path) -> None:
    assert RetryConfig(3, base_delay=0.25).initial_delay == 0.25
    assert RetryConfig(initial_delay=0.125).base_delay == 0.125
    assert RetryConfig().base_delay == 0.5 and RetryConfig().max_retries == 2
    with pytest.raises(TypeError, match="initial_delay or base_delay"):
        RetryConfig(initial_delay=1, base_delay=1)
    llm.script(Fault(status=503, body="busy"), Reply(text="ok"))
    agent = make_agent(llm, project, retry=RetryConfig(max_retries=1, base_delay=0.01))
    result = agent.run_sync("hi")
    assert result.text == "ok"
    retries = [e for e in result.events if e.type == EventType.ERROR and e.data.get("kind") == "retry"]
    assert len(retries) == 1 and float(str(retries[0].data["delay"])) <= 0.0125 + 1e-9


# ---- the same settings in etcode.json, through `etcode run` --------------------------------


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_the_cli_stops_hard_at_its_configured_step_limit(llm: FakeLLM, project: Path) -> None:
    """The front ends' hard limit: ``max_steps`` calls with tools, then (the last one still
    called tools) one more without them, for the summary."""
    write_config(project, llm, max_steps=2)
    llm.script(*[Reply(calls=[Call("TodoWrite", {"todos": []})]) for _ in range(2)], Reply(text="Summary."))
    proc = etcode("run", "--format", "json", "go", cwd=project)
    assert proc.returncode == 1, proc.stderr
    lines = json_lines(proc.stdout)
    assert lines[-1]["stop_reason"] == "max_steps" and lines[-1]["steps"] == 3
    assert lines[-1]["result"] == "Summary."
    assert not [line for line in lines if line["type"] == "soft_limit"]
    assert ["tools" in r.body for r in llm.requests] == [True, True, False]


def test_the_cli_answers_plainly_at_its_last_step(llm: FakeLLM, project: Path) -> None:
    """``--max-steps 1`` and a question the model answers without tools: the answer, exit 0
    (the one call had its tools: an agent with ``steps: 1`` can still use one)."""
    write_config(project, llm)
    llm.script(Reply(text="4"))
    proc = etcode("run", "--max-steps", "1", "what is 2+2", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "4" and "Stopped" not in proc.stderr
    assert len(llm.requests) == 1 and "tools" in llm.requests[0].body
    assert "step limit of this task is reached" not in json.dumps(llm.requests[0].body["messages"])


def test_the_cli_asks_one_summary_after_tool_calls_at_the_last_step(llm: FakeLLM, project: Path) -> None:
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    write_config(project, llm)
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "a.txt"})]), Reply(text="Read a.txt: alpha."))
    proc = etcode("run", "--max-steps", "1", "read a.txt", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert "Read a.txt: alpha." in proc.stdout
    assert "Stopped at the step limit (1 step); the last answer was asked for without tools." in proc.stderr
    first, summary = (r.body for r in llm.requests)
    assert "tools" in first and "tools" not in summary
    assert "alpha" in json.dumps(summary["messages"])  # the tool ran at step 1
    assert "step limit of this task is reached" in user_texts(summary)[-1]


def test_the_cli_soft_limit_and_budget_from_config(llm: FakeLLM, project: Path) -> None:
    limits = {"step_limit_mode": "soft", "max_tokens": 150}
    write_config(project, llm, max_steps=1, limits=limits)
    llm.script(*[Reply(calls=[Call("TodoWrite", {"todos": []})], usage=(10, 60)) for _ in range(4)])
    proc = etcode("run", "--format", "json", "go", cwd=project)
    assert proc.returncode == 1, proc.stderr
    lines = json_lines(proc.stdout)
    soft = [line for line in lines if line["type"] == "soft_limit"]
    assert [line["steps"] for line in soft] == [1, 2]
    assert soft[0]["reason"] == "step_limit" and "Steps taken on this task so far: 1." in soft[0]["prompt"]
    result = lines[-1]
    assert (result["stop_reason"], result["is_error"], result["steps"]) == ("token_limit", True, 3)
    llm.script(*[Reply(calls=[Call("TodoWrite", {"todos": []})], usage=(10, 60)) for _ in range(3)])
    plain = etcode("run", "go", cwd=project)  # the plain renderer: one warning line per reminder
    assert plain.stderr.count("warning: soft step limit: ") == 2
    assert "warning: soft step limit: 1 step taken; the model was asked to wrap up" in plain.stderr
    assert "limit: max_tokens 150 for the run" in plain.stderr


def test_the_cli_retry_settings_from_config(llm: FakeLLM, project: Path) -> None:
    """``retry`` in etcode.json takes RetryConfig's keys (``base_delay`` or ``initial_delay``,
    ``max_delay``, ``max_retry_after``); both delay names at once is one error line."""
    write_config(project, llm, retry={"max_retries": 1, "base_delay": 0.01, "max_delay": 0.02})
    llm.script(Fault(status=503, body="busy"), Reply(text="ok"))
    proc = etcode("run", "--format", "json", "hi", cwd=project)
    assert proc.returncode == 0, proc.stderr
    retries = [line for line in json_lines(proc.stdout) if line["type"] == "retry"]
    assert len(retries) == 1 and float(retries[0]["delay"]) <= 0.0125 + 1e-9, retries
    write_config(project, llm, retry={"initial_delay": 1, "base_delay": 1})
    bad = etcode("run", "hi", cwd=project)
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "retry" in bad.stderr and "initial_delay or base_delay" in bad.stderr


def test_a_cli_subagent_keeps_its_own_steps_and_the_front_ends_hard_limit(
    llm: FakeLLM, project: Path
) -> None:
    """``etcode run``: a subagent with ``steps: 1`` has the tools at its step 1 and, having
    called one, answers once more without them; the parent goes on with its answer."""
    write_config(project, llm, max_steps=5, agent={"general": {"steps": 1}})
    todo = Call("TodoWrite", {"todos": [{"content": "look", "status": "pending"}]})
    task = Call("Task", {"description": "look", "prompt": "look around", "subagent_type": "general"})
    llm.script(
        Reply(calls=[task]), Reply(calls=[todo]), Reply(text="child summary"), Reply(text="parent done")
    )
    proc = etcode("run", "--format", "json", "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json_lines(proc.stdout)[-1]["result"] == "parent done"
    assert ["tools" in r.body for r in llm.requests] == [True, True, False, True]


def test_a_bad_limits_key_is_one_line_naming_it(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, limits={"step_limit_mode": "sometimes"})
    proc = etcode("run", "go", cwd=project)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "limits.step_limit_mode" in errors[0]


def test_max_steps_null_removes_the_clis_step_limit(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, max_steps=None)
    llm.script(*[Reply(calls=[Call("TodoWrite", {"todos": []})]) for _ in range(52)], Reply(text="done"))
    proc = etcode("run", "--format", "json", "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    result = json_lines(proc.stdout)[-1]
    assert (result["stop_reason"], result["steps"], result["result"]) == ("end_turn", 53, "done")
