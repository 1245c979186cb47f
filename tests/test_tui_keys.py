"""Issue 15 (the chat's input): keys after Tab, type-ahead, notices mid-stream, paths that
look like commands, command output in view, PageUp/PageDown, a fresh @ index, large pastes."""

from __future__ import annotations

from pathlib import Path

from textual import events

from etcode.ui.tui import app as app_module
from etcode.ui.tui.app import EtcodeApp
from etcode.ui.tui.commands import parse_command
from etcode.ui.tui.history import PromptHistory
from etcode.ui.tui.options import TuiOptions
from etcode.ui.tui.widgets.messages import AssistantMessage, HelpMessage, Notice
from etcode.ui.tui.widgets.tool import ToolMessage
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, run_turn, submit, wait_for, write_config

PROJECT = ProjectSpec(files={"notes.txt": "the number is 42\n"})


def recorded(app: EtcodeApp) -> list[tuple[str, str]]:
    """(shown text, task) of every message sent; turns are recorded instead of run."""
    box: list[tuple[str, str]] = []

    async def start_turn(text: str, task: str, attached: list[str] | None = None) -> None:
        box.append((text, task))

    app.start_turn = start_turn  # type: ignore[method-assign]
    return box


async def type_text(pilot, text: str) -> None:
    for char in text:
        await pilot.press({" ": "space", "/": "slash", "@": "at", ".": "full_stop"}.get(char, char))


async def test_keys_typed_after_tab_and_shift_tab_land_in_the_input(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]), Reply(text="Read it."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("tab")  # no tool block yet: nowhere visible to go
        await type_text(pilot, "ab")
        assert app.prompt.input.text == "ab"
        assert app.focused is app.prompt.input
        app.prompt.input.load_text("")
        await run_turn(pilot, app, "read notes")
        await pilot.press("shift+tab")  # to the tool block: visible (ToolMessage:focus), Enter expands it
        tool = app.query_one(ToolMessage)
        assert app.focused is tool
        await pilot.press("enter")
        assert tool.expanded
        await type_text(pilot, "more please")  # typing goes back to the input, nothing lost
        assert app.prompt.input.text == "more please"
        assert app.focused is app.prompt.input
        await pilot.press("tab", "tab")  # away and back: focus is always somewhere visible
        assert app.focused in (tool, app.prompt.input)


class TypedAtLaunch(EtcodeApp):
    """Keys the terminal delivers while the app starts (before the input has the focus)."""

    CSS_PATH = str(Path(app_module.__file__).parent / "etcode.tcss")

    async def on_mount(self) -> None:  # runs before EtcodeApp.on_mount
        for char in "hello":
            self.post_message(events.Key(char, char))


async def test_keys_typed_at_launch_are_kept(project: Path) -> None:
    app = TypedAtLaunch(TuiOptions(directory=project), history=PromptHistory())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: app.prompt.input.text == "hello", what="the type-ahead in the input")


async def test_a_command_during_a_stream_does_not_split_the_answer(project: Path, llm: FakeLLM) -> None:
    answer = "word " * 150
    llm.script(Reply(text=answer, chunk_size=5, delay=0.05))  # ~7 s: time for two commands
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "talk")
        await wait_for(pilot, lambda: app.conversation.query(AssistantMessage), what="the answer to start")
        await submit(pilot, app, "/new")
        assert any("wait for the turn" in n.message for n in app._notifications)  # a toast
        await submit(pilot, app, "/help")
        assert app.busy, "the answer ended before the commands: the test proves nothing"
        await wait_for(pilot, lambda: not app.busy, 20, "the turn to end")
        await pilot.pause()
        answers = list(app.conversation.query(AssistantMessage))
        assert len(answers) == 1, [a.text for a in answers]
        assert answers[0].text.strip() == answer.strip()
        entries = app.conversation.entries
        assert isinstance(entries[-1], HelpMessage)  # /help's output after the answer
        assert entries.index(answers[0]) < entries.index(entries[-1])
        assert not any("wait for the turn" in str(n.render()) for n in app.conversation.query(Notice))


def test_a_message_starting_with_a_path_is_no_command(tmp_path: Path) -> None:
    assert parse_command("/tmp/x/a.py what does this do") is None
    assert parse_command(f"{tmp_path} is it empty?") is None  # /word that exists and is no command
    assert parse_command("/help").command is not None  # type: ignore[union-attr]
    assert parse_command("/hlep").command is None  # type: ignore[union-attr]  # a typo: still reported


async def test_a_path_message_is_sent(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        box = recorded(app)
        await submit(pilot, app, "/tmp/x/a.py what does this do")
        assert box == [("/tmp/x/a.py what does this do", "/tmp/x/a.py what does this do")]
        assert not app.conversation.query(Notice).filter(".warning")


async def test_command_output_scrolls_into_view_and_page_keys_scroll(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        for i in range(80):
            await app.conversation.add_notice(f"line {i}")
        await pilot.pause()
        c = app.conversation
        await wait_for(pilot, lambda: c.max_scroll_y > 0 and c.scroll_y == c.max_scroll_y, what="the bottom")
        bottom = c.scroll_y
        await pilot.press("pageup")  # typing in the input: the conversation scrolls
        await wait_for(pilot, lambda: c.scroll_y < bottom, what="PageUp to scroll")
        assert app.focused is app.prompt.input
        up = c.scroll_y
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: c.scroll_y > up, what="PageDown to scroll")
        c.scroll_home(animate=False)
        await pilot.pause()
        await submit(pilot, app, "/agent")  # its output is at the bottom: it must come into view
        await wait_for(pilot, lambda: "agent: build" in str(c.entries[-1].render()), what="the output")
        await pilot.pause()
        await wait_for(pilot, lambda: c.scroll_y == c.max_scroll_y > 0, what="the output in view")
        shown = c.entries[-1].region
        assert shown.height and c.region.contains_region(shown)


async def test_at_completion_offers_files_made_later(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "fresh_module.py", "content": "x = 1\n"})]),
        Reply(text="Written."),
    )
    write_config(project, llm, permission={"edit": "allow"})
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await type_text(pilot, "@not")
        await wait_for(pilot, lambda: app.prompt.menu_open, what="the menu")
        assert app.prompt.completion is not None and "@notes.txt" in app.prompt.completion.values
        app.prompt.input.load_text("")
        app.prompt.close_menu()
        await run_turn(pilot, app, "write a module")
        assert (project / "fresh_module.py").is_file()
        await type_text(pilot, "@fresh")
        await wait_for(pilot, lambda: app.prompt.menu_open, what="the menu")
        assert app.prompt.completion is not None
        assert "@fresh_module.py" in app.prompt.completion.values


async def test_a_large_paste_is_collapsed_and_sent_in_full(project: Path) -> None:
    pasted = "".join(f"log line {i}\n" for i in range(40))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        box = recorded(app)
        await type_text(pilot, "why ")
        app.post_message(events.Paste(pasted))
        await wait_for(pilot, lambda: "Pasted" in app.prompt.input.text, what="the paste")
        assert app.prompt.input.text == "why [Pasted text #1 +40 lines]"
        app.post_message(events.Paste("small"))  # a small paste goes in as it is
        await wait_for(pilot, lambda: app.prompt.input.text.endswith("small"), what="the small paste")
        await pilot.press("enter")
        await wait_for(pilot, lambda: box, what="the message")
        shown, task = box[0]
        assert shown == "why [Pasted text #1 +40 lines]small"
        assert task == f"why {pasted}small"
        assert app.history.entries[-1] == task  # Up brings back the full text
