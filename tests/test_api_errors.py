"""Issue 33, item 5: the errors a program catches. A run whose model fails before answering
anything raises the error from ``run``/``run_sync``/``arun``; once the model answered, the
result carries it (``stop_reason``, ``error``, ``exception``); a limit is carried as a
``LimitExceededError``; ``run_stream`` reports failures as events. Real HTTP against the
fake LLM server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from etcode import (
    Agent,
    AgentResult,
    BaseLLMClient,
    ConfigError,
    EtcodeError,
    EventType,
    LimitExceededError,
    LLMError,
    LLMResponse,
    LoopLimits,
    OutputValidationError,
    ProviderError,
    RetryConfig,
    ToolExecutionError,
    tool,
)
from etcode.util.json_types import JsonObject, JsonValue
from tests.fake_llm import Call, FakeLLM, Fault, Reply


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    raise ToolExecutionError("lookup", f"no entry named {key}")


def make_agent(llm: FakeLLM, project: Path, **settings: object) -> Agent:
    return Agent(
        "openai/test-model",
        "k",
        llm.openai_base_url,
        tools=[add, lookup],
        retry=RetryConfig(max_retries=0),
        directory=project,
        store=False,
        builtin_tools=False,
        **settings,  # type: ignore[arg-type]
    )


def test_the_errors_are_etcode_errors_in_the_designs_shapes() -> None:
    for kind in (
        ConfigError,
        LLMError,
        ProviderError,
        ToolExecutionError,
        LimitExceededError,
        OutputValidationError,
    ):
        assert issubclass(kind, EtcodeError), kind
    assert issubclass(ProviderError, LLMError)  # catching the design's LLMError catches provider failures

    cause = ValueError("rate limit")
    llm_error = LLMError("the API call failed", cause)
    assert (str(llm_error), llm_error.original_error) == ("the API call failed", cause)
    provider_error = ProviderError("openai: 429 slow down", kind="rate_limit", status=429, retryable=True)
    assert (provider_error.kind, provider_error.status, provider_error.retryable) == ("rate_limit", 429, True)
    assert provider_error.original_error is None

    tool_error = ToolExecutionError("search", "connection timeout")
    assert (tool_error.tool_name, tool_error.message) == ("search", "connection timeout")
    assert str(tool_error) == "tool 'search' failed: connection timeout"

    limit = LimitExceededError("max_steps", 10, 10)
    assert (limit.limit_type, limit.limit_value, limit.current_value) == ("max_steps", 10, 10)
    assert str(limit) == "stopped by the max_steps limit: 10 (limit: 10)"


@pytest.mark.parametrize("form", ["run_sync", "run", "arun"])
def test_a_model_that_fails_before_answering_raises_its_error(llm: FakeLLM, project: Path, form: str) -> None:
    llm.script(Fault(status=401, body="bad key"))
    agent = make_agent(llm, project)
    with pytest.raises(ProviderError) as caught:
        if form == "arun":
            asyncio.run(agent.arun("hi"))
        else:
            getattr(agent, form)("hi")
    err = caught.value
    assert (err.kind, err.status, err.retryable) == ("auth", 401, False)
    assert str(err) == "openai: 401 invalid_api_key: bad key"
    assert agent.last_result is not None and agent.last_result.exception is err  # the partial result
    assert agent.last_result.stop_reason == "error"


def test_a_failure_after_the_model_answered_is_carried_in_the_result(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(calls=[Call("add", {"a": 2, "b": 3})]), Fault(status=500, body="down"))
    result = make_agent(llm, project).run_sync("2+3?")
    assert isinstance(result, AgentResult)
    assert (result.stop_reason, result.error, result.steps) == ("error", "openai: 500 server_error: down", 2)
    assert isinstance(result.exception, ProviderError)
    assert (result.exception.kind, result.exception.status) == ("server", 500)
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]  # the work done is kept
    with pytest.raises(ProviderError, match="500"):
        result.raise_for_error()


def test_a_finished_run_carries_no_exception(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="5"))
    result = make_agent(llm, project).run_sync("2+3?")
    assert (result.text, result.stop_reason, result.exception) == ("5", "end_turn", None)
    assert result.raise_for_error() is result


def test_run_stream_reports_the_failure_as_events(llm: FakeLLM, project: Path) -> None:
    llm.script(Fault(status=401, body="bad key"))
    agent = make_agent(llm, project)
    events = list(agent.run_stream("hi"))  # no exception: the stream says it
    assert [e.type for e in events] == [EventType.LOOP_START, EventType.ERROR, EventType.LOOP_END]
    assert events[1].data["kind"] == "auth" and events[1].data["fatal"] is True
    assert events[2].data["stop_reason"] == "error"
    assert agent.last_result is not None and isinstance(agent.last_result.exception, ProviderError)


def test_a_time_limit_is_carried_as_limit_exceeded(llm: FakeLLM, project: Path) -> None:
    llm.script(Fault(hang=True))  # the model never answers: the limit ends the run
    result = make_agent(llm, project, limits=LoopLimits(timeout=0.5)).run_sync("hi")
    assert result.stop_reason == "timeout"
    assert isinstance(result.exception, LimitExceededError)
    assert (result.exception.limit_type, result.exception.limit_value) == ("timeout", 0.5)
    assert isinstance(result.exception.current_value, float) and result.exception.current_value >= 0.5
    with pytest.raises(LimitExceededError, match="timeout"):
        result.raise_for_error()


def test_a_tool_raising_tool_execution_error_tells_the_model_and_the_run_goes_on(
    llm: FakeLLM, project: Path
) -> None:
    llm.script(Reply(calls=[Call("lookup", {"key": "x"})]), Reply(text="no such entry"))
    result = make_agent(llm, project).run_sync("look x up")
    assert (result.text, result.stop_reason, result.exception) == ("no such entry", "end_turn", None)
    sent = [m for m in llm.requests[1].body["messages"] if m["role"] == "tool"]
    assert sent[-1]["content"] == "tool 'lookup' failed: no entry named x"
    observation = next(e for e in result.events if e.type == EventType.OBSERVATION)
    assert observation.data["is_error"] is True


def test_an_answer_cut_off_by_a_failure_is_carried_with_its_text(llm: FakeLLM, project: Path) -> None:
    text = "a fairly long answer that the connection will cut in the middle"
    llm.script(Fault(cut_after=3, reply=Reply(text=text, chunk_size=5)))
    result = make_agent(llm, project).run_sync("hi")  # not raised: there is an answer to return
    assert result.stop_reason == "error" and isinstance(result.exception, ProviderError)
    assert result.text and text.startswith(result.text) and result.text != text


def test_the_workflow_agent_raises_a_failure_that_left_no_answer_too(llm: FakeLLM, project: Path) -> None:
    llm.script(Fault(status=401, body="bad key"))
    agent = make_agent(llm, project, agent="workflow")
    with pytest.raises(ProviderError, match="401"):
        agent.run_sync("hi")
    assert agent.last_result is not None and agent.last_result.stop_reason == "error"


class FailingClient(BaseLLMClient):
    """A client of the user's own whose service gave up (as the design's clients say it)."""

    async def chat(
        self, messages: list[JsonObject], tools: list[JsonObject] | None = None, **kwargs: JsonValue
    ) -> LLMResponse:
        raise LLMError("quota exhausted", ValueError("HTTP 402"))


def test_a_clients_llm_error_is_raised_as_a_provider_error_behind_it(project: Path) -> None:
    agent = Agent(llm=FailingClient(), retry=RetryConfig(max_retries=0), directory=project, store=False)
    with pytest.raises(LLMError) as caught:
        agent.run_sync("hi")
    err = caught.value
    assert isinstance(err, ProviderError) and "quota exhausted" in str(err)
    assert isinstance(err.original_error, LLMError) and str(err.original_error) == "quota exhausted"


def test_a_model_that_cannot_be_resolved_raises_config_error(project: Path) -> None:
    with pytest.raises(ConfigError, match=r'model "llama3": give its provider'):
        Agent("llama3", "k", directory=project, store=False).run_sync("hi")
