"""Issue 15 in a real terminal (tmux): keys typed right after launch, and after Tab /
Shift+Tab, all land in the input, in order, and are sent."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from tests.fake_llm import FakeLLM, Reply
from tests.require import needs
from tests.test_tui_cli import Tmux, _quote, tmux_env
from tests.tui_support import ProjectSpec

PROJECT = ProjectSpec()  # etcode.json for the fake LLM server


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_type_ahead_and_tab_keep_every_key(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="Got every key."))
    tmux = Tmux("keys")
    env = tmux_env()
    try:
        tmux.start(f"env {env} TERM=xterm-256color {_quote(sys.executable)} -m etcode", project)
        early = tmux.screen()
        tmux.run("send-keys", "-t", "keys", "-l", "hello there")  # before the app is up
        assert "Ask anything" not in early, "the app was up before the keys: the test proves nothing"
        tmux.wait_for("hello there")  # the input shows it (the placeholder is gone)
        tmux.run("send-keys", "-t", "keys", "Tab")
        tmux.run("send-keys", "-t", "keys", "-l", " more")
        tmux.run("send-keys", "-t", "keys", "BTab")
        tmux.run("send-keys", "-t", "keys", "-l", " keys")
        tmux.wait_for("hello there more keys")
        tmux.run("send-keys", "-t", "keys", "Enter")
        tmux.wait_for("Got every key.")
        tmux.run("send-keys", "-t", "keys", "C-c")
        tmux.run("send-keys", "-t", "keys", "C-c")
        deadline = time.monotonic() + 15
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        tmux.kill()
    assert len(llm.requests) == 1
    assert "hello there more keys" in str(llm.requests[0].body["messages"])
