"""`etcode` without a sub-command: the chat in a real terminal (tmux), `etcode run` in a pipe."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import write_config


@pytest.fixture
def project(tmp_path: Path, llm: FakeLLM) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    write_config(folder, llm)
    (folder / "notes.txt").write_text("the secret number is 42\n", encoding="utf-8")
    return folder


def test_piped_etcode_behaves_as_run(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="Piped answer."))
    proc = subprocess.run(
        [sys.executable, "-m", "etcode"],
        cwd=project,
        input="summarise this",
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Piped answer.\n"
    assert "summarise this" in str(llm.requests[0].body["messages"])


def test_piped_etcode_without_a_task_is_a_usage_error(project: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "etcode"], cwd=project, input="", capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "no task given" in proc.stderr
    assert "Traceback" not in proc.stderr


class Tmux:
    """A private tmux server (its own socket) running one session."""

    def __init__(self, name: str) -> None:
        self.socket = f"etcode-test-{os.getpid()}-{name}"
        self.name = name

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30, check=check
        )

    def start(self, command: str, cwd: Path) -> None:
        self.run("new-session", "-d", "-s", self.name, "-x", "120", "-y", "40", "-c", str(cwd), command)

    def screen(self) -> str:
        proc = self.run("capture-pane", "-p", "-t", self.name, check=False)
        return proc.stdout if proc.returncode == 0 else ""

    def alive(self) -> bool:
        return self.run("has-session", "-t", self.name, check=False).returncode == 0

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared on screen:\n{screen}")

    def kill(self) -> None:
        self.run("kill-server", check=False)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_real_etcode_in_tmux(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(text="The number is 42."),
    )
    tmux = Tmux("chat")
    env = " ".join(f"{k}={_quote(v)}" for k, v in os.environ.items() if k in _ENV_KEYS)
    command = f"env {env} TERM=xterm-256color {_quote(sys.executable)} -m etcode"
    try:
        tmux.start(command, project)
        tmux.wait_for("Ask anything")
        tmux.run("send-keys", "-t", "chat", "-l", "what number is in notes.txt?")
        tmux.run("send-keys", "-t", "chat", "Enter")
        screen = tmux.wait_for("The number is 42.")
        assert "● ReadFile (notes.txt)" in screen
        assert "└ " in screen and "executing" not in screen
        assert "fake/test-model" in screen  # the status bar
        tmux.run("send-keys", "-t", "chat", "C-c")
        tmux.run("send-keys", "-t", "chat", "C-c")
        deadline = time.monotonic() + 15
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not tmux.alive(), "etcode did not quit on Ctrl+C twice:\n" + tmux.screen()
    finally:
        tmux.kill()
    assert len(llm.requests) == 2


_ENV_KEYS = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "PATH", "NO_COLOR",
             "TIKTOKEN_CACHE_DIR", "PYTHONPATH")  # fmt: skip


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)
