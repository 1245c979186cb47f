"""A big Markdown table streamed in small chunks finishes promptly (it took minutes: every
chunk re-parsed the whole table on the UI thread and a worker redrew it with Rich without
a pause, starving the UI thread; see ``AssistantMessage`` and ``ChatTable``)."""

from __future__ import annotations

from pathlib import Path

from etcode.ui.tui.widgets.messages import ChatTable, RenderedMarkdown, render_options
from tests.fake_llm import FakeLLM, Reply
from tests.test_tui_markdown import assert_borders_line_up
from tests.tui_support import ProjectSpec, make_app, ready, submit, wait_for

PROJECT = ProjectSpec()
ROWS = 400


def big_table(rows: int) -> str:
    body = "".join(f"| {i} | item {i} | {i * 7} |\n" for i in range(rows))
    return "Table:\n\n| # | name | value |\n|---|------|-------|\n" + body + "\nDone.\n"


async def test_a_400_row_table_streamed_in_small_chunks_finishes_lined_up(
    project: Path, llm: FakeLLM
) -> None:
    # ~3,400 text deltas of 3 characters, 1 ms apart. Fixed: ~8 s on a loaded 2-core box
    # (before: 100 rows took ~23 s, 400 rows more than 300 s). The bound is 60 s.
    llm.script(Reply(text=big_table(ROWS), chunk_size=3, delay=0.001))
    app = make_app(project)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "a big table")
        await wait_for(pilot, lambda: app.turn is not None, 20, "the turn to start")
        await wait_for(pilot, lambda: not app.busy, 60, "the table's turn to end")
        await pilot.pause()
        (table,) = app.conversation.query(ChatTable)
        shown = table.content
        assert isinstance(shown, RenderedMarkdown)
        lines = shown.lines(app.console, render_options(table._markdown))
        text = ["".join(segment.text for segment in line).rstrip() for line in lines]
        rows = [line for line in text if line.startswith("│") and "item" in line]
        assert len(rows) == ROWS, text[-3:]
        assert "item 399" in rows[-1]
        assert_borders_line_up(text)
