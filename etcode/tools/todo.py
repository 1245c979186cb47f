"""``TodoWrite``: the session's task list, replaced whole on every call.

The types are the agent-loop design's too: ``TodoItem(content="x")`` (status ``pending``),
``TodoStore.write(items)`` (the whole list, answered with what the model is told),
``TodoStore.todos`` (copies, as ``TodoItem`` s). Two of the design's values are accepted but
not offered to the model, so the schema it reads in every request stays as small as it was:
``priority`` (``high``/``medium``/``low``, kept in the item only when given) and the status
``cancelled`` (shown ``[-]``; etcode's model is told to remove a task that no longer applies).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema

from etcode.contract.events import TodoUpdate
from etcode.provider.types import ToolSchema
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.util.json_types import JsonObject, JsonValue

Status = Literal["pending", "in_progress", "completed", "cancelled"]
Priority = Literal["high", "medium", "low"]
#: The statuses the model's schema lists (``cancelled`` is accepted, not offered).
OFFERED_STATUSES = ("pending", "in_progress", "completed")
_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


def inline_refs(schema: JsonObject) -> JsonObject:
    """A JSON schema with its local ``$ref``s to ``$defs`` replaced by the definitions."""
    defs = schema.get("$defs", {})

    def walk(node: JsonValue) -> JsonValue:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
                merged = {**walk(defs[ref[8:]]), **{k: walk(v) for k, v in node.items() if k != "$ref"}}
                return merged
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return cast(JsonObject, walk(schema))


def _as_offered(schema: JsonDict) -> None:
    """The item's schema as the model reads it: ``status`` required, of the offered values,
    and no description of the class (its fields' are enough)."""
    schema.pop("description", None)
    properties = cast(JsonDict, schema["properties"])
    status = cast(JsonDict, properties["status"])
    status.pop("default", None)
    status["enum"] = list(OFFERED_STATUSES)
    schema["required"] = ["content", "status"]


class TodoItem(BaseModel):
    """One task: ``content``, ``status`` (``pending`` unless given), ``activeForm`` (shown
    while in progress) and ``priority`` (the design's; ``medium`` unless given)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_as_offered)

    content: str = Field(min_length=1, description="What to do, imperative form (e.g. 'Run the tests').")
    status: Status = Field(default="pending", description="pending, in_progress or completed.")
    activeForm: str | None = Field(  # noqa: N815 - the wire name
        default=None,
        description="Present-continuous form shown while in progress (e.g. 'Running the tests').",
    )
    priority: SkipJsonSchema[Priority] = "medium"

    def to_dict(self) -> JsonObject:
        """The item as the store, the events and the session keep it (``activeForm`` and
        ``priority`` only when given, so a design program's item is its own two keys)."""
        out: JsonObject = {"content": self.content, "status": self.status}
        if self.activeForm is not None:
            out["activeForm"] = self.activeForm
        if "priority" in self.model_fields_set:
            out["priority"] = self.priority
        return out


class TodoWriteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    todos: list[TodoItem] = Field(description="The complete, updated task list (replaces the previous one).")


class TodoStore:
    """A task list: the session's (``ctx.state["todos"]``) or one of your own, bound to a tool
    by :func:`create_todo_tool`. ``items`` holds it as dicts, ``todos`` as ``TodoItem`` s."""

    def __init__(self) -> None:
        self.items: list[JsonObject] = []

    @classmethod
    def of(cls, state: dict[str, object]) -> TodoStore:
        """The store kept in a session's state dict, created on first use."""
        store = state.get("todos")
        if not isinstance(store, TodoStore):
            store = cls()
            state["todos"] = store
        return store

    @property
    def todos(self) -> list[TodoItem]:
        """The list as ``TodoItem`` s (copies: changing them changes nothing here)."""
        return [TodoItem.model_validate(item) for item in self.items]

    def write(self, items: Iterable[TodoItem | Mapping[str, object]]) -> str:
        """Set the whole list (``TodoItem`` s or dicts of their fields) and return what the
        model is told: the list, formatted. Raises ``ValueError`` (pydantic's
        ``ValidationError``) for an item that is not a task and :class:`ToolError` when more
        than one is in progress; the list is then unchanged."""
        checked = [
            item.model_copy() if isinstance(item, TodoItem) else TodoItem.model_validate(item)
            for item in items
        ]
        active = [item for item in checked if item.status == "in_progress"]
        if len(active) > 1:
            names = ", ".join(repr(item.content) for item in active)
            raise ToolError(
                f"Only one task may be in_progress at a time; got {len(active)} ({names}). "
                "Mark the others pending or completed."
            )
        self.items = [item.to_dict() for item in checked]
        return "Todo list updated:\n" + self.format()

    #: etcode's earlier name of :meth:`write`.
    replace = write

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(_MARKS, 0)
        for item in self.items:
            status = str(item.get("status"))
            out[status] = out.get(status, 0) + 1
        return out

    def format(self) -> str:
        """The list as the model and plain front ends see it."""
        if not self.items:
            return "(The todo list is empty.)"
        lines = []
        for item in self.items:
            text = str(item["content"])
            if item["status"] == "in_progress" and item.get("activeForm"):
                text = f"{text} ({item['activeForm']})"
            lines.append(f"{_MARKS.get(str(item['status']), '[?]')} {text}")
        return "\n".join(lines)


#: The ``type`` of the event sent when the todo list changes (:class:`TodoUpdate`).
TODO_UPDATE = "todo_update"


def todo_update_event(items: list[JsonObject]) -> TodoUpdate:
    """The event that tells front ends the todo list is now ``items``."""
    return TodoUpdate(todos=[dict(item) for item in items])


class TodoWriteTool(Tool):
    name = "TodoWrite"
    description = (
        "Create and update a structured task list for the current work; the user sees it live.\n"
        "- Use it for tasks with 3 or more steps, when the user gives several tasks, or when "
        "asked to; skip it for a single trivial step.\n"
        "- Each call replaces the whole list: send every task with its status `pending`, "
        "`in_progress` or `completed`, and `activeForm` (e.g. content 'Run tests', activeForm "
        "'Running tests').\n"
        "- Exactly one task is `in_progress` while you work; mark a task `completed` as soon as "
        "it is done (not in batches), and only when it is fully done (tests pass, no errors).\n"
        "- Add tasks you discover; remove ones that no longer apply."
    )
    Params = TodoWriteParams
    is_read_only = True  # it only changes session state

    def _build_schema(self) -> ToolSchema:
        # Inline the TodoItem definition: some OpenAI-compatible servers reject "$ref".
        schema = super()._build_schema()
        return ToolSchema(schema.name, schema.description, inline_refs(schema.parameters))

    def __init__(self, store: TodoStore | None = None) -> None:
        #: The list this tool writes; None: the session's own (``ctx.state["todos"]``).
        self.store = store

    async def run(self, params: TodoWriteParams, ctx: ToolContext) -> ToolResult:
        if self.store is not None:  # a list of the program's own: the session's from now on
            ctx.state["todos"] = self.store
        store = TodoStore.of(ctx.state)
        output = store.write(params.todos)
        ctx.emit(todo_update_event(store.items))
        counts = store.counts()
        return ToolResult(
            output,
            data={"todos": [dict(item) for item in store.items], **counts},
        )

    def params_summary(self, params: JsonObject) -> str:
        todos = params.get("todos") or []
        return f"{len(todos)} task{'s' if len(todos) != 1 else ''}"

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        if result.summary:
            return result.summary
        data = result.data or {}
        if result.is_error or "todos" not in data:
            return super().result_summary(params, result)
        total = len(data["todos"])
        current = next((t for t in data["todos"] if t["status"] == "in_progress"), None)
        text = f"{data['completed']}/{total} done"
        if current:
            text += f" · {current.get('activeForm') or current['content']}"
        return text


def create_todo_tool(store: TodoStore | None = None) -> TodoWriteTool:
    """A ``TodoWrite`` tool writing ``store`` (one you can read from your program), or the
    session's own list when None; usable with ``Agent(builtin_tools=False, tools=[...])``."""
    return TodoWriteTool(store)
