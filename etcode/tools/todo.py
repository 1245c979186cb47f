"""``TodoWrite``: the session's task list, replaced whole on every call."""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from etcode.contract.events import TodoUpdate
from etcode.provider.types import ToolSchema
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.util.json_types import JsonObject, JsonValue

Status = Literal["pending", "in_progress", "completed"]
_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


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


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="What to do, imperative form (e.g. 'Run the tests').")
    status: Status = Field(description="pending, in_progress or completed.")
    activeForm: str | None = Field(  # noqa: N815 - the wire name
        default=None,
        description="Present-continuous form shown while in progress (e.g. 'Running the tests').",
    )


class TodoWriteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    todos: list[TodoItem] = Field(description="The complete, updated task list (replaces the previous one).")


class TodoStore:
    """The current task list of one session (``ctx.state["todos"]``)."""

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

    def replace(self, items: list[JsonObject]) -> None:
        """Set the whole list. Raises :class:`ToolError` if more than one is in progress."""
        active = [item for item in items if item["status"] == "in_progress"]
        if len(active) > 1:
            names = ", ".join(repr(item["content"]) for item in active)
            raise ToolError(
                f"Only one task may be in_progress at a time; got {len(active)} ({names}). "
                "Mark the others pending or completed."
            )
        self.items = [dict(item) for item in items]

    def counts(self) -> dict[str, int]:
        out = {"pending": 0, "in_progress": 0, "completed": 0}
        for item in self.items:
            out[item["status"]] += 1
        return out

    def format(self) -> str:
        """The list as the model and plain front ends see it."""
        if not self.items:
            return "(The todo list is empty.)"
        lines = []
        for item in self.items:
            text = item["content"]
            if item["status"] == "in_progress" and item.get("activeForm"):
                text = f"{text} ({item['activeForm']})"
            lines.append(f"{_MARKS[item['status']]} {text}")
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
        store = self.store if self.store is not None else TodoStore.of(ctx.state)
        store.replace([item.model_dump() for item in params.todos])
        ctx.emit(todo_update_event(store.items))
        counts = store.counts()
        return ToolResult(
            "Todo list updated:\n" + store.format(),
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
