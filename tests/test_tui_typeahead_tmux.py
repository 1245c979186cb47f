"""Issue 30, item 1 in a real terminal (tmux): ``hello`` + Enter typed while etcode starts is
sent as ``hello`` (the terminal turned that Enter into a line feed before the app's raw
mode), the input is empty after it, the next message is a message of its own, and the
terminal's own settings are back after the chat."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from tests.fake_llm import FakeLLM, Reply, user_texts
from tests.require import needs
from tests.test_tui_cli import Tmux, _quote, tmux_env
from tests.tui_support import ProjectSpec

PROJECT = ProjectSpec()  # etcode.json for the fake LLM server
PLACEHOLDER = "Ask anything"
DONE = "__etcode_exited__"


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_enter_typed_while_etcode_starts_sends_the_message(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="First answer."), Reply(text="Second answer."))
    tmux = Tmux("typeahead")
    etcode = f"env {tmux_env()} TERM=xterm-256color {_quote(sys.executable)} -m etcode"
    try:
        tmux.start(f"{etcode}; stty -a; echo {DONE}; sleep 600", project)
        tmux.run("send-keys", "-t", "typeahead", "-l", "hello")  # within the first 200 ms
        tmux.run("send-keys", "-t", "typeahead", "Enter")  # tmux sends CR, as a terminal does
        early = tmux.screen()
        assert PLACEHOLDER not in early, "the app was up before the keys: the test proves nothing"
        screen = tmux.wait_for("First answer.")
        assert PLACEHOLDER in screen, f"the input is not empty after the answer:\n{screen}"
        tmux.run("send-keys", "-t", "typeahead", "-l", "again")
        tmux.run("send-keys", "-t", "typeahead", "Enter")
        tmux.wait_for("Second answer.")
        tmux.run("send-keys", "-t", "typeahead", "C-c")
        tmux.run("send-keys", "-t", "typeahead", "C-c")
        settings = tmux.wait_for(DONE)
    finally:
        tmux.kill()
    assert len(llm.requests) == 2, [user_texts(r.body) for r in llm.requests]
    assert user_texts(llm.requests[0].body)[-1] == "hello"
    assert user_texts(llm.requests[1].body)[-1] == "again"  # not glued to the first
    for flag in ("icrnl", "icanon", "echo"):  # the shell gets its cooked terminal back
        assert re.search(rf"(?<![-\w]){flag}\b", settings), (flag, settings)
