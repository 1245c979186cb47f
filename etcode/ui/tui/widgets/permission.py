"""The permission modal: the tool, its parameters (the command, or the diff of an edit) and
Allow once / Allow always (this session) / Reject with a reason passed to the model.

It cannot be answered by accident: keys typed before it was visible (and until the typing
stops) go to the chat input, and "Allow always" takes two deliberate steps."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import ClassVar

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual._time import get_time
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, Input, Static

from etcode.permission.service import Decision, PermissionRequest
from etcode.ui.tui.diff_view import diff_rows, numbered_diff
from etcode.ui.tui.theme import code_theme
from etcode.ui.tui.widgets.guard import GuardedModal, pass_on
from etcode.util.json_types import JsonObject

__all__ = ["PermissionScreen", "key_hint", "pass_on", "request_details", "request_title"]

DEFAULT_REJECT = "denied by the user"
#: Rows of an edit's diff in the dialog (it scrolls; past these, ``… N more lines``).
MAX_DIFF_ROWS = 400
#: The largest part of the screen the dialog takes (the conversation stays in sight).
MAX_SHARE = 0.4
#: The dialog's rows besides its details: the top border, title, buttons, scope, keys.
DIALOG_CHROME = 5
MIN_DETAIL_ROWS = 3


def request_title(request: PermissionRequest) -> str:
    tool = request.tool or request.metadata.get("via") or request.permission
    if request.permission == "sandbox":
        return f"{tool} wants to run a command again outside the sandbox"
    return f"{tool} wants permission: {request.permission} {', '.join(request.patterns)}"


def diff_context(request: PermissionRequest, rows: int) -> int | None:
    """The unchanged lines kept around each change of an edit's diff so that it fits in
    ``rows`` (all of the hunk's when it fits; never fewer than one, then it scrolls)."""
    diff = request.metadata.get("diff")
    if not isinstance(diff, str):
        return None
    for context in (None, 2):
        if len(diff_rows(diff, context)) <= rows:
            return context
    return 1


def request_details(request: PermissionRequest, context: int | None = None) -> RenderableType:
    """What is about to happen: a diff (``context``: see :func:`diff_context`), a command,
    or the remaining metadata."""
    meta = request.metadata
    diff = meta.get("diff")
    if isinstance(diff, str) and diff.strip():
        numbered = numbered_diff(diff, MAX_DIFF_ROWS, context=context)
        if numbered is not None:
            return numbered
        return Syntax(diff, "diff", theme=code_theme(), word_wrap=True, background_color="default")
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
    shown: JsonObject = {k: v for k, v in meta.items() if k not in ("tool", "always")}
    if not shown:
        return Text("\n".join(request.patterns))
    return Text(json.dumps(shown, indent=2, ensure_ascii=False, default=str))


class PermissionScreen(GuardedModal[Decision]):
    """Dismisses with the user's :class:`Decision`.

    Type-ahead guard (:mod:`~etcode.ui.tui.widgets.guard`): the dialog is *guarded* (buttons
    disabled, a dim hint) until :attr:`ARM_DELAY` seconds have passed since its first paint
    and since the last key it ignored. A key that arrives before that, or that was typed
    before the dialog was painted (its ``time`` predates the paint), does nothing here: it is
    typed into the text field that had the focus under the dialog (the chat input), so the
    message being written is not lost. Once armed: ``1``/``y`` allow once, ``2``/``a`` select
    "Allow always" (Enter confirms), ``3``/``n`` reject with a reason, Esc rejects, ←/→/Tab
    move and Enter chooses. Any other printable key means the user is still typing: it goes
    to the chat input and the dialog is guarded again.
    """

    ARM_DELAY: ClassVar[float] = 0.5
    """Seconds without typing, after the first paint, before the dialog accepts keys."""
    AUTO_FOCUS = ""  # nothing is focused while guarded: every key reaches on_key first
    DIALOG_KEYS: ClassVar[frozenset[str]] = frozenset("123yan")
    ANSWER_KEYS = DIALOG_KEYS

    BINDINGS = [
        Binding("1,y", "allow_once", "Allow once", show=False),
        Binding("2,a", "select_always", "Allow always", show=False),
        Binding("3,n", "reject", "Reject", show=False),
        Binding("escape", "reject_now", "Reject", show=False),
        Binding("left", "move(-1)", "Previous", show=False),
        Binding("right", "move(1)", "Next", show=False),
        Binding("up", "scroll_details(-1)", "Scroll up", show=False),
        Binding("down", "scroll_details(1)", "Scroll down", show=False),
        Binding("pageup", "scroll_details(-8)", "Page up", show=False),
        Binding("pagedown", "scroll_details(8)", "Page down", show=False),
    ]

    def __init__(
        self,
        request: PermissionRequest,
        *,
        arm_delay: float | None = None,
        clock: Callable[[], float] = get_time,
    ) -> None:
        super().__init__(arm_delay=arm_delay, clock=clock, classes="permission-screen")
        self.request = request
        self._shrunk: Widget | None = None  # the transcript made shorter for the dialog
        self._diff_context: int | None = None  # the diff's context lines shown (None: the hunk's)
        self._fitted_rows = 0  # the detail rows the context was chosen for

    def compose(self) -> ComposeResult:
        always = ", ".join(self.request.always) or "this"
        with Vertical(id="permission-dialog"):
            yield Static(Text(request_title(self.request), style="bold"), id="permission-title")
            with VerticalScroll(id="permission-details", can_focus=False):
                yield Static(request_details(self.request), markup=False, id="permission-body")
            with Horizontal(id="permission-buttons"):
                yield Button("1 Allow once", id="allow-once", variant="primary", disabled=True, compact=True)
                yield Button(
                    "2 Allow always (this session)",
                    id="allow-always",
                    variant="success",
                    disabled=True,
                    compact=True,
                )
                yield Button("3 Reject", id="reject", variant="error", disabled=True, compact=True)
            yield Static(Text(f"always allows: {always}", style="dim"), id="permission-always")
            yield Static(id="permission-keys")
            yield Input(
                placeholder="Why not? (sent to the model; Enter to reject)", id="reject-reason", compact=True
            )

    def on_mount(self) -> None:
        self.query_one("#reject-reason", Input).display = False
        self._show_hint()
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Keep the conversation visible: the dialog sits on the bottom of the transcript
        (the input and status bar below it stay in sight), takes at most :data:`MAX_SHARE`
        of the screen (a longer diff scrolls), and the transcript ends above it."""
        height = self.size.height or self.app.size.height
        body, below = self._transcript_body(height)
        self.query_one("#permission-dialog", Vertical).styles.margin = (0, 0, below, 0)
        chrome = DIALOG_CHROME + (1 if self.query_one("#reject-reason", Input).display else 0)
        rows = max(MIN_DETAIL_ROWS, int(height * MAX_SHARE) - chrome)
        self.query_one("#permission-details", VerticalScroll).styles.max_height = rows
        if rows != self._fitted_rows:  # the changes in sight before the context lines
            self._fitted_rows = rows
            context = diff_context(self.request, rows)
            if context != self._diff_context:
                self._diff_context = context
                self.query_one("#permission-body", Static).update(request_details(self.request, context))
        if body is not None:
            self.call_after_refresh(self._make_room, body)

    def _transcript_body(self, height: int) -> tuple[Widget | None, int]:
        """The chat's ``#body`` under this dialog (None in another app) and the rows below it."""
        stack = self.app.screen_stack
        if len(stack) < 2 or stack[-1] is not self:
            return None, 0
        base = stack[-2]
        body = next(iter(base.query("#body")), None)
        if body is None or body.parent is not base:
            return None, 0
        after = list(base.children)[list(base.children).index(body) + 1 :]
        tops = [w.region.y for w in after if w.display and w.region.height]
        return body, max(0, height - min(tops)) if tops else 0

    def _make_room(self, body: Widget) -> None:
        """The transcript ends above the dialog (it scrolls its newest lines into sight)."""
        if self.is_attached and self.app.screen is self:
            body.styles.margin = (0, 0, self.query_one("#permission-dialog", Vertical).outer_size.height, 0)
            self._shrunk = body

    def on_unmount(self) -> None:
        self._give_room_back()

    def dismiss(self, result: Decision | None = None) -> AwaitComplete:
        self._give_room_back()
        return super().dismiss(result)

    def _give_room_back(self) -> None:
        if self._shrunk is not None:
            self._shrunk.styles.margin = (0, 0, 0, 0)
            self._shrunk = None

    # ---- the guard's hooks -----------------------------------------------------------
    def guard_changed(self, armed: bool) -> None:
        self.query_one("#permission-details", VerticalScroll).can_focus = armed
        if armed and not self.typing_reason:
            self.query_one("#allow-once", Button).focus()
        self._show_hint()

    def typing_in_dialog(self) -> bool:
        return self.typing_reason

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

    def action_scroll_details(self, rows: int) -> None:
        """↑/↓, PgUp/PgDn: scroll a diff longer than the dialog (the buttons keep the focus)."""
        if self.armed and not self.typing_reason:
            self.query_one("#permission-details", VerticalScroll).scroll_relative(y=rows, animate=False)

    @property
    def details_overflow(self) -> bool:
        """True when the details are longer than the dialog shows (they scroll)."""
        return self.query_one("#permission-details", VerticalScroll).max_scroll_y > 0

    def action_reject(self) -> None:
        """Ask for a reason (optional): show the input and focus it."""
        if not self.armed or self.typing_reason:
            return
        reason = self.query_one("#reject-reason", Input)
        reason.display = True
        reason.focus()
        self._show_hint()
        self._fit()

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
    scroll = " · ↑/↓ scroll" if screen.details_overflow else ""
    return Text(f"1/y allow once · 2/a then Enter: always · 3/n or Esc reject{scroll}", style="dim")
