"""`etcode --inline` in a real terminal (tmux): the conversation stays in the scrollback."""

from __future__ import annotations

import shlex
import shutil
import sys
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
