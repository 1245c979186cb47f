"""The ReAct loop against an in-process scripted provider (no HTTP)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from etcode.contract import events as ev
from etcode.engine.limits import LoopLimits
from etcode.engine.loop import AgentLoop
from etcode.engine.settings import LoopSettings
from etcode.provider.errors import ProviderError
from etcode.provider.types import Message, StreamEnd, TextPart, Usage
from etcode.tools.base import ToolContext, ToolError, tool
from etcode.tools.registry import ToolRegistry
from tests.scripted import Answer, ScriptedProvider


@tool(read_only=True)
async def slow_read(name: str, seconds: float = 0.3) -> str:
    """Pretend to read something slowly.

    Args:
        name: what to read
        seconds: how long it takes
    """
    await asyncio.sleep(seconds)
    return f"content of {name}"


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


@tool
def refuse() -> str:
    """Fails the polite way."""
    raise ToolError("not today")


@tool
async def hang(ctx: ToolContext) -> str:
    """Never finishes."""
    await asyncio.sleep(3600)
    return "unreachable"


def make_loop(
    tmp_path: Path, provider: ScriptedProvider, *tools, limits: LoopLimits | None = None, **more: Any
) -> AgentLoop:
    settings = LoopSettings(
        provider=provider,
        model="m",
        system=["You are a test."],
        tools=ToolRegistry(tools),
        directory=tmp_path,
        worktree=tmp_path,
        session_id="ses_test",
        limits=limits or LoopLimits(),
        **more,
    )
    return AgentLoop(settings, [], Message.user("go"))


async def collect(loop: AgentLoop) -> list[ev.Event]:
    return [event async for event in loop.events()]


def assert_every_call_answered(messages: list[Message]) -> None:
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            answered = {r.call_id for r in messages[i + 1].tool_results}
            assert answered == {c.id for c in message.tool_calls}


async def test_plain_answer(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, ScriptedProvider(Answer("Hello there")))
    events = await collect(loop)
    assert loop.result is not None
    assert loop.result.text == "Hello there"
    assert loop.result.stop_reason == "end_turn"
    assert loop.result.steps == 1
    assert "".join(e.text for e in events if isinstance(e, ev.TextDeltaEvent)).strip() == "Hello there"
    assert isinstance(events[-1], ev.DoneEvent)
    assert events[-1].result["result"] == "Hello there"


async def test_two_step_tool_loop(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer("Let me shout.", [("shout", {"text": "hi"})]), Answer("Done: HI"))
    loop = make_loop(tmp_path, provider, shout)
    events = await collect(loop)
    assert loop.result.text == "Done: HI"
    assert loop.result.steps == 2
    assert loop.result.usage.input_tokens == 20
    second_request = provider.requests[1]
    tool_message = second_request.messages[-1]
    assert tool_message.role == "tool"
    assert tool_message.tool_results[0].output == "HI"
    starts = [e for e in events if isinstance(e, ev.ToolCallStart)]
    results = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert [s.name for s in starts] == ["shout"] and starts[0].summary == "hi"
    assert results[0].summary == "HI" and not results[0].is_error


async def test_parallel_read_only_calls_run_concurrently_and_keep_order(tmp_path: Path) -> None:
    in_flight = 0
    peak = 0
    all_started = asyncio.Event()

    @tool(read_only=True)
    async def gated_read(name: str, seconds: float) -> str:
        """Read something; finishes only once all four reads are running at the same time.

        Args:
            name: what to read
            seconds: how long it takes after that
        """
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if peak == 4:
            all_started.set()
        # One at a time, the first read would wait here for ever: the limit ends the test.
        await asyncio.wait_for(all_started.wait(), 30)
        await asyncio.sleep(seconds)  # finishing in reverse order: results keep call order
        in_flight -= 1
        return f"content of {name}"

    calls = [("gated_read", {"name": f"f{i}", "seconds": 0.2 - i * 0.05}) for i in range(4)]
    provider = ScriptedProvider(Answer("", calls), Answer("ok"))
    loop = make_loop(tmp_path, provider, gated_read)
    await collect(loop)
    assert peak == 4
    outputs = [r.output for r in provider.requests[1].messages[-1].tool_results]
    assert outputs == [f"content of f{i}" for i in range(4)]


async def test_write_calls_run_alone(tmp_path: Path) -> None:
    order: list[str] = []

    @tool
    async def write(tag: str) -> str:
        """A non-read-only tool."""
        order.append(f"start {tag}")
        await asyncio.sleep(0.05)
        order.append(f"end {tag}")
        return tag

    provider = ScriptedProvider(Answer("", [("write", {"tag": "a"}), ("write", {"tag": "b"})]), Answer("ok"))
    await collect(make_loop(tmp_path, provider, write))
    assert order == ["start a", "end a", "start b", "end b"]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (("nope", {}), "Unknown tool 'nope'"),
        (("shout", "{not json"), "not a JSON object"),
        (("shout", {"wrong": 1}), "Invalid arguments for shout"),
        (("explode", {}), "explode failed: RuntimeError: kaboom"),
        (("refuse", {}), "not today"),
    ],
)
async def test_bad_calls_become_error_results_and_the_loop_goes_on(tmp_path: Path, call, expected) -> None:
    provider = ScriptedProvider(Answer("", [call]), Answer("recovered"))
    loop = make_loop(tmp_path, provider, shout, explode, refuse)
    events = await collect(loop)
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.is_error and expected in result.output
    assert loop.result.text == "recovered" and loop.result.stop_reason == "end_turn"
    errors = [e for e in events if isinstance(e, ev.ToolResultEvent) and e.is_error]
    assert len(errors) == 1


async def test_max_steps(tmp_path: Path) -> None:
    provider = ScriptedProvider(*[Answer("again", [("shout", {"text": "x"})]) for _ in range(5)])
    loop = make_loop(tmp_path, provider, shout, limits=LoopLimits(max_steps=2, step_limit_mode="hard"))
    events = await collect(loop)
    assert loop.result.stop_reason == "max_steps"
    assert loop.result.steps == 2
    assert loop.result.is_error
    assert any(isinstance(e, ev.StoppedEvent) and e.reason == "max_steps" for e in events)
    assert_every_call_answered(loop.result.messages)


async def test_interrupt_during_tools_answers_every_call(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer("working", [("hang", {}), ("shout", {"text": "later"})]))
    loop = make_loop(tmp_path, provider, hang, shout)
    events: list[ev.Event] = []
    async for event in loop.events():
        events.append(event)
        if isinstance(event, ev.ToolCallStart) and event.name == "hang":
            asyncio.get_running_loop().call_later(0.05, loop.interrupt)
    assert loop.result.stop_reason == "interrupted"
    assert_every_call_answered(loop.result.messages)
    results = loop.result.messages[-1].tool_results
    assert [r.is_error for r in results] == [True, True]
    assert "interrupted" in results[0].output and "not run" in results[1].output
    assert loop.result.text == "working"


async def test_interrupt_while_streaming_keeps_partial_text(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer("one two three four five six", delay=0.05))
    loop = make_loop(tmp_path, provider)
    async for event in loop.events():
        if isinstance(event, ev.TextDeltaEvent) and event.text.startswith("two"):
            loop.interrupt()
    assert loop.result.stop_reason == "interrupted"
    assert loop.result.text.startswith("one two")
    assert "six" not in loop.result.text


async def test_wall_clock_timeout(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer("", [("hang", {})]))
    loop = make_loop(tmp_path, provider, hang, limits=LoopLimits(timeout=0.2))
    started = time.perf_counter()
    await collect(loop)
    assert time.perf_counter() - started < 2
    assert loop.result.stop_reason == "timeout"
    assert_every_call_answered(loop.result.messages)


async def test_provider_error_ends_the_run_with_an_error(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer(error=ProviderError("anthropic: 401 invalid x-api-key", kind="auth")))
    loop = make_loop(tmp_path, provider)
    events = await collect(loop)
    assert loop.result.stop_reason == "error"
    assert loop.result.error == "anthropic: 401 invalid x-api-key"
    assert any(isinstance(e, ev.ErrorEvent) and e.kind == "auth" for e in events)


async def test_step_hook_sees_every_finished_step(tmp_path: Path) -> None:
    seen: list[int] = []

    async def on_step(messages: list[Message]) -> None:
        seen.append(len(messages))

    provider = ScriptedProvider(Answer("", [("shout", {"text": "a"})]), Answer("end"))
    loop = make_loop(tmp_path, provider, shout, on_step=on_step)
    await collect(loop)
    assert seen == [3, 4]  # user, assistant+call, tool result | final assistant


class _FailingStore:
    """A recorder whose store fails on the second checkpoint (a full disk, say)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def checkpoint(self, messages: list[Message]) -> None:
        self.calls.append(f"checkpoint {len(messages)}")
        if sum(call.startswith("checkpoint") for call in self.calls) == 2:
            from etcode.util.errors import EtcodeError

            raise EtcodeError("disk full")

    async def batch_started(self, messages: list[Message], reason: str) -> None:
        self.calls.append("batch_started")

    async def step_finished(self, step: int, usage: object, cost: float | None) -> None:
        self.calls.append(f"step_finished {step}")

    async def usage_added(self, usage: object, cost: float | None, model: str) -> None:
        self.calls.append("usage_added")


async def test_a_failing_store_is_one_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer("", [("shout", {"text": "hi"})]), Answer("Done: HI"))
    store = _FailingStore()
    loop = make_loop(tmp_path, provider, shout, recorder=store)
    events = await collect(loop)
    warnings = [e.message for e in events if isinstance(e, ev.WarningEvent)]
    assert warnings == ["the session is no longer being saved: disk full"]
    # Stored up to the failure (the prompt, the first step, the answer), nothing asked after.
    assert store.calls == ["checkpoint 1", "step_finished 1", "checkpoint 2"]
    assert (
        loop.result is not None and loop.result.stop_reason == "end_turn" and loop.result.text == "Done: HI"
    )
    assert loop._record.recorder is None  # recording ended for the run


# ---- the ways a run ends (each still ends with one DoneEvent) ---------------------------


class _CutProvider:
    """Answers once, cut off at the output limit."""

    id = "cut"

    async def stream(self, request: object) -> AsyncIterator[StreamEnd]:
        yield StreamEnd(Message("assistant", [TextPart("half an ans")]), Usage(10, 5), "max_tokens")


async def test_an_answer_cut_at_the_output_limit_stops_the_run_and_says_so(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, _CutProvider(), max_tokens=7)
    events = await collect(loop)
    stopped = [e for e in events if isinstance(e, ev.StoppedEvent)]
    assert [s.reason for s in stopped] == ["max_tokens"] and "(max_tokens 7)" in stopped[0].message
    assert loop.result is not None and loop.result.stop_reason == "max_tokens"
    assert [type(e) for e in events[-3:]] == [ev.StepFinish, ev.StoppedEvent, ev.DoneEvent]


class _InterruptingWindow:
    """A context window whose compaction check is where the user interrupts."""

    auto = False

    def __init__(self) -> None:
        self.loop: AgentLoop | None = None

    def needs_compaction(self, system: object, tools: object, messages: object) -> None:
        assert self.loop is not None
        self.loop.interrupt()


async def test_an_interrupt_while_compacting_ends_the_run_before_the_model_is_asked(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer("never asked"))
    window = _InterruptingWindow()
    loop = make_loop(tmp_path, provider, window=window)
    window.loop = loop
    events = await collect(loop)
    assert provider.requests == [] and not any(isinstance(e, ev.StepStart) for e in events)
    assert loop.result is not None and loop.result.stop_reason == "interrupted"
    assert [type(e) for e in events[-2:]] == [ev.StoppedEvent, ev.DoneEvent]


class _BreakingStore(_FailingStore):
    """A recorder that breaks (not a store error) on the checkpoint that ends the run."""

    async def checkpoint(self, messages: list[Message]) -> None:
        self.calls.append(f"checkpoint {len(messages)}")
        if sum(call.startswith("checkpoint") for call in self.calls) == 3:
            raise RuntimeError("disk gone")


async def test_a_failure_saving_the_end_of_the_run_is_a_warning_and_the_run_still_ends(
    tmp_path: Path,
) -> None:
    store = _BreakingStore()
    loop = make_loop(tmp_path, ScriptedProvider(Answer("Hello")), recorder=store)
    events = await collect(loop)
    assert store.calls == ["checkpoint 1", "step_finished 1", "checkpoint 2", "checkpoint 2"]
    warnings = [e.message for e in events if isinstance(e, ev.WarningEvent)]
    assert warnings == ["the last steps may not be saved: internal error: RuntimeError: disk gone"]
    assert loop.result is not None and loop.result.stop_reason == "end_turn" and loop.result.text == "Hello"
    assert isinstance(events[-1], ev.DoneEvent) and sum(isinstance(e, ev.DoneEvent) for e in events) == 1
