"""The three roles' answers as plain objects, read tolerantly from their JSON.

Keys may come in camelCase (the documented form) or snake_case; ids may be numbers;
priorities may be ``high``/``medium``/``low`` or numbers (1 = most urgent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from etcode.util.json_types import JsonObject, JsonValue

NEXT_ACTIONS = ("continue", "complete", "skip", "retry")
_PRIORITY_RANK = {"critical": 0, "urgent": 0, "high": 1, "medium": 2, "normal": 2, "low": 3}


def _get(data: Mapping[str, JsonValue], *names: str, default: JsonValue = None) -> JsonValue:
    for name in names:
        if name in data:
            return data[name]
    return default


def _bool(value: JsonValue) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no"):
        return False
    return None


def _text(value: JsonValue) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value if _text(v))
    return str(value)


def _status(value: JsonValue) -> str:
    text = _text(value).lower().replace("-", "_").replace(" ", "_")
    if text in ("done", "complete", "completed", "finished"):
        return "completed"
    if text in ("in_progress", "active", "running", "doing"):
        return "in_progress"
    return "pending"


@dataclass
class Todo:
    """One step of the plan. ``outcome`` records how execution ended (``completed``,
    ``skipped``, ``incomplete``, ``round_limit``); ``result`` the executor's summary."""

    id: str
    description: str
    priority: str = "medium"
    status: str = "pending"
    outcome: str | None = None
    result: str = ""
    rounds: int = 0

    @property
    def rank(self) -> int:
        """Sort key: 0 most urgent. Numbers count from 1 = most urgent."""
        if self.priority.isdigit():
            return int(self.priority) - 1
        return _PRIORITY_RANK.get(self.priority.lower(), 2)

    @classmethod
    def from_dict(cls, data: JsonValue, index: int) -> Todo | None:
        if isinstance(data, str):
            data = {"description": data}
        if not isinstance(data, Mapping):
            return None
        description = _text(_get(data, "description", "content", "task", "title"))
        if not description:
            return None
        raw_id = _get(data, "id")
        priority = _get(data, "priority", default="medium")
        return cls(
            id=_text(raw_id) if raw_id not in (None, "") else str(index + 1),
            description=description,
            priority=_text(priority) or "medium",
            status=_status(_get(data, "status", default="pending")),
        )

    def to_dict(self) -> JsonObject:
        """As a todo-update item (``content`` too, so TodoWrite renderers show it)."""
        data: JsonObject = {
            "id": self.id,
            "content": self.description,
            "description": self.description,
            "priority": self.priority,
            "status": self.status,
        }
        if self.outcome:
            data["outcome"] = self.outcome
        if self.result:
            data["result"] = self.result
        return data


def todos_from(value: JsonValue) -> list[Todo]:
    """Todos from a JSON list (items without a description are dropped; ids made unique)."""
    todos: list[Todo] = []
    seen: set[str] = set()
    for index, item in enumerate(value if isinstance(value, list) else []):
        todo = Todo.from_dict(item, index)
        if todo is None:
            continue
        while todo.id in seen:
            todo.id += "'"
        seen.add(todo.id)
        todos.append(todo)
    return todos


@dataclass
class Plan:
    summary: str
    needs_more_planning: bool
    todos: list[Todo]

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> Plan:
        """Raises ValueError when the object is not a plan (no todos list)."""
        raw = _get(data, "todos", "tasks", "steps")
        if not isinstance(raw, list):
            raise ValueError('the plan needs "todos": a list of {id, description, priority, status}')
        return cls(
            summary=_text(_get(data, "summary", "plan")),
            needs_more_planning=_bool(_get(data, "needsMorePlanning", "needs_more_planning")) is True,
            todos=todos_from(raw),
        )


@dataclass
class ExecutorReport:
    summary: str
    task_completed: bool | None = None
    should_continue: bool | None = None
    next_action: str | None = None
    todos: list[JsonObject] = field(default_factory=list)
    prose: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> ExecutorReport:
        action = _text(_get(data, "nextAction", "next_action")).lower() or None
        todos = _get(data, "todos", default=[])
        return cls(
            summary=_text(_get(data, "summary", "result")),
            task_completed=_bool(_get(data, "taskCompleted", "task_completed")),
            should_continue=_bool(_get(data, "shouldContinue", "should_continue")),
            next_action=action if action in NEXT_ACTIONS else None,
            todos=[dict(t) for t in todos if isinstance(t, Mapping)] if isinstance(todos, list) else [],
        )

    def todo_status(self, todo_id: str) -> str | None:
        for item in self.todos:
            if _text(item.get("id")) == todo_id:
                return _status(item.get("status"))
        return None

    def completed(self, todo_id: str) -> bool:
        """``taskCompleted`` decides; else ``nextAction == complete``; else the todo's status."""
        if self.task_completed is not None:
            return self.task_completed
        if self.next_action is not None:
            return self.next_action == "complete"
        return self.todo_status(todo_id) == "completed"


@dataclass
class TaskCheck:
    id: str
    completed: bool
    feedback: str

    def to_dict(self) -> JsonObject:
        return {"id": self.id, "completed": self.completed, "feedback": self.feedback}


@dataclass
class Verdict:
    all_completed: bool
    user_needs_satisfied: bool
    overall_feedback: str
    summary: str = ""
    improvements: list[str] = field(default_factory=list)
    tasks: list[TaskCheck] = field(default_factory=list)
    prose: bool = False

    @property
    def satisfied(self) -> bool:
        return self.all_completed and self.user_needs_satisfied

    @classmethod
    def from_dict(cls, data: Mapping[str, JsonValue]) -> Verdict:
        """Raises ValueError when the two flags are missing."""
        done = _bool(_get(data, "allCompleted", "all_completed"))
        needs = _bool(_get(data, "userNeedsSatisfied", "user_needs_satisfied"))
        if done is None or needs is None:
            raise ValueError('the verdict needs "allCompleted" and "userNeedsSatisfied" (true or false)')
        raw_improvements = _get(data, "improvements", default=[])
        if isinstance(raw_improvements, str):
            raw_improvements = [raw_improvements]
        improvements = [_text(i) for i in raw_improvements or [] if _text(i)]
        tasks = [
            TaskCheck(_text(t.get("id")), _bool(t.get("completed")) is True, _text(t.get("feedback")))
            for t in _get(data, "tasks", default=[]) or []
            if isinstance(t, Mapping)
        ]
        return cls(
            all_completed=done,
            user_needs_satisfied=needs,
            overall_feedback=_text(_get(data, "overallFeedback", "overall_feedback", "feedback")),
            summary=_text(_get(data, "summary")),
            improvements=improvements,
            tasks=tasks,
        )
