"""Issue 30, items 3 and 4 in a real terminal (tmux): Shift+Tab marks the tool block it
selects, and a string typed onto it in one burst (tmux sends it in one write, as an input
method's commit does) reaches the input whole, spaces included, and Enter sends it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.fake_llm import Call, FakeLLM, Reply, user_texts
from tests.require import needs
from tests.test_tui_cli import Tmux, _quote, tmux_env
from tests.tui_support import ProjectSpec

PROJECT = ProjectSpec(files={"notes.txt": "the number is 42\n"})


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_a_burst_typed_on_a_focused_block_keeps_its_spaces(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(text="Read it."),
        Reply(text="Fixed it."),
    )
    tmux = Tmux("focuskeys")
    try:
        tmux.start(f"env {tmux_env()} TERM=xterm-256color {_quote(sys.executable)} -m etcode", project)
        tmux.wait_for("Ask anything")
        tmux.run("send-keys", "-t", "focuskeys", "-l", "read notes")
        tmux.run("send-keys", "-t", "focuskeys", "Enter")
        tmux.wait_for("Read it.")
        tmux.run("send-keys", "-t", "focuskeys", "BTab")
        tmux.wait_for("▶ ReadFile (notes.txt)  ‹ enter expands")  # the selected block, marked
        tmux.run("send-keys", "-t", "focuskeys", "-l", "fix the bug")
        tmux.run("send-keys", "-t", "focuskeys", "Enter")
        screen = tmux.wait_for("Fixed it.")
    finally:
        tmux.kill()
    assert user_texts(llm.requests[-1].body)[-1] == "fix the bug"
    assert "● ReadFile (notes.txt)" in screen  # the mark went with the focus
