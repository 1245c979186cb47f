"""`etcode --inline` in a real terminal (tmux): the conversation stays in the scrollback."""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from pathlib import Path

from tests.fake_llm import FakeLLM, Reply
from tests.require import needs
from tests.test_tui_cli import Tmux, tmux_env
from tests.tui_support import ProjectSpec

DONE = "__etcode_exited__"
#: Longer than the inline area (70% of 40 rows): its start has scrolled out of the live view.
ANSWER = "First line ALPHA.\n\n" + "\n".join(f"- point {n}" for n in range(1, 41)) + "\n\nLast line OMEGA."


PROJECT = ProjectSpec()  # etcode.json for the fake LLM server


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_inline_chat_leaves_the_conversation_in_the_scrollback(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text=ANSWER))
    tmux = Tmux("inline")
    env = tmux_env()
    etcode = (
        f"env -u COLUMNS -u LINES {env} TERM=xterm-256color {shlex.quote(sys.executable)} -m etcode --inline"
    )
    try:
        # a shell's prompt line first (as in use: the inline frame does not start on row 0,
        # where tmux would push the whole cleared screen into the history), and the pane
        # outlives etcode
        tmux.start(f"echo '$ etcode --inline'; {etcode}; echo {DONE}; sleep 600", project)
        tmux.wait_for("Ask anything")
        tmux.run("send-keys", "-t", "inline", "-l", "tell me forty things")
        tmux.run("send-keys", "-t", "inline", "Enter")
        tmux.wait_for("Last line OMEGA.")
        tmux.run("send-keys", "-t", "inline", "C-c")
        tmux.wait_for("Press Ctrl+C again")
        tmux.run("send-keys", "-t", "inline", "C-c")
        last_screen = tmux.wait_for(DONE)
        history = tmux.run("capture-pane", "-p", "-t", "inline", "-S", "-200").stdout
    finally:
        tmux.kill()
    # the whole conversation is in the terminal's scrollback, in order
    assert "> tell me forty things" in history, history
    for line in ("First line ALPHA.", "point 1", "point 40", "Last line OMEGA."):
        assert line in history, (line, history)
    assert history.index("First line ALPHA.") < history.index("Last line OMEGA.")
    # the inline frame is gone: no input box, no toast, no status bar left behind
    assert "Ask anything" not in last_screen, last_screen
    assert "Press Ctrl+C again" not in last_screen, last_screen
    assert "ctrl+c twice to quit" not in last_screen, last_screen
    # and how to come back
    assert "Resume this session: etcode -c" in last_screen, last_screen
    assert "etcode --session ses_" in last_screen, last_screen


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_a_resized_inline_chat_leaves_no_frame_in_the_scrollback(project: Path, llm: FakeLLM) -> None:
    """A resize redraws the frame where it is: tmux (scroll-on-clear, its default) pushed a
    copy of the whole screen into the scrollback when Textual cleared it (``ESC [2J``), so
    the transcript's tail, the input box and the status bar stayed above the conversation."""
    llm.script(Reply(text=ANSWER))
    tmux = Tmux("inline")
    env = tmux_env()
    etcode = (
        f"env -u COLUMNS -u LINES {env} TERM=xterm-256color {shlex.quote(sys.executable)} -m etcode --inline"
    )
    try:
        tmux.start(f"echo '$ etcode --inline'; {etcode}; echo {DONE}; sleep 600", project)
        tmux.wait_for("Ask anything")
        tmux.run("send-keys", "-t", "inline", "-l", "tell me forty things")
        tmux.run("send-keys", "-t", "inline", "Enter")
        tmux.wait_for("Last line OMEGA.")
        tmux.wait_for("ctrl+c twice to quit")  # the turn is over
        for width, height in (("150", "40"), ("150", "32")):  # wider, then shorter
            tmux.run("resize-window", "-t", "inline", "-x", width, "-y", height)
            _wait_for_frame(tmux, int(width), int(height))
        tmux.run("send-keys", "-t", "inline", "C-c")
        tmux.wait_for("Press Ctrl+C again")
        tmux.run("send-keys", "-t", "inline", "C-c")
        tmux.wait_for(DONE)
        history = tmux.run("capture-pane", "-p", "-t", "inline", "-S", "-300").stdout
    finally:
        tmux.kill()
    # the conversation once, in order, and nothing of the frame
    for line in ("> tell me forty things", "First line ALPHA.", "point 20", "point 40", "Last line OMEGA."):
        assert history.count(line) == 1, (line, history)
    for frame in ("Ask anything", "ctrl+c twice to quit", "▔▔▔", "▁▁▁", "╭──"):
        assert frame not in history, (frame, history)
    assert history.index("$ etcode --inline") < history.index("> tell me forty things"), history


def _wait_for_frame(tmux: Tmux, width: int, height: int) -> None:
    """Until the frame is drawn again for the new size: its input box spans ``width`` and
    it takes no more than its 70% of ``height`` (from its top edge ``▔`` to its bottom ``▁``)."""
    deadline = time.monotonic() + 30
    screen = ""
    while time.monotonic() < deadline:
        lines = tmux.screen().splitlines()
        screen = "\n".join(lines)
        boxes = [line for line in lines if line.startswith("╭")]
        top = next((i for i, line in enumerate(lines) if line.startswith("▔")), -1)
        bottom = next((i for i, line in enumerate(lines) if line.startswith("▁")), -1)
        if boxes and len(boxes[-1]) == width and 0 <= top < bottom <= top + height * 0.7 + 1:
            return
        time.sleep(0.1)
    raise AssertionError(f"the inline frame was not drawn again at {width}x{height}:\n{screen}")
