"""How the chat looks: Markdown spacing and code wrapping (live and finished answers), the
narrow layout, inline diffs of edits, the light theme and NO_COLOR. Pilot tests read the
screen as the terminal gets it (the compositor's lines, after the colour filters)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.segment import Segment

from etcode.ui.tui.app import EtcodeApp
from etcode.ui.tui.theme import background_is_light, pick_theme
from etcode.ui.tui.widgets.messages import AssistantMessage, FrozenMarkdown
from etcode.ui.tui.widgets.tool import ToolMessage
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import ProjectSpec, make_app, ready, run_turn, wait_for

ANSWER = (
    "## Heading\n\nFirst paragraph.\n\nSecond paragraph.\n\n- item one\n- item two\n\nAfter list.\n\n"
    "```python\nx = 'a very long line of code that goes on and on past the right edge of an "
    "eighty column terminal window: END_OF_LINE'\n```\n\nDone.\n"
)


PROJECT = ProjectSpec(files={"app.py": "".join(f"line{i} = {i}\n" for i in range(20))})


def screen_lines(app: EtcodeApp) -> list[str]:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


def screen_segments(app: EtcodeApp) -> list[Segment]:
    return [segment for strip in app.screen._compositor.render_strips() for segment in strip]


def between(lines: list[str], first: str, last: str) -> list[str]:
    """The screen lines from the one holding ``first`` to the one holding ``last``."""
    start = next(i for i, line in enumerate(lines) if first in line)
    end = next(i for i, line in enumerate(lines) if i >= start and last in line)
    return [line.strip() for line in lines[start : end + 1]]


def assert_spaced_and_wrapped(lines: list[str]) -> None:
    shown = between(lines, "Heading", "Done.")
    for first, second in [
        ("Heading", "First paragraph."),
        ("First paragraph.", "Second paragraph."),
        ("Second paragraph.", "• item one"),
        ("• item two", "After list."),
    ]:
        at = shown.index(first)
        assert shown[at + 1] == "", f"no blank line between {first!r} and {second!r}: {shown}"
        assert shown[at + 2] == second, shown
    assert shown[shown.index("• item one") + 1] == "• item two"  # a list stays tight
    assert shown[shown.index("After list.") + 1] == ""
    code = " ".join(line for line in shown if line)
    assert "END_OF_LINE'" in code, f"the long code line is cut: {shown}"


async def test_live_answer_has_blank_lines_between_blocks_and_wraps_code(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text=ANSWER))
    app = make_app(project)
    async with app.run_test(size=(80, 50)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "show me")
        assert app.conversation.query(AssistantMessage)  # still the live Markdown widget
        await pilot.pause()
        assert_spaced_and_wrapped(screen_lines(app))


async def test_finished_answer_replayed_by_rich_looks_the_same(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text=ANSWER), *(Reply(text=f"short {i}") for i in range(3)))
    app = make_app(project)
    async with app.run_test(size=(80, 50)) as pilot:
        await ready(pilot, app)
        for text in ("show me", "a", "b", "c"):
            await run_turn(pilot, app, text)
        frozen = await wait_for(pilot, lambda: list(app.conversation.query(FrozenMarkdown)), what="frozen")
        assert "Heading" in frozen[0].source
        app.conversation.scroll_home(animate=False)
        await pilot.pause()
        assert_spaced_and_wrapped(screen_lines(app))


async def test_narrow_terminal_gives_the_chat_the_width(project: Path, llm: FakeLLM) -> None:
    todos = [{"content": f"Step {i}", "status": "completed"} for i in range(6)]
    todos += [
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending"},
    ]
    llm.script(Reply(calls=[Call("TodoWrite", {"todos": todos})]), Reply(text="Working on it."))
    app = make_app(project)
    async with app.run_test(size=(80, 30)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "fix it")
        assert app.todos.display
        app.status_bar.update_info(
            model="anthropic/claude-sonnet-4-5-20250929",
            context_tokens=145_200,
            context_limit=200_000,
            cost=0.1234,
        )
        app.status_bar.spinner = False
        app.status_bar.set_busy(True)
        await pilot.pause()
        assert app.conversation.size.width >= 70, app.conversation.size
        todos = app.todos.region
        assert todos.width >= 70 and todos.y >= app.conversation.region.bottom  # under the chat
        lines = screen_lines(app)
        shown = [line.strip() for line in lines[todos.y : todos.bottom]]
        assert shown[1:] == ["Todos 6/8", "… 5 above", "✔ Step 5", "▶ Fixing the bug", "○ Run the tests"]
        status = lines[-1]
        assert status.endswith("● working"), f"status bar cut: {status!r}"
        assert status.startswith(" build · anthropic/claude-sonnet"), status
        app.status_bar.set_busy(False)
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert app.todos.region.x >= app.conversation.region.right  # wide: beside it again
        assert "✔ Step 0" in app.todos.render().plain  # with every item
        assert screen_lines(app)[-1].endswith("/help · ctrl+c twice to quit")


async def test_edit_shows_its_numbered_hunk_without_a_key(project: Path, llm: FakeLLM) -> None:
    old = "".join(f"line{i} = {i}\n" for i in range(10))
    (project / "app.py").write_text(old, encoding="utf-8")
    new = old.replace(" = ", " == ")
    llm.script(
        Reply(calls=[Call("Edit", {"file_path": "app.py", "old_string": old[:-1], "new_string": new[:-1]})]),
        Reply(text="Changed."),
    )
    app = make_app(project)
    async with app.run_test(size=(100, 50)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "change it")
        tool = next(iter(app.conversation.tools.values()))
        assert isinstance(tool, ToolMessage) and not tool.expanded
        await pilot.pause()
        lines = [line.strip() for line in screen_lines(app)]
        # 20 changed rows (10 removed, then 10 added), numbered: the first 10 are shown
        assert all(f"│ {i + 1:>2} - line{i} = {i}" in lines for i in range(10)), lines
        assert any(
            line.startswith("│ ") and line.endswith(" … 10 more lines (click or shift+tab, enter to expand)")
            for line in lines
        ), lines
        assert "│ 10 + line9 == 9" not in lines
        await pilot.press("shift+tab")  # the block is selected, Enter expands it
        assert app.focused is tool
        await pilot.press("enter")
        await pilot.pause()
        lines = [line.strip() for line in screen_lines(app)]
        assert "│ 10 + line9 == 9" in lines
        assert not any("more lines" in line for line in lines)
        await pilot.click(ToolMessage)  # and a click folds it back
        await pilot.pause()
        assert not tool.expanded
        assert "│ 10 + line9 == 9" not in [line.strip() for line in screen_lines(app)]


def test_background_from_colorfgbg() -> None:
    assert background_is_light("0;15") is True
    assert background_is_light("15;0") is False
    assert background_is_light("0;default;15") is True
    assert background_is_light("12;8") is False
    assert background_is_light("default;default") is None
    assert background_is_light(None) is None
    assert pick_theme({"COLORFGBG": "0;15"}) == "textual-light"
    assert pick_theme({"COLORFGBG": "15;0"}) == "textual-dark"
    assert pick_theme({}) == "textual-dark"
    assert pick_theme({"ETCODE_THEME": "Light", "COLORFGBG": "15;0"}) == "textual-light"
    assert pick_theme({"ETCODE_THEME": "dark", "COLORFGBG": "0;15"}) == "textual-dark"
    assert pick_theme({"ETCODE_THEME": "nord"}) == "nord"


@pytest.mark.parametrize(
    ("env", "theme"),
    [
        ({"COLORFGBG": "0;15"}, "textual-light"),
        ({"ETCODE_THEME": "light"}, "textual-light"),
        ({}, "textual-dark"),
    ],
)
async def test_light_terminal_gets_the_light_theme(
    project: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], theme: str
) -> None:
    monkeypatch.delenv("ETCODE_THEME", raising=False)
    monkeypatch.delenv("COLORFGBG", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)  # NO_COLOR has a theme of its own
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert app.theme == theme
        assert app.current_theme.dark == (theme == "textual-dark")


async def test_unknown_theme_is_named_and_dark_is_used(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETCODE_THEME", "no-such-theme")
    monkeypatch.delenv("NO_COLOR", raising=False)  # NO_COLOR has a theme of its own
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert app.theme == "textual-dark"
        messages = [n.message for n in app._notifications]
        assert any("ETCODE_THEME: unknown theme 'no-such-theme'" in m for m in messages), messages


def _colours(segments: list[Segment]) -> set[tuple[int, int, int]]:
    """The non-grey colours (foreground and background) of ``segments``."""
    found = set()
    for segment in segments:
        style = segment.style
        if style is None:
            continue
        for colour in (style.color, style.bgcolor):
            if colour is None or colour.is_default:
                continue
            r, g, b = colour.get_truecolor()
            if not r == g == b:
                found.add((r, g, b))
    return found


@pytest.mark.parametrize("no_color", [False, True])
async def test_no_color_leaves_no_colour(
    project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, no_color: bool
) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    llm.script(
        Reply(
            calls=[
                Call("Edit", {"file_path": "app.py", "old_string": "line1 = 1", "new_string": "line1 = 2"})
            ]
        ),
        Reply(text="Done: `app.py` now has\n\n```python\nline1 = 2\n```\n"),
    )
    app = make_app(project)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "change it")
        await pilot.pause()
        colours = _colours(screen_segments(app))
        if no_color:
            assert not colours, colours
        else:  # the same screen has colours without NO_COLOR (the check is meaningful)
            assert len(colours) >= 3, colours


async def test_a_replayed_edit_shows_its_preview_too() -> None:
    """A resumed session builds its tool blocks before mounting them (here: no app CSS,
    so no border): the preview must
    come with them."""
    from textual.app import App

    from etcode.tools.diff import unified_diff

    diff = unified_diff("a.py", "x = 1\ny = 2\n", "x = 10\ny = 2\n")
    app: App[None] = App()
    async with app.run_test(size=(80, 20)) as pilot:
        widget = ToolMessage("call-1", "Edit", "a.py", {"file_path": "a.py"})
        widget.set_result("Updated a.py (+1 -1)", "model-facing text", is_error=False, data={"diff": diff})
        failed = ToolMessage("call-2", "Edit", "b.py", {"file_path": "b.py"})
        failed.set_result("old_string not found", "error", is_error=True, data={"diff": diff})
        await app.mount_all([widget, failed])
        await pilot.pause()
        lines = [line.strip() for line in screen_lines(app)]  # type: ignore[arg-type]
        assert "1 - x = 1" in lines and "1 + x = 10" in lines and "2   y = 2" in lines, lines
        assert lines.count("1 - x = 1") == 1  # the failed edit shows no diff
        assert not any("to expand" in line for line in lines)  # nothing more to show


async def test_code_is_readable_on_the_light_theme(
    project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual's code blocks keep light grey text on the light theme: plain code (no
    language, or its lexer still loading) must be dark on the light background."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("ETCODE_THEME", "light")
    llm.script(Reply(text="Run this:\n\n```\nplain_code_line = 1\n```\n"))
    app = make_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "show me")
        code = next(s for s in screen_segments(app) if "plain_code_line" in s.text)
        assert code.style is not None and code.style.color and code.style.bgcolor
        fg, bg = code.style.color.get_truecolor(), code.style.bgcolor.get_truecolor()
        assert sum(bg) - sum(fg) > 3 * 100, (fg, bg)  # dark text on a light background


def test_numbered_diff_rows_and_the_rows_it_leaves_out() -> None:
    from rich.console import Console

    from etcode.tools.diff import unified_diff
    from etcode.ui.tui.diff_view import diff_rows, numbered_diff, rows_text

    def shown(renderable: object) -> list[str]:
        console = Console(width=60, record=True)
        console.print(renderable)
        return [line.rstrip() for line in console.export_text().splitlines()]

    old = "".join(f"-- sql comment {i}\n" for i in range(7))
    rows = diff_rows(unified_diff("q.sql", old, ""))  # 7 removed lines, all starting "--"
    assert rows_text(rows).splitlines() == [f"{i + 1} - -- sql comment {i}" for i in range(7)]
    assert numbered_diff(unified_diff("q.sql", "same\n", "same\n")) is None
    eleven = unified_diff("q.sql", "", "".join(f"{i}\n" for i in range(11)))
    assert shown(numbered_diff(eleven, 10))[-1] == "11 + 10"  # no hint for one line
    twelve = unified_diff("q.sql", "", "".join(f"{i}\n" for i in range(12)))
    assert (
        shown(numbered_diff(twelve, 10, "enter to expand"))[-1].strip() == "… 2 more lines (enter to expand)"
    )
    lines = "".join(f"{i}\n" for i in range(1, 31))
    two_hunks = unified_diff("a", lines, lines.replace("\n5\n", "\n5!\n").replace("\n25\n", "\n25!\n"))
    text = rows_text(diff_rows(two_hunks)).splitlines()
    assert text[:5] == [" 2   2", " 3   3", " 4   4", " 5 - 5", " 5 + 5!"]
    assert "   ⋮" in text and text[-1] == "28   28"
