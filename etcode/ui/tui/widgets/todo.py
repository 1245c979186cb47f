"""The todo panel: follows ``TodoUpdate`` events; the in-progress item is highlighted."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from etcode.util.json_types import JsonObject

MARKS = {"completed": "✔", "in_progress": "▶", "pending": "○", "cancelled": "✗"}


#: Items the panel shows when it sits under the conversation (a narrow terminal).
COMPACT_ITEMS = 5


def window(todos: list[JsonObject], limit: int) -> tuple[int, int]:
    """The slice of ``todos`` to show in ``limit`` lines (two of them kept for ``… N``
    marks when it is cut), starting just before the item in progress (or the first pending)."""
    if len(todos) <= limit:
        return 0, len(todos)
    size = max(1, limit - 2)
    statuses = [t.get("status") for t in todos]
    current = next(
        (i for status in ("in_progress", "pending") for i, s in enumerate(statuses) if s == status),
        len(todos) - 1,
    )
    start = max(0, min(current - 1, len(todos) - size))
    return start, start + size


def render_todos(todos: list[JsonObject], limit: int | None = None) -> Text:
    """The panel's text: a header with counts, then one line per item (at most ``limit``
    lines of items, around the one in progress)."""
    done = sum(1 for t in todos if t.get("status") == "completed")
    text = Text(f"Todos {done}/{len(todos)}\n", style="bold")
    start, end = window(todos, limit) if limit else (0, len(todos))
    if start:
        text.append(f"… {start} above\n", style="dim")
    for item in todos[start:end]:
        status = str(item.get("status", "pending"))
        label = str(item.get("content") or item.get("description") or "")
        if status == "in_progress":
            label = str(item.get("activeForm") or label)
        done_with = status in ("completed", "cancelled")
        style = "dim strike" if done_with else "bold reverse" if status == "in_progress" else ""
        text.append(f"{MARKS.get(status, '○')} ", style="dim" if done_with else "")
        text.append(label, style=style)
        text.append("\n")
    if end < len(todos):
        text.append(f"… {len(todos) - end} more", style="dim")
    text.rstrip()
    return text


def finished(todos: list[JsonObject]) -> bool:
    """Every item is done (completed or cancelled): nothing left to follow."""
    return all(t.get("status") in ("completed", "cancelled") for t in todos)


class TodoPanel(Static):
    """Hidden while the list is empty, and once every item is done (as Claude Code clears a
    finished list): the conversation gets the width back. Ctrl+T still shows it."""

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.todos: list[JsonObject] = []
        self.display = False

    def set_todos(self, todos: list[JsonObject]) -> None:
        self.todos = [dict(t) for t in todos]
        self._show()
        self.display = bool(self.todos) and not finished(self.todos)

    @property
    def compact(self) -> bool:
        """Under the conversation (the screen is ``-narrow``): a few items only."""
        return self.is_attached and self.screen.has_class("-narrow")

    def _show(self) -> None:
        self.update(render_todos(self.todos, COMPACT_ITEMS if self.compact else None))

    def on_resize(self) -> None:
        """The layout changed (the terminal crossed the narrow width): fit the items."""
        if self.todos:
            self._show()

    @property
    def in_progress(self) -> str | None:
        return next((str(t.get("content")) for t in self.todos if t.get("status") == "in_progress"), None)
