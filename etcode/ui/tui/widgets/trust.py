"""The project-trust modal, shown before the chat's session starts when a project
``etcode.json`` has risky settings the user has not approved (see ``trust/project.py``).

Answers: trust the file (remembered until it changes), continue without those settings
(left out for this session), or quit. It has the permission dialog's type-ahead guard
(:mod:`~etcode.ui.tui.widgets.guard`): keys typed before it was visible, or until the typing
stops, go to the chat input. Trusting takes two deliberate steps (``1`` selects, Enter
confirms); the safe answer has the focus."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from rich.text import Text
from textual import events
from textual._time import get_time
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Static

from etcode.ui.tui.widgets.guard import GuardedModal

if TYPE_CHECKING:
    from etcode.config.trust import Finding

TrustAnswer = Literal["trust", "without", "quit"]
#: The answer of each button (by its id).
ANSWERS: dict[str, TrustAnswer] = {"trust": "trust", "without": "without", "quit": "quit"}

INTRO = (
    "This project's configuration would send your keys elsewhere or run programs. "
    "Only trust it if you trust where it comes from."
)


def title(findings: Sequence[Finding]) -> str:
    """``Trust this project's etcode.json?``, naming each kind of file asked about
    (``.claude/settings.json`` for a project's Claude Code hooks)."""
    from etcode.config.trust import join_names

    names = [f".claude/{f.file.name}" if f.file.parent.name == ".claude" else f.file.name for f in findings]
    return f"Trust this project's {join_names(names)}?"


class TrustScreen(GuardedModal[TrustAnswer]):
    """Dismisses with ``"trust"``, ``"without"`` or ``"quit"``.

    Once armed: ``1`` selects "Trust" (Enter confirms), ``2`` continues without the
    settings, ``3``/``q`` quits, Esc continues without, ←/→/Tab move and Enter chooses."""

    ANSWER_KEYS: ClassVar[frozenset[str]] = frozenset("123q")
    DEFAULT_CSS = """
    TrustScreen { align: center middle; }
    #trust-dialog {
        width: 90%; max-width: 110; height: auto; max-height: 100%;
        border: thick $error; background: $surface; padding: 0 1;
    }
    #trust-title { margin-bottom: 1; }
    #trust-details { height: auto; max-height: 10; border: round $panel; padding: 0 1; }
    #trust-buttons { height: auto; }
    #trust-buttons Button { margin-right: 2; }
    #trust-keys { color: $text-muted; }
    """
    BINDINGS = [
        Binding("1", "select_trust", "Trust", show=False),
        Binding("2", "answer('without')", "Continue without", show=False),
        Binding("3,q", "answer('quit')", "Quit", show=False),
        Binding("escape", "answer('without')", "Continue without", show=False),
        Binding("left", "move(-1)", "Previous", show=False),
        Binding("right", "move(1)", "Next", show=False),
    ]

    def __init__(
        self,
        findings: Sequence[Finding],
        *,
        arm_delay: float | None = None,
        clock: Callable[[], float] = get_time,
    ) -> None:
        super().__init__(arm_delay=arm_delay, clock=clock, classes="trust-screen")
        self.findings = list(findings)

    def compose(self) -> ComposeResult:
        from etcode.config.trust import describe

        with Vertical(id="trust-dialog"):
            yield Static(Text(title(self.findings), style="bold"), id="trust-title")
            yield Static(Text(INTRO, style="dim"))
            if any(f.key.startswith("hooks.") for f in self.findings):
                from etcode.config.trust import HOOKS_NOTE

                yield Static(Text(HOOKS_NOTE, style="dim"))
            with VerticalScroll(id="trust-details", can_focus=False):
                yield Static(Text("\n".join(describe(self.findings))), markup=False)
            with Horizontal(id="trust-buttons"):
                yield Button("1 Trust this file", id="trust", variant="error", disabled=True)
                yield Button("2 Continue without", id="without", variant="primary", disabled=True)
                yield Button("3 Quit", id="quit", disabled=True)
            yield Static(id="trust-keys")

    def on_mount(self) -> None:
        self._show_hint()

    # ---- the guard's hook ------------------------------------------------------------
    def guard_changed(self, armed: bool) -> None:
        self.query_one("#trust-details", VerticalScroll).can_focus = armed
        if armed:
            self.query_one("#without", Button).focus()
        self._show_hint()

    # ---- answers ---------------------------------------------------------------------
    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        answer = ANSWERS.get(event.button.id or "")
        if self.armed and answer is not None:
            self.dismiss(answer)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._show_hint()

    def action_select_trust(self) -> None:
        """``1``: only select "Trust"; Enter (or a click) confirms it."""
        if self.armed:
            self.query_one("#trust", Button).focus()

    def action_answer(self, answer: TrustAnswer) -> None:
        if self.armed:
            self.dismiss(answer)

    def action_move(self, step: int) -> None:
        buttons = list(self.query("#trust-buttons Button").results(Button))
        if not self.armed or not buttons:
            return
        index = buttons.index(self.focused) if self.focused in buttons else (-1 if step > 0 else 0)
        buttons[(index + step) % len(buttons)].focus()

    def _show_hint(self) -> None:
        self.query_one("#trust-keys", Static).update(trust_hint(self))


def trust_hint(screen: TrustScreen) -> Text:
    """The line under the buttons: why keys do nothing yet, or what each key does."""
    if not screen.armed:
        return Text("… waiting for the typing to stop: keys go to the chat input", style="dim")
    focused = screen.focused
    if isinstance(focused, Button) and focused.id == "trust":
        return Text(
            "Enter: trust this file (asked again if it changes) · ←/→ move · Esc without", style="bold"
        )
    return Text("1 then Enter: trust · 2 or Esc: continue without · 3/q: quit", style="dim")
