"""A plain-text renderer of step-level :class:`~etcode.contract.events.LoopEvent` s.

``Renderer().render(event)`` gives one string per event. Rules registered with
``@renderer.on_tool("name")`` (for that tool's actions and observations) win over rules
registered with ``@renderer.on_event(EventType.X)``, which win over the default. The
default follows etcode's display: a tool call is ``● Name (params summary)`` with
``  └ result summary`` under it.
"""

from __future__ import annotations

from collections.abc import Callable

from etcode.contract.events import EventType, LoopEvent
from etcode.util.json_types import JsonObject, JsonValue

__all__ = ["Renderer"]

Rule = Callable[[LoopEvent], str]

_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]", "cancelled": "[-]"}
_PREVIEW = 100  # characters of a result shown when the event has no summary


def _first_line(text: str, limit: int = _PREVIEW) -> str:
    stripped = text.strip()
    line = stripped.splitlines()[0] if stripped else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _args_text(args: JsonValue) -> str:
    if isinstance(args, dict):
        return ", ".join(f"{key}={value!r}" for key, value in args.items())
    return "" if args is None else str(args)


class Renderer:
    """Renders events with the rules registered on it, else etcode's default lines."""

    def __init__(self) -> None:
        self._tool_rules: dict[str, Rule] = {}
        self._event_rules: dict[EventType, Rule] = {}

    def on_tool(self, tool_name: str) -> Callable[[Rule], Rule]:
        """Decorator: ``fn(event) -> str`` renders the actions and observations of ``tool_name``."""

        def register(fn: Rule) -> Rule:
            self._tool_rules[tool_name] = fn
            return fn

        return register

    def on_event(self, event_type: EventType) -> Callable[[Rule], Rule]:
        """Decorator: ``fn(event) -> str`` renders every event of ``event_type``."""

        def register(fn: Rule) -> Rule:
            self._event_rules[EventType(event_type)] = fn
            return fn

        return register

    def render(self, event: LoopEvent) -> str:
        """The text of ``event``: its tool's rule, else its type's rule, else the default."""
        for key in ("tool", "etcode_name"):  # a rule for TodoWrite is one for todo_write
            tool = event.data.get(key)
            if isinstance(tool, str) and tool in self._tool_rules:
                return self._tool_rules[tool](event)
        rule = self._event_rules.get(event.type)
        if rule is not None:
            return rule(event)
        return default_render(event)


def default_render(event: LoopEvent) -> str:
    """etcode's plain line(s) for ``event``."""
    data = event.data
    kind = event.type
    if kind == EventType.LOOP_START:
        return f"task: {_first_line(str(data.get('task', '')))}"
    if kind == EventType.THOUGHT:
        return str(data.get("content", "")).strip()
    if kind == EventType.REASONING:  # the step's thinking: its first line (all of it is in data)
        text = str(data.get("content", "")).strip()
        first = _first_line(text)
        return f"thinking: {first}{' …' if first != text else ''}"
    if kind == EventType.ACTION:
        summary = data.get("summary") or _args_text(data.get("args"))
        name = data.get("etcode_name") or data.get("tool", "")
        return f"● {name} ({summary})" if summary else f"● {name}"
    if kind == EventType.OBSERVATION:
        summary = data.get("summary") or _first_line(str(data.get("result", ""))) or "done"
        return f"  └ ⚠ error: {summary}" if data.get("is_error") else f"  └ {summary}"
    if kind == EventType.TODO_UPDATE:
        return _todos(data.get("todos") or [])
    if kind == EventType.ERROR:
        return f"{'error' if data.get('fatal') else 'warning'}: {data.get('error', '')}"
    if kind == EventType.SOFT_LIMIT:
        steps = data.get("steps")
        after = f" after {steps} step{'' if steps == 1 else 's'}" if isinstance(steps, int) else ""
        return f"warning: soft step limit{after} ({data.get('reason', '')}): the model was asked to wrap up"
    if kind == EventType.LOOP_END:
        return _end(data)
    return f"[{EventType(kind).value}] {data}"


def _todos(todos: list[JsonObject]) -> str:
    if not todos:
        return "(the todo list is empty)"
    lines = []
    for item in todos:
        text = str(item.get("content") or item.get("description") or "")
        if item.get("status") == "in_progress" and item.get("activeForm"):
            text = f"{text} ({item['activeForm']})"
        lines.append(f"{_MARKS.get(str(item.get('status')), '[?]')} {text}")
    done = sum(1 for item in todos if item.get("status") == "completed")
    lines.append(f"[{done}/{len(todos)} completed]")
    return "\n".join(lines)


def _end(data: JsonObject) -> str:
    reason = data.get("stop_reason", "")
    steps = data.get("steps")
    counted = f", {steps} step{'' if steps == 1 else 's'}" if isinstance(steps, int) else ""
    message = data.get("stop_message") or ""
    return f"end ({reason}{counted}){': ' + message if message else ''}"
