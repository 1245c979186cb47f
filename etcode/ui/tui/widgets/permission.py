"""The permission modal: the tool, its parameters (the command, or the diff of an edit) and
Allow once / Allow always (this session) / Reject with a reason passed to the model.

It cannot be answered by accident: keys typed before it was visible (and until the typing
stops) go to the chat input, and "Allow always" takes two deliberate steps."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual._time import get_time
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Input, Static, TextArea

from etcode.permission.service import Decision, PermissionRequest

DEFAULT_REJECT = "denied by the user"


def request_title(request: PermissionRequest) -> str:
    tool = request.tool or request.metadata.get("via") or request.permission
    if request.permission == "sandbox":
        return f"{tool} wants to run a command again outside the sandbox"
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
        if request.permission in ("read", "edit") and meta.get("via"):
            verb = "reads" if request.permission == "read" else "writes"
            text.append(f"\n{verb} {', '.join(request.patterns)}", style="yellow")
        for problem in meta.get("problems") or []:  # why a rule could not simply allow it
            text.append(f"\n{problem.removeprefix('syntax: ')}", style="yellow")
        if request.permission == "sandbox" and isinstance(meta.get("reason"), str):
            text.append(f"\nIt failed inside {meta['reason']}.", style="yellow")
        return text
    if isinstance(meta.get("reason"), str):
        return Text(f"{meta.get('url') or ', '.join(request.patterns)}\n{meta['reason']}")
    shown: dict[str, Any] = {k: v for k, v in meta.items() if k not in ("tool", "always")}
    if not shown:
        return Text("\n".join(request.patterns))
    return Text(json.dumps(shown, indent=2, ensure_ascii=False, default=str))


class PermissionScreen(ModalScreen[Decision]):
    """Dismisses with the user's :class:`Decision`.

    Type-ahead guard: the dialog is *guarded* (buttons disabled, a dim hint) until
    :attr:`ARM_DELAY` seconds have passed since its first paint and since the last key it
    ignored. A key that arrives before that, or that was typed before the dialog was painted
    (its ``time`` predates the paint), does nothing here: it is typed into the text field that
    had the focus under the dialog (the chat input), so the message being written is not lost.
    Once armed: ``1``/``y`` allow once, ``2``/``a`` select "Allow always" (Enter confirms),
    ``3``/``n`` reject with a reason, Esc rejects, ←/→/Tab move and Enter chooses. Any other
    printable key means the user is still typing: it goes to the chat input and the dialog is
    guarded again.
    """

    ARM_DELAY: ClassVar[float] = 0.5
    """Seconds without typing, after the first paint, before the dialog accepts keys."""
    AUTO_FOCUS = ""  # nothing is focused while guarded: every key reaches on_key first
    DIALOG_KEYS: ClassVar[frozenset[str]] = frozenset("123yan")

    BINDINGS = [
        Binding("1,y", "allow_once", "Allow once", show=False),
        Binding("2,a", "select_always", "Allow always", show=False),
        Binding("3,n", "reject", "Reject", show=False),
        Binding("escape", "reject_now", "Reject", show=False),
        Binding("left", "move(-1)", "Previous", show=False),
        Binding("right", "move(1)", "Next", show=False),
    ]

    def __init__(
        self,
        request: PermissionRequest,
        *,
        arm_delay: float | None = None,
        clock: Callable[[], float] = get_time,
    ) -> None:
        super().__init__(classes="permission-screen")
        self.request = request
        self.arm_delay = self.ARM_DELAY if arm_delay is None else arm_delay
        self.clock = clock  # the clock Textual stamps events with (``events.Key.time``)
        self.armed = False
        self.shown_at: float | None = None  # the first paint since the dialog (re)appeared
        self._last_typed = float("-inf")  # the latest key the guard swallowed
        self._arm_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        always = ", ".join(self.request.always) or "this"
        with Vertical(id="permission-dialog"):
            yield Static(Text(request_title(self.request), style="bold"), id="permission-title")
            with VerticalScroll(id="permission-details", can_focus=False):
                yield Static(request_details(self.request), markup=False)
            with Horizontal(id="permission-buttons"):
                yield Button("1 Allow once", id="allow-once", variant="primary", disabled=True)
                yield Button(
                    "2 Allow always (this session)", id="allow-always", variant="success", disabled=True
                )
                yield Button("3 Reject", id="reject", variant="error", disabled=True)
            yield Static(Text(f"always allows: {always}", style="dim"), id="permission-always")
            yield Static(id="permission-keys")
            yield Input(placeholder="Why not? (sent to the model; Enter to reject)", id="reject-reason")

    def on_mount(self) -> None:
        self.query_one("#reject-reason", Input).display = False
        self._show_hint()

    # ---- the guard -------------------------------------------------------------------
    def on_screen_resume(self) -> None:
        """Shown (again): guarded until ARM_DELAY after the next paint."""
        self.shown_at = None
        self._set_armed(False)
        self.call_after_refresh(self._painted)

    def on_screen_suspend(self) -> None:
        self.shown_at = None
        self._set_armed(False)

    def _painted(self) -> None:
        if self.shown_at is None and self.is_current:
            self.shown_at = self.clock()
            self._check_guard()

    def _arm_time(self) -> float | None:
        """When the dialog may accept keys (None: not painted yet)."""
        if self.shown_at is None:
            return None
        return max(self.shown_at, self._last_typed) + self.arm_delay

    def accepts(self, event: events.Key | events.Paste) -> bool:
        """Was this key pressed while the dialog was visible and armed?"""
        arm_time = self._arm_time()
        return self.armed and arm_time is not None and event.time >= arm_time

    def _check_guard(self) -> None:
        """Arm when the quiet time is over, else (re)start the timer for what is left."""
        if self._arm_timer is not None:
            self._arm_timer.stop()
            self._arm_timer = None
        arm_time = self._arm_time()
        if arm_time is None:
            self._set_armed(False)
            return
        left = arm_time - self.clock()
        if left <= 0:
            self._set_armed(True)
        else:
            self._set_armed(False)
            self._arm_timer = self.set_timer(left, self._check_guard)

    def _set_armed(self, armed: bool) -> None:
        if armed == self.armed:
            return
        self.armed = armed
        for button in self.query(Button):
            button.disabled = not armed
        self.query_one("#permission-details", VerticalScroll).can_focus = armed
        if armed and not self.typing_reason:
            self.query_one("#allow-once", Button).focus()
        self._show_hint()

    def _typed(self, event: events.Key | events.Paste) -> None:
        """A key or paste the dialog does not take: the user is typing. Give it to the
        chat input and wait for the typing to stop."""
        event.stop()
        event.prevent_default()
        self._last_typed = max(self._last_typed, event.time)
        pass_on(event, self._field_underneath())
        if self.shown_at is not None:
            self._check_guard()

    def _field_underneath(self) -> TextArea | Input | None:
        """The text field focused on the nearest screen under the dialog(s)."""
        for screen in reversed(self.app.screen_stack):
            if screen is self or isinstance(screen, PermissionScreen):
                continue
            focused = screen.focused
            return focused if isinstance(focused, (TextArea, Input)) else None
        return None

    async def on_key(self, event: events.Key) -> None:
        """Runs before any binding (nothing in the dialog is focused while guarded, and
        the buttons leave keys to the bindings)."""
        if not self.accepts(event):
            self._typed(event)
        elif event.is_printable and event.key not in self.DIALOG_KEYS and not self.typing_reason:
            self._typed(event)  # armed, but this is not an answer: still typing

    def on_paste(self, event: events.Paste) -> None:
        if not self.typing_reason:
            self._typed(event)

    # ---- answers ---------------------------------------------------------------------
    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if not self.armed:
            return
        actions = {"allow-once": self.action_allow_once, "allow-always": self.action_allow_always}
        actions.get(event.button.id or "", self.action_reject)()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._show_hint()

    def action_allow_once(self) -> None:
        if self.armed and not self.typing_reason:
            self.dismiss(Decision.allow_once())

    def action_select_always(self) -> None:
        """``2``/``a``: only select "Allow always"; Enter (or a click) confirms it."""
        if self.armed and not self.typing_reason:
            self.query_one("#allow-always", Button).focus()

    def action_allow_always(self) -> None:
        if self.armed and not self.typing_reason:
            self.dismiss(Decision.allow_always())

    def action_move(self, step: int) -> None:
        buttons = list(self.query("#permission-buttons Button").results(Button))
        if not self.armed or not buttons:
            return
        index = buttons.index(self.focused) if self.focused in buttons else (-1 if step > 0 else 0)
        buttons[(index + step) % len(buttons)].focus()

    def action_reject(self) -> None:
        """Ask for a reason (optional): show the input and focus it."""
        if not self.armed or self.typing_reason:
            return
        reason = self.query_one("#reject-reason", Input)
        reason.display = True
        reason.focus()
        self._show_hint()

    def action_reject_now(self) -> None:
        if not self.armed:
            return
        reason = self.query_one("#reject-reason", Input)
        self.dismiss(Decision.reject(reason.value.strip() or DEFAULT_REJECT))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(Decision.reject(event.value.strip() or DEFAULT_REJECT))

    @property
    def typing_reason(self) -> bool:
        return isinstance(self.focused, Input)

    def _show_hint(self) -> None:
        self.query_one("#permission-keys", Static).update(key_hint(self))


def key_hint(screen: PermissionScreen) -> Text:
    """The line under the buttons: why keys do nothing yet, or what each key does."""
    if not screen.armed:
        return Text("… waiting for the typing to stop: keys go to the chat input", style="dim")
    if screen.typing_reason:
        return Text("Enter rejects with this reason · Esc rejects", style="dim")
    focused = screen.focused
    if isinstance(focused, Button) and focused.id == "allow-always":
        always = ", ".join(screen.request.always) or "this"
        return Text(f"Enter: allow {always} for this session · ←/→ move · Esc reject", style="bold")
    return Text("1/y allow once · 2/a then Enter: always · 3/n or Esc reject", style="dim")


def pass_on(event: events.Key | events.Paste, field: TextArea | Input | None) -> None:
    """Type what the dialog ignored into ``field``: characters, pastes and Backspace.
    Enter, Esc and other keys are dropped (sending or interrupting is not for type-ahead)."""
    if field is None or getattr(field, "read_only", False):
        return
    if isinstance(event, events.Paste):
        text = event.text
    elif event.is_printable and event.character:
        text = event.character
    elif event.key == "backspace":
        field.action_delete_left()
        return
    else:
        return
    if isinstance(field, TextArea):
        field.insert(text, maintain_selection_offset=False)
    else:
        field.insert_text_at_cursor(text.splitlines()[0] if text else text)
