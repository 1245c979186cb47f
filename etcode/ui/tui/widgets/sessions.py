"""``/sessions``: pick a stored session to resume."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


def session_label(info: Any) -> str:
    """One line: title, when, messages, cost."""
    from etcode.security.redact import redact

    title = redact(getattr(info, "title", None) or "(untitled)")  # before the cut to 60
    updated = getattr(info, "updated", None)
    when = _when(updated)
    count = getattr(info, "message_count", 0) or 0
    cost = getattr(info, "cost", None)
    parts = [f"{title[:60]:<60}", when, f"{count} msgs"]
    if cost:
        parts.append(f"${cost:.4f}")
    return "  ".join(parts)


def _when(value: Any) -> str:
    if isinstance(value, int | float) and value > 0:
        value = dt.datetime.fromtimestamp(value)
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value or "")


class SessionPicker(ModalScreen[str | None]):
    """Dismisses with the chosen session id, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def __init__(self, sessions: Sequence[Any]) -> None:
        super().__init__()
        self.sessions = list(sessions)

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-dialog"):
            yield Static("Resume a session (Enter to open, Esc to cancel)", id="sessions-title")
            yield OptionList(
                *[Option(session_label(s), id=str(getattr(s, "id", ""))) for s in self.sessions],
                id="sessions-list",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
