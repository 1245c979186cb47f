"""The typed event stream every front end consumes (plain, JSON Lines, TUI).

Each event is a small dataclass with a ``type`` tag; ``to_dict()`` gives the JSON form
written by ``etcode run --format json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass
class Event:
    type: str = field(init=False, default="event")

    def to_dict(self) -> dict[str, Any]:
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
    params: dict[str, Any]
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
    data: dict[str, Any] | None = None
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
    todos: list[dict[str, Any]]
    type: Literal["todo_update"] = field(init=False, default="todo_update")


@dataclass
class RetryEvent(Event):
    attempt: int
    delay: float
    reason: str
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
class ErrorEvent(Event):
    message: str
    kind: str = "error"
    type: Literal["error"] = field(init=False, default="error")


@dataclass
class DoneEvent(Event):
    """Last event of a run; carries the :class:`AgentResult` as a dict."""

    result: dict[str, Any]
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


# ---- subagents and the Planner → Executor → Verifier workflow ------------------------


@dataclass
class SubagentEvent(Event):
    """Something a ``Task`` subagent did (its tool calls, its stop), tagged with the
    parent's ``call_id``; ``event`` is the child event's ``to_dict()``."""

    call_id: str
    agent: str
    session_id: str
    event: dict[str, Any]
    type: Literal["subagent"] = field(init=False, default="subagent")


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
    tasks: list[dict[str, Any]] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    type: Literal["verification_result"] = field(init=False, default="verification_result")
