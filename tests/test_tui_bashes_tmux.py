"""Issue 29 in a real terminal (tmux): the status bar shows a background process, and
closing the terminal (``tmux kill-session``: SIGHUP) ends its whole process group, not only
the chat."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.fake_llm import Call, FakeLLM, Reply
from tests.process_support import group_alive, kill_all, live_with, token
from tests.project_support import ProjectSpec
from tests.require import needs
from tests.test_tui_cli import Tmux, _quote, tmux_env

PROJECT = ProjectSpec(settings={"permission": {"bash": "allow"}})


def _gone(check: Callable[[], object], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not check():
            return True
        time.sleep(0.1)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_closing_the_terminal_ends_the_background_group(project: Path, llm: FakeLLM) -> None:
    mark, pid_file = token(), project / "group.pid"
    command = f"echo $$ > {pid_file}; sleep {mark} & sleep {mark} & wait"
    llm.script(
        Reply(calls=[Call("Bash", {"command": command, "run_in_background": True}, id="call_bg")]),
        Reply(text="Started in the background."),
    )
    tmux = Tmux("bghangup")
    chat_pid = pgid = 0
    try:
        tmux.start(f"env {tmux_env()} TERM=xterm-256color {_quote(sys.executable)} -m etcode", project)
        tmux.wait_for("Ask anything")
        chat_pid = int(tmux.run("list-panes", "-t", "bghangup", "-F", "#{pane_pid}").stdout.strip())
        tmux.run("send-keys", "-t", "bghangup", "-l", "start the sleepers")
        tmux.run("send-keys", "-t", "bghangup", "Enter")
        tmux.wait_for("Started in the background.")
        tmux.wait_for("⏵ 1 background")  # the status bar
        pgid = int(pid_file.read_text().strip())
        assert group_alive(pgid) and len(live_with(mark)) >= 2
        tmux.run("kill-session", "-t", "bghangup")  # the pane's processes get SIGHUP
        assert _gone(lambda: group_alive(pgid), 30), "the background group outlived the closed terminal"
        assert live_with(mark) == []
        assert _gone(lambda: _alive(chat_pid), 30), "etcode kept running after its terminal closed"
    finally:
        tmux.kill()
        kill_all(live_with(mark))
        for pid in (chat_pid,):
            if pid:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        if pgid:
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
