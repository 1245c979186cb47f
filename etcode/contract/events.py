"""The one event vocabulary of etcode: every event the core emits and the API yields.

Each event is a small dataclass with a ``type`` tag, a subclass of :class:`Event` (exported
as ``etcode.Event``). Two views of a run use it:

- the detailed stream (``Agent.stream``, every front end: plain, JSON Lines, TUI, ACP):
  text deltas, tool calls, usage, retries... ``to_dict()`` gives the JSON form written by
  ``etcode run --format json``, each line with the schema's ``version``
  (:data:`EVENT_SCHEMA_VERSION`; the format is documented in ``docs/json-format.md``);
- the step-level view (``Agent.run_stream``/``arun_stream``): :class:`LoopEvent` s tagged by
  :class:`EventType` (thought, action, observation...), derived from the detailed stream in
  one place, :mod:`etcode.engine.step_events`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Literal

from etcode.util.json_types import JsonArray, JsonObject, JsonValue

#: The version of the ``etcode run --format json`` schema, on every line as ``"version"``.
#: Raised when a field's meaning changes or a field or event type is removed (adding a field
#: or an event type is compatible: readers ignore what they do not know).
EVENT_SCHEMA_VERSION = 1


@dataclass
class Event:
    """The base of every event (``etcode.Event``): a ``type`` tag and a JSON form."""

    type: str = field(init=False, default="event")

    def to_dict(self) -> JsonObject:
        """The event as JSON data (its dataclass fields, ``type`` first)."""
        return asdict(self)


@dataclass
class SessionStart(Event):
    session_id: str
    model: str
    agent: str
    directory: str
    type: Literal["session_start"] = field(init=False, default="session_start")


@dataclass
class StepStart(Event):
    step: int
    type: Literal["step_start"] = field(init=False, default="step_start")


@dataclass
class StepFinish(Event):
    step: int
    usage: dict[str, int]
    stop_reason: str
    type: Literal["step_finish"] = field(init=False, default="step_finish")


@dataclass
class TextDeltaEvent(Event):
    text: str
    type: Literal["text_delta"] = field(init=False, default="text_delta")


@dataclass
class ReasoningDeltaEvent(Event):
    text: str
    type: Literal["reasoning_delta"] = field(init=False, default="reasoning_delta")


@dataclass
class ToolCallStart(Event):
    """A tool call is about to run. ``title`` is the ``● Name (summary)`` head line text."""

    call_id: str
    name: str
    params: JsonObject
    summary: str
    type: Literal["tool_call_start"] = field(init=False, default="tool_call_start")

    @property
    def title(self) -> str:
        return f"{self.name} ({self.summary})" if self.summary else self.name


@dataclass
class ToolResultEvent(Event):
    """A tool call finished. ``summary`` is the ``└ ...`` line text; ``output`` what the model saw."""

    call_id: str
    name: str
    is_error: bool
    summary: str
    output: str
    data: JsonObject | None = None
    type: Literal["tool_result"] = field(init=False, default="tool_result")


@dataclass
class ToolProgress(Event):
    """A running tool's output so far (Bash): ``text`` is what it printed since the last
    progress event of this call (coalesced, at most ~10 events a second; a lone ``\r``
    starts the current line again), ``elapsed`` the seconds since it started and
    ``skipped`` the characters left out of ``text`` to keep it short. Display only: the
    tool's result carries the whole output."""

    call_id: str
    name: str
    text: str
    elapsed: float
    skipped: int = 0
    type: Literal["tool_progress"] = field(init=False, default="tool_progress")


@dataclass
class TodoUpdate(Event):
    todos: list[JsonObject]
    type: Literal["todo_update"] = field(init=False, default="todo_update")


@dataclass
class RetryEvent(Event):
    attempt: int
    delay: float
    reason: str
    #: The failed request's HTTP status (None: no answer, e.g. a cut connection).
    status: int | None = None
    #: How many attempts there are in all (the first and its retries), when known.
    attempts: int | None = None
    type: Literal["retry"] = field(init=False, default="retry")


@dataclass
class WarningEvent(Event):
    message: str
    type: Literal["warning"] = field(init=False, default="warning")


@dataclass
class StoppedEvent(Event):
    """The loop stopped before the model finished (limit, interrupt)."""

    reason: str
    message: str
    type: Literal["stopped"] = field(init=False, default="stopped")


@dataclass
class SoftLimitEvent(Event):
    """The run reached its soft step limit: the model was told to wrap up (``prompt``, added
    to the conversation) and the run goes on. ``reason`` is ``step_limit``."""

    reason: str
    prompt: str
    steps: int
    type: Literal["soft_limit"] = field(init=False, default="soft_limit")

    @property
    def message(self) -> str:
        """The line a front end shows."""
        steps = f"{self.steps} step{'' if self.steps == 1 else 's'}"
        return f"soft step limit: {steps} taken; the model was asked to wrap up"


@dataclass
class ErrorEvent(Event):
    message: str
    kind: str = "error"
    type: Literal["error"] = field(init=False, default="error")


@dataclass
class DoneEvent(Event):
    """Last event of a run; carries the :class:`AgentResult` as a dict."""

    result: JsonObject
    type: Literal["done"] = field(init=False, default="done")


@dataclass
class UsageUpdate(Event):
    """After each model call: how full the context window is and what the session cost.

    ``context_tokens`` is the size of the conversation as the model last saw it (its input,
    cached input and answer); ``context_window`` the model's window (None: unknown);
    ``context_percent`` their ratio in percent. ``cost`` is the session's total in USD and
    ``step_cost`` this call's (None when the model's price is unknown).
    """

    context_tokens: int
    context_window: int | None
    context_percent: float | None
    input_tokens: int
    output_tokens: int
    cost: float | None
    step_cost: float | None = None
    type: Literal["usage"] = field(init=False, default="usage")


@dataclass
class CompactionEvent(Event):
    """Older history is being (``phase="start"``), was (``"done"``) or could not be
    (``"failed"``) summarised into a new batch. ``reason``: ``auto`` (the window is nearly
    full), ``overflow`` (the provider refused the request as too long) or ``manual``."""

    reason: str
    phase: str
    tokens_before: int = 0
    tokens_after: int = 0
    summarized: int = 0
    pruned: int = 0
    message: str = ""
    type: Literal["compaction"] = field(init=False, default="compaction")


@dataclass
class HookRun(Event):
    """A hook ran (``etcode/extensions``): its event (``PreToolUse``...), a short ``label`` for
    its command (``ruff format``), its ``outcome`` (``ok``, ``blocked``, ``failed``,
    ``timeout``), the tool call it ran for (``tool``, ``call_id``; empty for the other
    events), its exit code (None: it timed out or did not start) and what it said that the
    user should see (``message``: its reason, stderr or ``systemMessage``; may be empty)."""

    event: str
    label: str
    outcome: str
    exit_code: int | None = None
    message: str = ""
    tool: str = ""
    call_id: str = ""
    type: Literal["hook"] = field(init=False, default="hook")


def hook_title(event: HookRun) -> str:
    """``PostToolUse hook (ruff format)``: the head line of a hook that ran (every front end)."""
    return f"{event.event} hook ({event.label})" if event.label else f"{event.event} hook"


def hook_result(event: HookRun) -> str:
    """What came of a hook, in one line: ``done``, ``blocked: <why>``, ``failed: …``."""
    message = " ".join(event.message.split())
    if len(message) > 200:
        message = message[:199] + "…"
    if event.outcome == "ok":
        return message or "done"
    if event.outcome == "timeout":
        return message or "timed out"
    return f"{event.outcome}: {message}" if message else event.outcome


# ---- subagents and the Planner → Executor → Verifier workflow ------------------------


@dataclass
class SubagentEvent(Event):
    """Something a ``Task`` subagent did (its tool calls, its hooks, its warnings), tagged
    with the parent's ``call_id``; ``event`` is the child event's ``to_dict()``."""

    call_id: str
    agent: str
    session_id: str
    event: JsonObject
    type: Literal["subagent"] = field(init=False, default="subagent")


def subagent_notice(event: SubagentEvent) -> HookRun | WarningEvent | None:
    """A subagent's hook or warning as the front ends show their own (a warning names the
    subagent; a hook goes with the parent's ``Task`` call), None for its other events."""
    child = event.event or {}
    kind = child.get("type")
    if kind == "warning":
        return WarningEvent(f"{event.agent} subagent: {child.get('message', '')}")
    if kind != "hook":
        return None
    exit_code = child.get("exit_code")
    return HookRun(
        str(child.get("event", "")),
        str(child.get("label", "")),
        str(child.get("outcome", "")),
        exit_code if isinstance(exit_code, int) else None,
        str(child.get("message", "")),
        str(child.get("tool", "")),
        event.call_id,
    )


@dataclass
class WorkflowPhase(Event):
    """The workflow moved on. ``phase``: ``planning``, ``planned``, ``executing``,
    ``executed``, ``verifying``, ``verified`` or ``finished``; ``cycle`` counts from 1;
    ``todo_id`` names the todo for the executor phases; ``message`` is a one-line summary."""

    phase: str
    cycle: int
    message: str = ""
    todo_id: str | None = None
    type: Literal["workflow_phase"] = field(init=False, default="workflow_phase")


@dataclass
class RoleTextDelta(Event):
    """Streamed text of a workflow role (``planner``, ``executor``, ``verifier``): their
    JSON answers, kept off stdout. The final answer comes as an ordinary text delta."""

    role: str
    text: str
    type: Literal["role_text_delta"] = field(init=False, default="role_text_delta")


@dataclass
class VerificationResult(Event):
    """The verifier's verdict on one cycle."""

    cycle: int
    all_completed: bool
    user_needs_satisfied: bool
    overall_feedback: str
    tasks: list[JsonObject] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    type: Literal["verification_result"] = field(init=False, default="verification_result")


# ---- the step-level view (Agent.run_stream) ------------------------------------------


class EventType(StrEnum):
    """The kinds of :class:`LoopEvent`; a ``str`` Enum (``EventType.THOUGHT == "thought"``)."""

    LOOP_START = "loop_start"
    THOUGHT = "thought"
    ACTION = "action"
    OBSERVATION = "observation"
    SOFT_LIMIT = "soft_limit"
    ERROR = "error"
    LOOP_END = "loop_end"
    TODO_UPDATE = "todo_update"  # the same string as etcode.tools.todo.TODO_UPDATE
    REASONING = "reasoning"  # the model's thinking of one step (never sent back to it)


@dataclass
class LoopEvent(Event):
    """One step-level event of ``Agent.run_stream``: its ``type``, the ``step`` it belongs
    to, its ``data`` (the agent-loop design's keys; see :mod:`etcode.engine.step_events`
    for what each is made from)."""

    type: EventType = field()  # the tag, given (the detailed events fix theirs)
    step: int
    data: JsonObject
    timestamp: float = field(default_factory=time.time)

    def to_dict(self) -> JsonObject:
        """The JSON form: ``{"type": "thought", "step": 1, "data": {...}, "timestamp": ...}``."""
        return {"type": self.type.value, "step": self.step, "data": self.data, "timestamp": self.timestamp}

    # ---- the design's factories (extra keyword arguments become extra data keys) ----
    @classmethod
    def thought(cls, step: int, content: str, **extra: JsonValue) -> LoopEvent:
        return cls(EventType.THOUGHT, step, {**extra, "content": content})

    @classmethod
    def action(cls, step: int, tool: str, args: JsonObject, **extra: JsonValue) -> LoopEvent:
        return cls(EventType.ACTION, step, {**extra, "tool": tool, "args": args})

    @classmethod
    def observation(cls, step: int, tool: str, result: str, duration: float, **extra: JsonValue) -> LoopEvent:
        data = {**extra, "tool": tool, "result": result, "duration": duration}
        return cls(EventType.OBSERVATION, step, data)

    @classmethod
    def error(cls, step: int, error: str, fatal: bool = False, **extra: JsonValue) -> LoopEvent:
        return cls(EventType.ERROR, step, {**extra, "error": error, "fatal": fatal})

    @classmethod
    def loop_start(cls, task: str, **extra: JsonValue) -> LoopEvent:
        return cls(EventType.LOOP_START, 0, {**extra, "task": task})

    @classmethod
    def loop_end(
        cls,
        step: int,
        stop_reason: str,
        content: str = "",
        messages: JsonArray | None = None,
        **extra: JsonValue,
    ) -> LoopEvent:
        data = {**extra, "stop_reason": stop_reason, "content": content, "messages": messages or []}
        return cls(EventType.LOOP_END, step, data)

    @classmethod
    def soft_limit(cls, step: int, reason: str, prompt: str, **extra: JsonValue) -> LoopEvent:
        return cls(EventType.SOFT_LIMIT, step, {**extra, "reason": reason, "prompt": prompt})

    @classmethod
    def todo_update(cls, step: int, todos: list[JsonObject], **extra: JsonValue) -> LoopEvent:
        return cls(EventType.TODO_UPDATE, step, {**extra, "todos": todos})

    @classmethod
    def reasoning(cls, step: int, content: str, **extra: JsonValue) -> LoopEvent:
        return cls(EventType.REASONING, step, {**extra, "content": content})
