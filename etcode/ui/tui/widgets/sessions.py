"""``/sessions``: pick a stored session to resume."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from etcode.session.store import SessionInfo


def session_label(info: SessionInfo) -> str:
    """One line: title, when, messages, cost."""
    from etcode.security.redact import redact

    title = redact(info.title or "(untitled)")  # before the cut to 60
    parts = [f"{title[:60]:<60}", _when(info.updated), f"{info.message_count or 0} msgs"]
    if info.cost:
        parts.append(f"${info.cost:.4f}")
    return "  ".join(parts)


def _when(updated: float) -> str:
    """The time as ``2026-11-26 03:30`` (nothing when it is not known)."""
    if updated > 0:
        return dt.datetime.fromtimestamp(updated).strftime("%Y-%m-%d %H:%M")
    return str(updated or "")


class SessionPicker(ModalScreen[str | None]):
    """Dismisses with the chosen session id, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def __init__(self, sessions: Sequence[SessionInfo]) -> None:
        super().__init__()
        self.sessions = list(sessions)

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-dialog"):
            yield Static("Resume a session (Enter to open, Esc to cancel)", id="sessions-title")
            yield OptionList(
                *[Option(session_label(s), id=s.id) for s in self.sessions],
                id="sessions-list",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
