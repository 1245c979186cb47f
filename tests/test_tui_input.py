"""The input box: Enter/newline keys, history, slash and @path completion."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.ui.tui.app import EtcodeApp
from etcode.ui.tui.commands import COMMANDS
from etcode.ui.tui.history import PromptHistory
from etcode.ui.tui.options import TuiOptions
from tests.fake_llm import FakeLLM
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, wait_for, write_config

PROJECT = ProjectSpec(config=False, files={"src/main.py": "print('main')\n", "README.md": "# readme\n"})


@pytest.fixture
def app(project: Path) -> EtcodeApp:
    with FakeLLM() as llm:  # the config needs a provider; these tests never call it
        write_config(project, llm)
    return make_app(project)


def sent(app: EtcodeApp) -> list[str]:
    """What the input sent: messages and commands are recorded instead of run."""
    box: list[str] = []

    async def start_turn(text: str, task: str, attached: list[str] | None = None) -> None:
        box.append(text)

    async def run_command(parsed) -> None:
        box.append(f"/{parsed.name} {parsed.args}".rstrip())

    app.start_turn = start_turn  # type: ignore[method-assign]
    app.run_command = run_command  # type: ignore[method-assign]
    return box


async def type_text(pilot, text: str) -> None:
    for char in text:
        await pilot.press({" ": "space", "/": "slash", "@": "at", ".": "full_stop"}.get(char, char))


async def test_enter_sends_and_newline_keys_insert_lines(app: EtcodeApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        box = sent(app)
        await type_text(pilot, "one")
        await pilot.press("shift+enter")
        await type_text(pilot, "two")
        await pilot.press("ctrl+j")
        await type_text(pilot, "three")
        assert app.prompt.input.text == "one\ntwo\nthree"
        await pilot.press("enter")
        assert box == ["one\ntwo\nthree"]
        assert app.prompt.input.text == ""


async def test_blank_input_is_not_sent(app: EtcodeApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        box = sent(app)
        await pilot.press("space", "enter")
        assert box == []


async def test_up_and_down_walk_the_history(app: EtcodeApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        sent(app)
        for text in ("first", "second"):
            await type_text(pilot, text)
            await pilot.press("enter")
        await type_text(pilot, "dra")
        await pilot.press("up")
        assert app.prompt.input.text == "second"
        await pilot.press("up")
        assert app.prompt.input.text == "first"
        await pilot.press("up")
        assert app.prompt.input.text == "first"  # the oldest stays
        await pilot.press("down")
        assert app.prompt.input.text == "second"
        await pilot.press("down")
        assert app.prompt.input.text == "dra"  # the draft comes back


async def test_up_moves_the_cursor_inside_a_multi_line_input(app: EtcodeApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        sent(app)
        await type_text(pilot, "old")
        await pilot.press("enter")
        await type_text(pilot, "a")
        await pilot.press("ctrl+j")
        await type_text(pilot, "b")
        await pilot.press("up")
        assert app.prompt.input.text == "a\nb"
        assert app.prompt.input.cursor_location[0] == 0


async def test_slash_completion(app: EtcodeApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        box = sent(app)
        await type_text(pilot, "/mo")
        assert app.prompt.menu_open
        assert app.prompt.completion.values == ["/model"]
        await pilot.press("tab")
        assert app.prompt.input.text == "/model "
        assert app.prompt.completion.values[0] == "fake/test-model"  # now the models are offered
        app.prompt.input.load_text("")
        await type_text(pilot, "/he")
        await pilot.press("enter")  # a command without arguments runs at once
        assert box == ["/help"]


async def test_escape_closes_the_menu_without_interrupting(app: EtcodeApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await type_text(pilot, "/")
        assert app.prompt.menu_open and len(app.prompt.completion.values) == len(COMMANDS) + 1
        assert app.prompt.completion.values[-1] == "/init"  # etcode's own custom command
        await pilot.press("down", "down")
        assert app.prompt.menu.highlighted == 2
        await pilot.press("up")
        assert app.prompt.menu.highlighted == 1
        await pilot.press("escape")
        assert not app.prompt.menu_open
        assert app.prompt.input.text == "/"


async def test_at_mention_completion(app: EtcodeApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await type_text(pilot, "look at @mai")
        await wait_for(pilot, lambda: app.prompt.menu_open, what="the file list")
        assert app.prompt.completion.values[0] == "@src/main.py"
        await pilot.press("tab")
        assert app.prompt.input.text == "look at @src/main.py "


async def test_history_is_saved_between_runs(tmp_path: Path, project: Path) -> None:
    path = tmp_path / "history.jsonl"
    with FakeLLM() as llm:
        write_config(project, llm)
    first = EtcodeApp(TuiOptions(directory=project), history=PromptHistory(path))
    async with first.run_test(size=SIZE) as pilot:
        await ready(pilot, first)
        sent(first)
        await type_text(pilot, "remember")
        await pilot.press("enter")
    second = EtcodeApp(TuiOptions(directory=project), history=PromptHistory(path))
    async with second.run_test(size=SIZE) as pilot:
        await ready(pilot, second)
        await pilot.press("up")
        assert second.prompt.input.text == "remember"
