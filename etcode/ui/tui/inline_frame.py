"""``--inline``: a resize redraws the frame in place instead of clearing the whole screen.

Textual's inline driver answers a resize (SIGWINCH) with ``ESC [2J``, clearing the whole
screen. Many terminals (tmux's ``scroll-on-clear``, the default; VTE; kitty) first push
what the screen holds into the scrollback, so after every resize a copy of the frame (the
transcript's tail, the input box, the status bar) stayed in the scrollback above the
conversation printed on exit. The frame is redrawn from its own top, where the cursor
rests between updates: clearing from there down (``ESC [J``) is enough, and the lines
above it (the shell's, the scrollback) are left alone.

A narrowing the terminal reflows can still leave some of the frame behind: lines wider
than the new width are rewrapped by the terminal before the signal arrives, and what
rose past the screen's top is out of reach.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.driver import Driver

CLEAR_SCREEN = "\x1b[2J"
CLEAR_DOWN = "\x1b[J"


def clear_from_frame_top(driver: Driver) -> None:
    """Make ``driver`` (Textual's inline driver) clear from the frame's top down where it
    would clear the whole screen on a resize."""
    write = driver.write

    def frame_write(data: str) -> None:
        write(CLEAR_DOWN if data == CLEAR_SCREEN else data)

    driver.write = frame_write  # type: ignore[method-assign]
