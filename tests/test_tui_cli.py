"""`etcode` without a sub-command: the chat in a real terminal (tmux), `etcode run` in a pipe."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.fake_llm import Call, FakeLLM, Recorded, Reply
from tests.require import needs
from tests.tui_support import ProjectSpec, write_config

PROJECT = ProjectSpec(files={"notes.txt": "the secret number is 42\n"})


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


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_real_etcode_in_tmux(project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    llm.script(
        Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(text="The number is 42."),
    )
    llm.page("GET /props", {"default_generation_settings": {"n_ctx": 32768}})  # a llama.cpp server
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "60")  # its answer counts, also on a loaded machine
    tmux = Tmux("chat")
    env = tmux_env()
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
        assert re.search(r"tokens \(\d+% of \d+k\)", screen), (
            screen,
            llm.side_requests,
        )  # of the stated window
        tmux.run("send-keys", "-t", "chat", "C-c")
        tmux.run("send-keys", "-t", "chat", "C-c")
        deadline = time.monotonic() + 15
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not tmux.alive(), "etcode did not quit on Ctrl+C twice:\n" + tmux.screen()
    finally:
        tmux.kill()
    assert len(llm.requests) == 2


TYPING = "then run anyway pls"
KEY_GAP = 0.06  # seconds between keys: normal typing speed
DIALOG = "Bash wants permission"
ARMED = "1/y allow once"


def _rm(target: str) -> Reply:
    return Reply(calls=[Call("Bash", {"command": f"rm -rf {target}", "description": f"remove {target}"})])


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_typing_while_the_permission_dialog_appears_answers_nothing(project: Path, llm: FakeLLM) -> None:
    """Issue 12.1 in a real terminal: the user types a follow-up at normal speed while the
    turn runs; the dialog for `rm -rf build` appears mid-word. Nothing is approved (the old
    dialog took `n`/`a`/`y` from the sentence), the sentence stays in the chat input, and
    only a deliberate key after the typing stops runs the command."""
    write_config(project, llm, permission={"bash": "ask"})
    (project / "build").mkdir()
    (project / "dist").mkdir()
    release = threading.Event()

    def held(recorded: Recorded) -> Reply:  # the model "thinks" until the typing has begun
        release.wait(60)
        return _rm("build")

    llm.script(held, _rm("dist"), Reply(text="All clean."))
    tmux = Tmux("typeahead")
    env = tmux_env()
    try:
        tmux.start(f"env {env} TERM=xterm-256color {_quote(sys.executable)} -m etcode", project)
        tmux.wait_for("Ask anything")
        tmux.run("send-keys", "-t", "typeahead", "-l", "clean up")
        tmux.run("send-keys", "-t", "typeahead", "Enter")
        _wait(lambda: llm.requests, "the model request")
        typed = _type_through_the_dialog(tmux, release)
        build = project / "build"
        _wait(
            lambda: _squash(typed) in _squash(tmux.screen()) or not build.is_dir(),
            "the typed text in the chat input",
            tmux,
            30,
        )
        screen = tmux.screen()
        assert build.is_dir(), "type-ahead approved the command:\n" + screen
        assert f"{DIALOG}: bash rm -rf build" in screen
        assert len(llm.requests) == 1  # nothing answered yet
        screen = tmux.wait_for(ARMED, timeout=60)  # the typing stopped: the dialog takes keys
        assert _squash(typed) in _squash(screen) and build.is_dir()
        tmux.run("send-keys", "-t", "typeahead", "y")  # deliberate: allow once
        _wait(lambda: not (project / "build").exists(), "rm -rf build to run")
        tmux.wait_for(f"{DIALOG}: bash rm -rf dist", timeout=60)  # asked again: no "always" rule
        tmux.wait_for(ARMED, timeout=60)
        tmux.run("send-keys", "-t", "typeahead", "Escape")  # reject
        tmux.wait_for("All clean.", timeout=60)
        assert (project / "dist").is_dir()
    finally:
        release.set()
        tmux.kill()
    assert "denied by the user" in str(llm.requests[2].body)


def _type_through_the_dialog(tmux: Tmux, release: threading.Event) -> str:
    """Type TYPING key by key; let the model answer after "then run" (so the old dialog met
    " anyway": `a` = allow always), and keep typing (the sentence again if need be) until at
    least eight keys went in after the dialog showed. The screen is watched from another
    thread, so the keys keep their pace."""
    typed: list[str] = []
    seen_at: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set() and not seen_at:
            if DIALOG in tmux.screen():
                seen_at.append(len(typed))
            done.wait(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    deadline = next_key = time.monotonic()
    deadline += 90
    try:
        while not seen_at or len(typed) < max(len(TYPING), seen_at[0] + 8) or typed[-1] == " ":
            assert time.monotonic() < deadline, "the permission dialog never appeared:\n" + tmux.screen()
            char = (TYPING + " ")[len(typed) % (len(TYPING) + 1)]
            tmux.run("send-keys", "-t", "typeahead", "-l", char)
            typed.append(char)
            if "".join(typed) == "then run":
                release.set()
            next_key += KEY_GAP
            time.sleep(max(0.0, next_key - time.monotonic()))
    finally:
        done.set()
        watcher.join(30)
    return "".join(typed)


def _squash(text: str) -> str:
    """Text without spaces and box sides, so a line the chat input wrapped still matches."""
    return "".join(text.replace("│", " ").split())


def _wait(predicate, what: str, tmux: Tmux | None = None, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f":\n{tmux.screen()}" if tmux else ""))
        time.sleep(0.05)


_ENV_KEYS = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "PATH", "NO_COLOR",
             "TIKTOKEN_CACHE_DIR", "PYTHONPATH", "ETCODE_DISCOVERY_WAIT")  # fmt: skip


def tmux_env() -> str:
    """``K=V ...`` of the test's environment a process started in tmux needs (tmux gives it
    the server's environment otherwise)."""
    return " ".join(f"{k}={_quote(v)}" for k, v in os.environ.items() if k in _ENV_KEYS)


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)


def _process_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_closing_the_terminal_ends_the_running_command(project: Path, llm: FakeLLM) -> None:
    """SIGHUP (the terminal window closed) winds the turn down as quitting does: the command
    started by Bash is ended, not left running without a terminal."""
    write_config(project, llm, permission={"bash": "allow"})
    pid_file = project / "sleep.pid"
    llm.script(
        Reply(text="Waiting.", calls=[Call("Bash", {"command": f"echo $$ > {pid_file}; exec sleep 120"})])
    )
    tmux = Tmux("hangup")
    env = tmux_env()
    command = f"env {env} TERM=xterm-256color {_quote(sys.executable)} -m etcode"
    pid = 0
    chat_pid = 0
    try:
        tmux.start(command, project)
        tmux.wait_for("Ask anything")
        chat_pid = int(tmux.run("list-panes", "-t", "hangup", "-F", "#{pane_pid}").stdout.strip())
        tmux.run("send-keys", "-t", "hangup", "-l", "wait a bit")
        tmux.run("send-keys", "-t", "hangup", "Enter")
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        pid = int(pid_file.read_text().strip())
        tmux.run("kill-session", "-t", "hangup")  # the pane's processes get SIGHUP
        assert _process_gone(pid, 30), "the command kept running after the terminal closed"
        assert _process_gone(chat_pid, 30), "etcode kept running after its terminal closed"
    finally:
        tmux.kill()
        for leftover in (pid, chat_pid):
            if leftover:
                with contextlib.suppress(OSError):
                    os.kill(leftover, signal.SIGKILL)
