"""Markdown in the chat as the terminal draws it (issue 30, item 6): tables with a header rule
only, table borders that line up around emoji with a variation selector, ordered lists that
keep their ``1.`` markers — in the live answer and in a finished (Rich-rendered) one, before
and after a resize."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console

from etcode.ui.tui.app import EtcodeApp
from etcode.ui.tui.cells import narrow_emoji
from etcode.ui.tui.widgets.messages import AssistantMessage, FrozenMarkdown, RenderedMarkdown
from tests.fake_llm import FakeLLM, Reply
from tests.test_tui_render import screen_lines
from tests.tui_support import ProjectSpec, make_app, ready, run_turn, wait_for

PROJECT = ProjectSpec()

TABLE = (
    "Machines:\n\n| Host | Kind |\n|------|------|\n| alpha | 🖥️ desktop |\n| beta | laptop |\n"
    "| gamma | ✔️ server |\n| delta | phone |\n\nEnd of table.\n"
)
LIST = "Steps:\n\n1. first step\n2. second step\n3. third step\n\nEnd of list.\n"


def terminal_width(line: str) -> int:
    """Cells as a terminal without VS16 widening counts them (tmux 3.3, wcwidth): wide and
    full-width characters 2, combining marks and format characters (U+FE0F) 0."""
    width = 0
    for char in line:
        if (
            unicodedata.combining(char)
            or unicodedata.category(char) in ("Mn", "Me", "Cf")
            or char == "\ufe0f"
        ):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def table_lines(lines: list[str]) -> list[str]:
    """The lines of the first table: from its top border to its bottom border."""
    start = next(i for i, line in enumerate(lines) if "┌" in line)
    end = next(i for i, line in enumerate(lines) if i > start and "└" in line)
    return [line.strip() for line in lines[start : end + 1]]


def assert_header_rule_only(table: list[str]) -> None:
    assert len(table) == 8, table  # top, header, rule, 4 rows, bottom (not 11)
    assert [i for i, line in enumerate(table) if line.startswith("├")] == [2], table


def assert_borders_line_up(table: list[str]) -> None:
    """Every line of the table is as wide as its top border, by Rich's measure and by the
    terminal's, and the two agree."""
    widths = {(terminal_width(line), cell_len(line)) for line in table}
    assert len(widths) == 1, [(line, terminal_width(line), cell_len(line)) for line in table]
    (terminal, rich_width), *_ = widths
    assert terminal == rich_width


def rendered(source: str, width: int = 80) -> list[str]:
    console = Console(width=width)
    lines = RenderedMarkdown(source).lines(console, console.options.update_width(width))
    return ["".join(segment.text for segment in line).rstrip() for line in lines]


async def test_live_and_finished_tables_draw_a_header_rule_and_line_up(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text=TABLE), *(Reply(text=f"short {i}") for i in range(2)))
    app = make_app(project)
    async with app.run_test(size=(100, 50)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "machines?")
        assert app.conversation.query(AssistantMessage)  # the live Markdown widget
        live = table_lines(screen_lines(app))
        assert_borders_line_up(live)
        assert_header_rule_only(live)
        assert any("🖥" in line and "desktop" in line for line in live)
        for text in ("a", "b"):  # the table's answer becomes a finished (Rich) widget
            await run_turn(pilot, app, text)
        frozen = await wait_for(pilot, lambda: list(app.conversation.query(FrozenMarkdown)), what="frozen")
        assert "Machines" in frozen[0].source
        app.conversation.scroll_home(animate=False)
        await pilot.pause()
        finished = table_lines(screen_lines(app))
        assert_borders_line_up(finished)
        assert_header_rule_only(finished)
    assert finished == live  # the same table, live or finished


def test_rendered_table_lines_up_at_every_width() -> None:
    for width in (40, 60, 100):
        table = table_lines(rendered(TABLE, width))
        assert_borders_line_up(table)


def test_rendered_table_draws_one_rule_under_its_header() -> None:
    plain = TABLE.replace("🖥️ ", "").replace("✔️ ", "")
    assert_header_rule_only(table_lines(rendered(plain)))


def test_variation_selector_dropped_only_after_a_narrow_character() -> None:
    assert narrow_emoji("🖥️ desktop") == "🖥 desktop"
    assert narrow_emoji("✔️ done") == "✔ done"
    assert narrow_emoji("😀\ufe0f") == "😀\ufe0f"  # wide on its own: every measure says 2
    assert narrow_emoji("\ufe0f rest", before="🖥") == " rest"  # split across streamed chunks
    assert narrow_emoji("\ufe0f rest") == "\ufe0f rest"
    assert narrow_emoji("plain") == "plain"
    assert narrow_emoji("🏳️\u200d🌈") == "🏳️\u200d🌈"  # a ZWJ sequence is left alone


async def test_streamed_variation_selector_split_across_chunks(project: Path, llm: FakeLLM) -> None:
    from textual.app import App

    app: App[None] = App()
    async with app.run_test(size=(60, 20)) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        await message.write("| a | b |\n|---|---|\n| 1 | 🖥")
        await message.write("\ufe0f x |\n")
        await message.finish()
        await pilot.pause()
        assert "\ufe0f" not in message.text
        lines = [strip.text for strip in app.screen._compositor.render_strips()]
        assert_borders_line_up(table_lines(lines))


def ordered_items(app: EtcodeApp) -> list[str]:
    return [line.strip() for line in screen_lines(app) if line.strip().endswith(" step")]


async def test_ordered_lists_keep_their_numbers_after_a_resize(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text=LIST), *(Reply(text=f"short {i}") for i in range(3)))
    app = make_app(project)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "steps?")
        expected = ["1. first step", "2. second step", "3. third step"]
        assert ordered_items(app) == expected  # live
        await pilot.resize_terminal(70, 40)
        await pilot.pause()
        assert ordered_items(app) == expected
        for text in ("a", "b", "c"):  # the list's answer becomes a finished (Rich) widget
            await run_turn(pilot, app, text)
        await wait_for(pilot, lambda: list(app.conversation.query(FrozenMarkdown)), what="frozen")
        app.conversation.scroll_home(animate=False)
        await pilot.pause()
        assert ordered_items(app) == expected
        await pilot.resize_terminal(110, 40)
        await pilot.pause()
        app.conversation.scroll_home(animate=False)
        await pilot.pause()
        assert ordered_items(app) == expected


def test_rendered_ordered_list_numbers_as_the_live_widget() -> None:
    lines = [line for line in rendered(LIST) if line.endswith(" step")]
    assert lines == [" 1. first step", " 2. second step", " 3. third step"]
    long = "".join(f"{n}. item {n} step\n" for n in range(1, 11))
    lines = [line for line in rendered(long) if line.endswith(" step")]
    assert lines[0] == "  1. item 1 step" and lines[-1] == " 10. item 10 step"
