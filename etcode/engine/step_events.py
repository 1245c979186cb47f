"""The step-level view of a run, derived from the detailed stream: the one place it is made.

``loop_events(agent.stream(task), task)`` turns etcode's events (text deltas, tool calls,
usage, retries...) into :class:`~etcode.contract.events.LoopEvent` s (events of the same
vocabulary, :mod:`etcode.contract.events`): one ``thought`` per step, an ``action`` and an
``observation`` per tool call, a ``reasoning`` per step whose model thought aloud, and
``loop_start``/``loop_end`` around the run. The
design's data keys are all there; some events carry more (marked ``+``).

======================  ===================  ==============================================
etcode event            LoopEvent            data
======================  ===================  ==============================================
SessionStart            LOOP_START (step 0)  task, +session_id, +model, +agent
StepStart               (none)               the step number: steps seen so far in the run
TextDeltaEvent          THOUGHT              content: the step's text, one event per step,
                                             sent before the step's first action, at
                                             StepStart/StepFinish/Done and before any other
                                             event; whitespace-only text is dropped
RoleTextDelta           THOUGHT              content, +role (the workflow's planner,
                                             executor, verifier); a new role flushes
ReasoningDeltaEvent     REASONING            content: the step's thinking (reasoning_content,
                                             Anthropic thinking), one event per step, sent
                                             right before that step's THOUGHT (or first
                                             ACTION); whitespace-only is dropped; none
                                             with ``reasoning=False``
ToolCallStart           ACTION               tool, args (the params), +summary, +call_id
ToolResultEvent         OBSERVATION          tool, result (the output the model saw),
                                             duration (monotonic seconds since its ACTION),
                                             +summary, +is_error, +call_id
TodoUpdate              TODO_UPDATE          todos (in etcode's order: while the TodoWrite
                                             call runs, so before its OBSERVATION); that
                                             call's ACTION and OBSERVATION have the design's
                                             tool="todo_write" (a design renderer hides it),
                                             +etcode_name="TodoWrite" (contract/tool_names)
ErrorEvent              ERROR                error, fatal=True, +kind
WarningEvent            ERROR                error, fatal=False, +kind="warning"
RetryEvent              ERROR                error ("retrying in 2.0s (attempt 1): ..."),
                                             fatal=False, +kind="retry", +attempt, +delay
SoftLimitEvent          SOFT_LIMIT           reason ("step_limit"), prompt (the text the
                                             model was given), +steps; the run goes on
StoppedEvent            (on LOOP_END)        +stop_message on LOOP_END (see below)
DoneEvent               LOOP_END             stop_reason, content (the final text),
                                             messages=[], +steps, +usage, +todos, +error,
                                             +stop_message
anything else           (dropped)            usage, progress, subagents,
                                             compaction, workflow phases and verdicts
======================  ===================  ==============================================

``SOFT_LIMIT`` is a soft step limit (``LoopLimits(step_limit_mode="soft")``): the model
was told to wrap up and the run goes on. etcode's ``StoppedEvent`` (a hard step limit, the
token budget, the time limit, an interrupt, an answer cut at max tokens) means the run has
ended: its message rides on ``LOOP_END`` as ``stop_message``, beside ``stop_reason``
(etcode's: ``end_turn``, ``max_tokens``, ``max_steps``, ``token_limit``, ``timeout``,
``interrupted``, ``error``), as the design does for its hard limits. ``messages`` is empty here; ``Agent.arun_stream`` fills in the conversation.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from etcode.contract import events as ev
from etcode.contract.events import LoopEvent
from etcode.contract.tool_names import step_tool
from etcode.util.json_types import JsonObject

__all__ = ["loop_events"]


class _Converter:
    """The state of one conversion: the step, the text not yet sent, the running calls."""

    def __init__(self, task: str, reasoning: bool = True) -> None:
        self.task = task
        self.step = 0
        self.emit_reasoning = reasoning
        self.reasoning: list[str] = []  # the step's thinking not yet sent
        self.text: list[str] = []
        self.role: str | None = None  # whose text is buffered (None: the agent's own)
        self.started: dict[str, float] = {}  # call_id -> monotonic time of its ACTION
        self.stop_message = ""

    def flush(self) -> list[LoopEvent]:
        """The buffered thinking as one REASONING and text as one THOUGHT (none of either
        if it is only whitespace)."""
        thinking, self.reasoning = "".join(self.reasoning), []
        out = [LoopEvent.reasoning(self.step, thinking)] if thinking.strip() else []
        content = "".join(self.text)
        role, self.text, self.role = self.role, [], None
        if not content.strip():
            return out
        extra = {"role": role} if role is not None else {}
        return [*out, LoopEvent.thought(self.step, content, **extra)]

    def buffer(self, text: str, role: str | None) -> list[LoopEvent]:
        out = self.flush() if self.text and role != self.role else []
        self.text.append(text)
        self.role = role
        return out

    def convert(self, event: ev.Event) -> list[LoopEvent]:
        """What ``event`` becomes (often nothing; pending text comes first)."""
        if isinstance(event, ev.TextDeltaEvent):
            return self.buffer(event.text, None)
        if isinstance(event, ev.RoleTextDelta):
            return self.buffer(event.text, event.role)
        if isinstance(event, ev.ReasoningDeltaEvent):
            if self.emit_reasoning:
                self.reasoning.append(event.text)
            return []
        if isinstance(event, ev.StepStart):
            out = self.flush()
            self.step += 1
            return out
        if isinstance(event, ev.StepFinish):
            return self.flush()
        made = self._event(event)
        return [*self.flush(), made] if made is not None else []

    def _event(self, event: ev.Event) -> LoopEvent | None:  # noqa: PLR0911 - one branch per kind
        step = self.step
        if isinstance(event, ev.SessionStart):
            return LoopEvent.loop_start(
                self.task, session_id=event.session_id, model=event.model, agent=event.agent
            )
        if isinstance(event, ev.ToolCallStart):
            self.started[event.call_id] = time.monotonic()
            tool, extra = step_tool(event.name)
            return LoopEvent.action(
                step, tool, event.params, summary=event.summary, call_id=event.call_id, **extra
            )
        if isinstance(event, ev.ToolResultEvent):
            began = self.started.pop(event.call_id, None)
            duration = max(0.0, time.monotonic() - began) if began is not None else 0.0
            tool, extra = step_tool(event.name)
            return LoopEvent.observation(
                step,
                tool,
                event.output,
                duration,
                summary=event.summary,
                is_error=event.is_error,
                call_id=event.call_id,
                **extra,
            )
        if isinstance(event, ev.TodoUpdate):
            return LoopEvent.todo_update(step, [dict(item) for item in event.todos])
        if isinstance(event, ev.ErrorEvent):
            return LoopEvent.error(step, event.message, fatal=True, kind=event.kind)
        if isinstance(event, ev.WarningEvent):
            return LoopEvent.error(step, event.message, fatal=False, kind="warning")
        if isinstance(event, ev.RetryEvent):
            text = f"retrying in {event.delay:.1f}s (attempt {event.attempt}): {event.reason}"
            return LoopEvent.error(
                step, text, fatal=False, kind="retry", attempt=event.attempt, delay=event.delay
            )
        if isinstance(event, ev.HookRun) and event.outcome != "ok":  # a hook that blocked or failed
            text = f"{ev.hook_title(event)}: {ev.hook_result(event)}"
            return LoopEvent.error(step, text, fatal=False, kind="hook", hook_event=event.event)
        if isinstance(event, ev.SoftLimitEvent):
            return LoopEvent.soft_limit(step, event.reason, event.prompt, steps=event.steps)
        if isinstance(event, ev.StoppedEvent):
            self.stop_message = event.message
            return None
        if isinstance(event, ev.DoneEvent):
            return self._end(event.result)
        return None

    def _end(self, result: JsonObject) -> LoopEvent:
        return LoopEvent.loop_end(
            self.step,
            str(result.get("stop_reason", "")),
            str(result.get("result", "")),
            [],
            steps=result.get("steps", self.step),
            usage=result.get("usage", {}),
            todos=result.get("todos", []),
            error=result.get("error"),
            stop_message=self.stop_message,
        )


async def loop_events(
    native: AsyncIterator[ev.Event], task: str, *, reasoning: bool = True
) -> AsyncIterator[LoopEvent]:
    """The step-level events of ``native`` (``Agent.stream(task)``), as they happen
    (``reasoning=False``: no REASONING events)."""
    converter = _Converter(task, reasoning)
    async for event in native:
        for made in converter.convert(event):
            yield made
    for made in converter.flush():  # a stream cut short: its text is not lost
        yield made
