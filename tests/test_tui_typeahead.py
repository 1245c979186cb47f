"""Issue 30, item 1: what is typed while the chat starts. The terminal is held from the
start (CR stays CR, nothing echoed), what was typed is read before the app runs, and the app
puts it in the input: a final line end sends it, a text of several lines stays one message.
The real terminal's case is ``test_tui_typeahead_tmux.py``."""

from __future__ import annotations

import os
import termios
from pathlib import Path

import pytest
import typer.main

from etcode.cli.app import build_app
from etcode.ui.tui import early_input
from etcode.ui.tui.early_input import (
    CHAT_FLAGS,
    CHAT_VALUE_FLAGS,
    hold_for_chat,
    is_chat,
    take_typed,
    typed_message,
)
from tests.fake_llm import FakeLLM, Reply, user_texts
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, wait_for

PROJECT = ProjectSpec()


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("hello\n", ("hello", True)),  # the Enter the cooked terminal made a LF
        ("hello\r", ("hello", True)),  # an Enter once the terminal was held
        ("hello", ("hello", False)),
        ("line one\nline two\n", ("line one\nline two", True)),  # a paste: one message
        ("line one\r\nline two", ("line one\nline two", False)),
        ("helo\x7flo\n", ("hello", True)),  # Backspace erases
        ("a\x1b[Ab\x1bOBc\x04\td\n", ("abcd", True)),  # arrows, Ctrl+D, Tab: no text
        ("你好 🖥️ 👩\u200d💻\n", ("你好 🖥️ 👩\u200d💻", True)),
        ("\n", ("", False)),  # nothing to send
        ("", ("", False)),
    ],
)
def test_typed_message(typed: str, expected: tuple[str, bool]) -> None:
    assert typed_message(typed) == expected


def test_the_chat_flags_are_the_chat_commands_flags() -> None:
    params = typer.main.get_command(build_app()).params
    flags = {o for p in params if getattr(p, "is_flag", False) and p.name != "version" for o in p.opts}
    values = {o for p in params if not getattr(p, "is_flag", False) for o in p.opts}
    assert (flags, values) == (CHAT_FLAGS, CHAT_VALUE_FLAGS)


@pytest.mark.parametrize(
    ("argv", "chat"),
    [
        ([], True),
        (["-c", "--model", "fake/run", "--inline"], True),  # a value that is a command's name
        (["--model=fake/x", "--sandbox", "off"], True),
        (["run", "hi"], False),
        (["--help"], False),
        (["--model"], False),  # a usage error, not the chat
        (["-c", "doctor"], False),
    ],
)
def test_is_chat(argv: list[str], chat: bool) -> None:
    assert is_chat(argv) is chat


def test_the_held_terminal_keeps_enter_and_is_given_back() -> None:
    """Typed before the hold, the cooked terminal made Enter a LF; after it, Enter stays
    CR and nothing is echoed; both are read back; the settings return at the end."""
    master, slave = os.openpty()
    try:
        before = termios.tcgetattr(slave)
        os.write(master, b"first\r")  # typed before etcode held the terminal: cooked
        # the pty's line discipline takes the bytes in its own time: hold only once the cooked
        # line is there (else it is read under the held settings, a CR the test did not mean)
        assert wait_until_readable(slave)
        with hold_for_chat([], fd=slave, out=slave):
            os.write(master, b"second\r")
            assert wait_until_readable(slave)
            typed = take_typed(slave)
            while not typed.endswith("second\r"):  # the pty delivers in its own time
                assert wait_until_readable(slave), typed
                typed += take_typed(slave)
            assert typed == "first\nsecond\r"
        assert take_typed(slave) == ""  # not held any more: nothing is read
        assert termios.tcgetattr(slave) == before
        echoed = os.read(master, 1024)
        assert b"second" not in echoed  # not echoed while held
    finally:
        os.close(master)
        os.close(slave)


def test_a_pipe_is_not_held() -> None:
    read, write = os.pipe()
    try:
        with hold_for_chat([], fd=read, out=write):
            assert early_input._held is None
    finally:
        os.close(read)
        os.close(write)


def wait_until_readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 10)[0])


async def test_typed_at_start_with_enter_is_sent(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="Got it."))
    app = make_app(project)
    app.typed_at_start = "line one\nline two\n"  # a paste before the app was up, then Enter
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: llm.requests and not app.busy, 20, "the turn")
        assert app.prompt.input.text == ""
    assert [user_texts(r.body)[-1] for r in llm.requests] == ["line one\nline two"]


async def test_typed_at_start_without_enter_waits_in_the_input(project: Path, llm: FakeLLM) -> None:
    app = make_app(project)
    app.typed_at_start = "draft"
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: app.prompt.input.text == "draft", what="the draft in the input")
        assert not app.queued and not app.busy
    assert llm.requests == []
