"""Issue 30, items 3 and 4: keys typed onto a focused tool block reach the input whole and in
order, even in one burst (an input method's commit, dictation, a paste without bracketed
paste); a focused block shows a mark (text, not only a shade); Ctrl+O expands or collapses
every tool block."""

from __future__ import annotations

from pathlib import Path

from textual import events

from etcode.ui.tui.app import EtcodeApp
from etcode.ui.tui.widgets.tool import ToolMessage
from tests.fake_llm import Call, FakeLLM, Reply, user_texts
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, run_turn, wait_for

PROJECT = ProjectSpec(files={"notes.txt": "the number is 42\n", "more.txt": "and 43\n"})
KEY_NAMES = {" ": "space", ",": "comma", ".": "full_stop", "!": "exclamation_mark"}


def burst(app: EtcodeApp, text: str) -> None:
    """``text`` as key events posted at once, as the terminal's reader posts a burst."""
    for char in text:
        app.post_message(events.Key(KEY_NAMES.get(char, char), char))


async def focused_tool(pilot, app: EtcodeApp, llm: FakeLLM) -> ToolMessage:
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]), Reply(text="Read it."))
    await ready(pilot, app)
    await run_turn(pilot, app, "read notes")
    await pilot.press("shift+tab")
    tool = app.query_one(ToolMessage)
    assert app.focused is tool
    return tool


async def test_a_burst_typed_on_a_tool_block_keeps_every_key(project: Path, llm: FakeLLM) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        tool = await focused_tool(pilot, app, llm)
        text = "fix the bug, then run it again. 好的 ok!"
        burst(app, text)
        await wait_for(pilot, lambda: len(app.prompt.input.text) >= len(text), what="the burst in the input")
        await pilot.pause()
        assert app.prompt.input.text == text
        assert app.focused is app.prompt.input
        assert not tool.expanded  # no key of the burst toggled the block


async def test_a_space_first_on_a_tool_block_is_typed_too(project: Path, llm: FakeLLM) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        tool = await focused_tool(pilot, app, llm)
        await pilot.press("space", "a")
        assert app.prompt.input.text == " a"
        assert not tool.expanded


async def test_a_burst_ending_with_enter_on_a_tool_block_is_sent(project: Path, llm: FakeLLM) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        tool = await focused_tool(pilot, app, llm)
        llm.script(Reply(text="Fixed."))
        burst(app, "fix it")
        app.post_message(events.Key("enter", "\r"))  # dictation's Enter, in the same burst
        await wait_for(pilot, lambda: len(llm.requests) == 3 and not app.busy, 20, "the second turn")
        assert not tool.expanded  # the Enter was the input's, not the block's
        assert app.prompt.input.text == ""
    assert user_texts(llm.requests[-1].body)[-1] == "fix it"


def screen_lines(app: EtcodeApp) -> list[str]:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


async def test_a_focused_tool_block_shows_a_mark(project: Path, llm: FakeLLM) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await focused_tool(pilot, app, llm)
        await pilot.pause()
        head = next(line for line in screen_lines(app) if "ReadFile (notes.txt)" in line)
        assert head.lstrip().startswith("▶ ReadFile (notes.txt)"), head  # text, not a shade
        assert "enter expands" in head and "ctrl+o" in head
        await pilot.press("enter")
        head = next(line for line in screen_lines(app) if "ReadFile (notes.txt)" in line)
        assert "enter collapses" in head
        await pilot.press("x")  # typing: back to the input, the mark goes
        head = next(line for line in screen_lines(app) if "ReadFile (notes.txt)" in line)
        assert head.lstrip() == "● ReadFile (notes.txt)", head


async def test_ctrl_o_expands_and_collapses_every_tool_block(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(calls=[Call("ReadFile", {"file_path": "more.txt"})]),
        Reply(text="Read both."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "read both")
        tools = list(app.query(ToolMessage))
        assert len(tools) == 2
        tools[0].set_expanded(True)  # one open already: Ctrl+O opens the rest
        await pilot.press("ctrl+o")
        assert [t.expanded for t in tools] == [True, True]
        assert any("and 43" in line for line in screen_lines(app))  # the output is shown
        await pilot.press("ctrl+o")
        assert [t.expanded for t in tools] == [False, False]
        assert not any("and 43" in line for line in screen_lines(app))
        assert app.focused is app.prompt.input  # the input kept the focus
