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
