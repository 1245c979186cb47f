"""The status bar: agent, model, background processes running, context used (tokens, % of
the window and its size: ``1.2k tokens (30% of 4k)``), cost, busy.

A spinner ticks only while a turn runs; idle, nothing is scheduled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def format_tokens(count: int) -> str:
    """``950``, ``12.3k``, ``1.2M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M"


def format_window(count: int) -> str:
    """A window size as people name it: whole ``k`` (or ``M``) for a power of two or a round
    number (``4k`` for 4,096, ``128k`` for 131,072, ``200k``, ``1M`` for 1,000,000 or
    1,048,576), else :func:`format_tokens`."""
    for unit, suffix in ((1_048_576, "M"), (1_000_000, "M"), (1024, "k"), (1000, "k")):
        if count >= unit and count % unit == 0 and (suffix == "M" or count < 1_000_000):
            return f"{count // unit}{suffix}"
    return format_tokens(count)


def fit_line(left: Text, right: Text, width: int) -> Text:
    """``left`` and ``right`` on one line of ``width`` cells, never wrapped or cut off at
    the edge: when both do not fit, ``right`` keeps its first part (``⠋ working``, ``/help``)
    and ``left`` is shortened with an ellipsis."""
    if left.cell_len + right.cell_len + 1 > width:
        right = right.split(" · ")[0] if right.plain.strip() else right
    room = max(1, width - right.cell_len - 1)
    line = left.copy()
    if line.cell_len > room:
        line.truncate(room, overflow="ellipsis")
    line.append(" " * max(1, width - line.cell_len - right.cell_len))
    line.append_text(right)
    return line


@dataclass
class StatusInfo:
    """What the bar shows; each field comes from events (or the resolved config at start)."""

    agent: str = ""
    model: str = ""
    context_tokens: int | None = None
    context_limit: int | None = None
    cost: float | None = None
    busy: bool = False
    note: str = ""
    #: Background processes running (Bash ``run_in_background``); shown when not 0.
    background: int = 0

    def left(self) -> Text:
        text = Text()
        text.append(self.agent or "?", style="bold")
        text.append(" · ")
        text.append(self.model or "no model")
        if self.background:  # before the figures: on a narrow screen they are cut first
            text.append(" · ")
            text.append(f"⏵ {self.background} background", style="bold")
        if self.context_tokens is not None:
            text.append(" · ")
            context = f"{format_tokens(self.context_tokens)} tokens"
            if self.context_limit:
                percent = self.context_tokens * 100 / self.context_limit
                context += f" ({percent:.0f}% of {format_window(self.context_limit)})"
            text.append(context)
        if self.cost is not None:
            text.append(f" · ${self.cost:.4f}" if self.cost < 1 else f" · ${self.cost:.2f}")
        return text


class StatusBar(Static):
    """One line at the bottom of the screen."""

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.info = StatusInfo()
        self._frame = 0
        self._timer: Timer | None = None
        #: False shows a still "●" while busy (snapshot tests; a calmer screen).
        self.spinner = True
        self._ticks = 0
        #: Called with a tick count at each spinner frame while busy (elapsed times, the
        #: working line): the app's one timer, stopped when idle.
        self.tick_listeners: list[Callable[[int], None]] = []
        #: Called with the new state when a turn starts or ends.
        self.busy_listeners: list[Callable[[bool], None]] = []

    def on_mount(self) -> None:
        self.refresh_text()

    def update_info(self, **changes: object) -> None:
        for key, value in changes.items():
            setattr(self.info, key, value)
        self.refresh_text()

    def set_busy(self, busy: bool) -> None:
        """Start or stop the spinner (the only timer the app runs)."""
        self.info.busy = busy
        if busy and self._timer is None and self.spinner:
            self._timer = self.set_interval(0.12, self._tick)
        elif not busy and self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.refresh_text()
        for listener in self.busy_listeners:
            listener(busy)

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        self._ticks += 1
        self.refresh_text()
        for listener in self.tick_listeners:
            listener(self._ticks)

    def refresh_text(self) -> None:
        text = self.info.left()
        if self.info.busy:
            mark = SPINNER[self._frame] if self.spinner else "●"
            right = Text(f"{mark} working · esc to interrupt", style="bold")
        else:
            right = Text(self.info.note or "/help · ctrl+c twice to quit", style="dim")
        self.update(fit_line(text, right, self.size.width or 80))

    def on_resize(self) -> None:
        self.refresh_text()
