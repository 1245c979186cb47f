"""``✻ Working… 12s · ↓ 340 tokens``: the line above the input while the model works.

Shown from a turn's start until it ends; its tokens are the turn's output so far (the
finished steps' usage, plus about a token per 4 characters streamed in the current step).
It has no timer of its own: the status bar's spinner ticks it (:meth:`tick`), and a tick
repaints only when the text changed, so streaming deltas cost a counter increment.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from etcode.ui.live_tail import elapsed_text
from etcode.ui.tui.widgets.status import format_tokens

GLYPHS = "·✢✳✶✻✽✻✶✳✢"
CHARS_PER_TOKEN = 4


class WorkingLine(Static):
    DEFAULT_CSS = """
    WorkingLine { height: 1; padding: 0 1; display: none; color: $text-muted; }
    WorkingLine.-active { display: block; }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.active = False
        self.started = 0.0
        self.tokens_done = 0  # output tokens of the turn's finished steps (their usage)
        self.chars = 0  # characters streamed in the current step
        self.line_text = ""  # what the line shows (tests, screen readers)
        self._glyph = ""

    @property
    def tokens(self) -> int:
        return self.tokens_done + self.chars // CHARS_PER_TOKEN

    def start(self) -> None:
        """A turn started (the request is about to go out)."""
        self.active = True
        self.started = time.monotonic()
        self.tokens_done = self.chars = 0
        self.add_class("-active")
        self.tick(0)

    def stop(self) -> None:
        self.active = False
        self.remove_class("-active")
        self.line_text = ""

    def add_chars(self, count: int) -> None:
        """Text, reasoning or tool arguments streamed: counted, shown at the next tick."""
        self.chars += count

    def step_finished(self, output_tokens: int) -> None:
        """A model call ended: its real output count replaces the estimate."""
        if output_tokens > 0:
            self.tokens_done += output_tokens
            self.chars = 0

    def tick(self, frame: int) -> None:
        if not self.active:
            return
        text = f"Working… {elapsed_text(time.monotonic() - self.started)}"
        if self.tokens:
            text += f" · ↓ {format_tokens(self.tokens)} tokens"
        text += " · esc to interrupt"
        glyph = GLYPHS[frame // 2 % len(GLYPHS)]
        if text == self.line_text and glyph == self._glyph:
            return
        self.line_text, self._glyph = text, glyph
        line = Text()
        line.append(f"{glyph} ", style="bold")
        line.append(text)
        self.update(line)
