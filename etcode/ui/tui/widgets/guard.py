"""The type-ahead guard shared by the dialogs that must not be answered by accident (the
permission dialog, the project-trust dialog).

A guarded dialog ignores every key until :attr:`GuardedModal.ARM_DELAY` seconds have
passed since its first paint and since the last key it ignored. A key that arrives before
that, or that was typed before the dialog was painted (its ``time`` predates the paint), does
nothing there: it is typed into the text field that had the focus under the dialog (the chat
input), so the message being written is not lost. Once armed, the dialog's own keys
(:attr:`GuardedModal.ANSWER_KEYS`) and the non-printable ones (arrows, Enter, Esc) work;
any other printable key means the user is still typing and guards the dialog again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, TypeVar

from textual import events
from textual._time import get_time
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Input, TextArea

ResultT = TypeVar("ResultT")


class GuardedModal(ModalScreen[ResultT]):
    """A modal screen with the type-ahead guard. Subclasses compose their buttons
    ``disabled=True``; :meth:`guard_changed` runs on every arm/disarm (the buttons are
    already switched); :meth:`typing_in_dialog` says when keys belong to a text field of the
    dialog itself. ``arm_delay`` (default :attr:`ARM_DELAY`) and ``clock`` are for tests."""

    ARM_DELAY: ClassVar[float] = 0.5
    """Seconds without typing, after the first paint, before the dialog accepts keys."""
    AUTO_FOCUS = ""  # nothing is focused while guarded: every key reaches on_key first
    ANSWER_KEYS: ClassVar[frozenset[str]] = frozenset()
    """Printable keys that answer the dialog once armed (any other one is typing)."""

    def __init__(
        self,
        *,
        arm_delay: float | None = None,
        clock: Callable[[], float] = get_time,
        classes: str | None = None,
    ) -> None:
        super().__init__(classes=classes)
        self.arm_delay = self.ARM_DELAY if arm_delay is None else arm_delay
        self.clock = clock  # the clock Textual stamps events with (``events.Key.time``)
        self.armed = False
        self.shown_at: float | None = None  # the first paint since the dialog (re)appeared
        self._last_typed = float("-inf")  # the latest key the guard swallowed
        self._arm_timer: Timer | None = None

    # ---- hooks -------------------------------------------------------------------------
    def guard_changed(self, armed: bool) -> None:
        """The dialog was armed or guarded again (focus a button, update a hint...)."""

    def typing_in_dialog(self) -> bool:
        """True while a text field of the dialog itself has the keys (e.g. a reason)."""
        return False

    # ---- the guard ---------------------------------------------------------------------
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
        self.guard_changed(armed)

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
        """The text field focused on the nearest screen under the guarded dialog(s)."""
        for screen in reversed(self.app.screen_stack):
            if screen is self or isinstance(screen, GuardedModal):
                continue
            focused = screen.focused
            return focused if isinstance(focused, (TextArea, Input)) else None
        return None

    async def on_key(self, event: events.Key) -> None:
        """Runs before any binding (nothing in the dialog is focused while guarded, and
        the buttons leave keys to the bindings)."""
        if not self.accepts(event):
            self._typed(event)
        elif event.is_printable and event.key not in self.ANSWER_KEYS and not self.typing_in_dialog():
            self._typed(event)  # armed, but this is not an answer: still typing

    def on_paste(self, event: events.Paste) -> None:
        if not self.typing_in_dialog():
            self._typed(event)


def pass_on(event: events.Key | events.Paste, field: TextArea | Input | None) -> None:
    """Type what the dialog ignored into ``field``: characters, pastes and Backspace.
    Enter, Esc and other keys are dropped (sending or interrupting is not for type-ahead)."""
    if field is None or (isinstance(field, TextArea) and field.read_only):
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
