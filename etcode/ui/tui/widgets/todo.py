"""The todo panel: follows ``TodoUpdate`` events; the in-progress item is highlighted."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

MARKS = {"completed": "✔", "in_progress": "▶", "pending": "○"}


def render_todos(todos: list[dict[str, Any]]) -> Text:
    """The panel's text: a header with counts, then one line per item."""
    done = sum(1 for t in todos if t.get("status") == "completed")
    text = Text(f"Todos {done}/{len(todos)}\n", style="bold")
    for item in todos:
        status = str(item.get("status", "pending"))
        label = str(item.get("content") or item.get("description") or "")
        if status == "in_progress":
            label = str(item.get("activeForm") or label)
        style = {"completed": "dim strike", "in_progress": "bold reverse"}.get(status, "")
        text.append(f"{MARKS.get(status, '○')} ", style="dim" if status == "completed" else "")
        text.append(label, style=style)
        text.append("\n")
    text.rstrip()
    return text


class TodoPanel(Static):
    """Hidden while the list is empty."""

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.todos: list[dict[str, Any]] = []
        self.display = False

    def set_todos(self, todos: list[dict[str, Any]]) -> None:
        self.todos = [dict(t) for t in todos]
        self.update(render_todos(self.todos))
        self.display = bool(self.todos)

    @property
    def in_progress(self) -> str | None:
        return next((str(t.get("content")) for t in self.todos if t.get("status") == "in_progress"), None)
