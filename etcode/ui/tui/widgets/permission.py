"""The permission modal: the tool, its parameters (the command, or the diff of an edit) and
Allow once / Allow always (this session) / Reject with a reason passed to the model."""

from __future__ import annotations

import json
from typing import Any

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from etcode.permission.service import Decision, PermissionRequest

DEFAULT_REJECT = "denied by the user"


def request_title(request: PermissionRequest) -> str:
    tool = request.tool or request.permission
    return f"{tool} wants permission: {request.permission} {', '.join(request.patterns)}"


def request_details(request: PermissionRequest) -> RenderableType:
    """What is about to happen: a diff, a command, or the remaining metadata."""
    meta = request.metadata
    diff = meta.get("diff")
    if isinstance(diff, str) and diff.strip():
        return Syntax(diff, "diff", theme="ansi_dark", word_wrap=True, background_color="default")
    command = meta.get("command")
    if isinstance(command, str) and command:
        text = Text()
        if meta.get("description"):
            text.append(f"{meta['description']}\n", style="dim")
        text.append(f"$ {command}", style="bold")
        return text
    shown: dict[str, Any] = {k: v for k, v in meta.items() if k not in ("tool", "always")}
    if not shown:
        return Text("\n".join(request.patterns))
    return Text(json.dumps(shown, indent=2, ensure_ascii=False, default=str))


class PermissionScreen(ModalScreen[Decision]):
    """Dismisses with the user's :class:`Decision`. Keys: 1/y once, 2/a always, 3/n reject."""

    BINDINGS = [
        Binding("1,y", "allow_once", "Allow once", show=False),
        Binding("2,a", "allow_always", "Allow always", show=False),
        Binding("3,n", "reject", "Reject", show=False),
        Binding("escape", "reject_now", "Reject", show=False),
    ]

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__(classes="permission-screen")
        self.request = request

    def compose(self) -> ComposeResult:
        always = ", ".join(self.request.always) or "this"
        with Vertical(id="permission-dialog"):
            yield Static(Text(request_title(self.request), style="bold"), id="permission-title")
            with VerticalScroll(id="permission-details"):
                yield Static(request_details(self.request), markup=False)
            with Horizontal(id="permission-buttons"):
                yield Button("1 Allow once", id="allow-once", variant="primary")
                yield Button("2 Allow always (this session)", id="allow-always", variant="success")
                yield Button("3 Reject", id="reject", variant="error")
            yield Static(Text(f"always allows: {always}", style="dim"), id="permission-always")
            yield Input(placeholder="Why not? (sent to the model; Enter to reject)", id="reject-reason")

    def on_mount(self) -> None:
        self.query_one("#reject-reason", Input).display = False
        self.query_one("#allow-once", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        actions = {"allow-once": self.action_allow_once, "allow-always": self.action_allow_always}
        actions.get(event.button.id or "", self.action_reject)()

    def action_allow_once(self) -> None:
        if not self._typing_reason():
            self.dismiss(Decision.allow_once())

    def action_allow_always(self) -> None:
        if not self._typing_reason():
            self.dismiss(Decision.allow_always())

    def action_reject(self) -> None:
        """Ask for a reason (optional): show the input and focus it."""
        if self._typing_reason():
            return
        reason = self.query_one("#reject-reason", Input)
        reason.display = True
        reason.focus()

    def action_reject_now(self) -> None:
        reason = self.query_one("#reject-reason", Input)
        self.dismiss(Decision.reject(reason.value.strip() or DEFAULT_REJECT))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(Decision.reject(event.value.strip() or DEFAULT_REJECT))

    def _typing_reason(self) -> bool:
        return isinstance(self.focused, Input)
