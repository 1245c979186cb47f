"""Edits shown as a reviewer reads them (issue 30.5): the numbered hunk with its context,
real file line numbers, in the permission dialog, the transcript's block and a resumed
session; the dialog leaves the conversation in sight."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from etcode.ui.tui.app import EtcodeApp
from etcode.ui.tui.widgets.permission import PermissionScreen
from etcode.ui.tui.widgets.tool import ToolMessage
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import make_app, permission_dialog, ready, submit, wait_for, write_config

SIZE = (120, 35)
LINES = "".join(f"value_{i} = {i}\n" for i in range(1, 51))  # line N holds value_N


def screen_lines(app: EtcodeApp) -> list[str]:
    return [
        "".join(segment.text for segment in strip).rstrip()
        for strip in app.screen._compositor.render_strips()
    ]


def numbered(lines: list[str], number: int, sign: str, text: str) -> bool:
    """A row ``  24 - value_24 = 24`` (any gutter padding and frame around it)."""
    row = re.compile(rf"(^|[\s│]){number} {re.escape(sign)} {re.escape(text)}\s*(│|$)")
    return any(row.search(line) for line in lines)


def expect_hunk(lines: list[str]) -> None:
    """The Edit of line 24 in its place: three context lines each side, real numbers (the
    lines after it are one further down in the new file)."""
    for n in (21, 22, 23):
        assert numbered(lines, n, " ", f"value_{n} = {n}"), (n, lines)
    for n in (25, 26, 27):
        assert numbered(lines, n + 1, " ", f"value_{n} = {n}"), (n, lines)
    assert numbered(lines, 24, "-", "value_24 = 24"), lines
    assert numbered(lines, 24, "+", "value_24 = 2400"), lines
    assert numbered(lines, 25, "+", "checked = True"), lines
    assert not numbered(lines, 20, " ", "value_20 = 20")  # no more context than the hunk's


def edit_line_24(llm: FakeLLM) -> None:
    llm.script(
        Reply(
            calls=[
                Call(
                    "Edit",
                    {
                        "file_path": "values.py",
                        "old_string": "value_24 = 24\n",
                        "new_string": "value_24 = 2400\nchecked = True\n",
                    },
                    id="call_edit",
                )
            ]
        ),
        Reply(text="Changed line 24."),
    )


@pytest.fixture
def edited(project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(PermissionScreen, "ARM_DELAY", 0.2, raising=False)
    write_config(project, llm, permission={"edit": "ask"})
    (project / "values.py").write_text(LINES, encoding="utf-8")
    return project


async def fill_transcript(pilot: object, app: EtcodeApp) -> None:
    """Earlier turns, so the conversation reaches the bottom of the screen."""
    for i in range(3):
        await app.conversation.add_notice(
            f"earlier turn {i}\n" + "\n".join(f"note {i}.{j}" for j in range(6))
        )


async def test_the_dialog_shows_the_numbered_hunk_and_leaves_the_conversation_visible(
    edited: Path, llm: FakeLLM
) -> None:
    edit_line_24(llm)
    app = make_app(edited)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await fill_transcript(pilot, app)
        await submit(pilot, app, "change value 24")
        screen = await permission_dialog(pilot, app)
        await pilot.pause()
        lines = screen_lines(app)
        expect_hunk(lines)
        dialog = screen.query_one("#permission-dialog").region
        assert dialog.height <= 0.4 * SIZE[1] + 1, dialog  # at most ~40% of the screen
        assert dialog.bottom <= app.prompt.region.y, (dialog, app.prompt.region)  # the input stays in sight

        def above() -> list[str]:
            return screen_lines(app)[: dialog.y]

        # the transcript ends above the dialog: its newest lines (the message, the waiting call) in sight
        await wait_for(pilot, lambda: any("waiting for approval" in line for line in above()), what="room")
        assert any("change value 24" in line for line in above()), above()
        assert any("note 2.5" in line for line in above()), above()
        assert screen.request.metadata["line"] == 24  # the first changed line, for an editor
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert app.query_one("#body").styles.margin.bottom == 0  # the room given back


async def test_the_transcript_block_and_a_resumed_session_show_the_same_numbered_hunk(
    edited: Path, llm: FakeLLM
) -> None:
    edit_line_24(llm)
    app = make_app(edited)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "change value 24")
        await permission_dialog(pilot, app)
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        await pilot.pause()
        block = app.conversation.tools["call_edit"]
        assert isinstance(block, ToolMessage) and not block.expanded
        live = screen_lines(app)
        expect_hunk(live)
        assert block.data is not None and block.data["line"] == 24
        await app.action_quit()
    assert "value_24 = 2400\nchecked = True\n" in (edited / "values.py").read_text(encoding="utf-8")

    resumed = make_app(edited, continue_last=True)
    async with resumed.run_test(size=SIZE) as pilot:
        await ready(pilot, resumed)
        await wait_for(pilot, lambda: "call_edit" in resumed.conversation.tools, what="the replayed edit")
        await pilot.pause()
        replayed = screen_lines(resumed)
        expect_hunk(replayed)
        hunk = [line.strip() for line in live if "value_2" in line or "checked" in line]
        assert hunk == [line.strip() for line in replayed if "value_2" in line or "checked" in line]


async def test_a_long_diff_shows_its_first_rows_then_how_many_more(edited: Path, llm: FakeLLM) -> None:
    """WriteFile over the whole file: numbered from 1, the block's preview cut with a count."""
    new = LINES.replace(" = ", " == ")
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "values.py", "content": new}, id="call_write")]),
        Reply(text="Rewrote it."),
    )
    app = make_app(edited)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "rewrite")
        await permission_dialog(pilot, app)
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        await pilot.pause()
        lines = screen_lines(app)
        assert numbered(lines, 1, "-", "value_1 = 1"), lines
        assert any(re.search(r"… \d+ more lines \(click or shift\+tab, enter to expand\)", x) for x in lines)
        block = app.conversation.tools["call_write"]
        assert block.data is not None and block.data["line"] == 1


async def test_a_diff_longer_than_the_dialog_scrolls_with_the_arrows(edited: Path, llm: FakeLLM) -> None:
    new = LINES.replace(" = ", " == ")  # every line changed: 100 rows
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "values.py", "content": new})]),
        Reply(text="Left it."),
    )
    app = make_app(edited)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "rewrite")
        screen = await permission_dialog(pilot, app)
        details = screen.query_one("#permission-details")
        await wait_for(pilot, lambda: screen.details_overflow, what="the details to overflow")
        assert screen.query_one("#permission-dialog").region.height <= 0.4 * SIZE[1] + 1
        assert "↑/↓ scroll" in str(screen.query_one("#permission-keys").render())
        assert details.scroll_y == 0
        await pilot.press("down", "down", "pagedown")
        await wait_for(pilot, lambda: details.scroll_y == 10, what="the diff to scroll")
        assert screen.focused is not None and screen.focused.id == "allow-once"  # still the answer's
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
    assert (edited / "values.py").read_text(encoding="utf-8") == LINES


async def test_a_change_longer_than_the_dialog_keeps_every_changed_line_in_sight(
    edited: Path, llm: FakeLLM
) -> None:
    """Four lines replaced: the hunk with three context lines each side (14 rows) is more
    than the dialog's 9 rows at 120×35; the context shrinks (one line each side) before a
    changed line is hidden behind the scroll."""
    old = "".join(f"value_{n} = {n}\n" for n in range(24, 28))
    new = "".join(f"value_{n} = {n}00\n" for n in range(24, 28))
    llm.script(
        Reply(calls=[Call("Edit", {"file_path": "values.py", "old_string": old, "new_string": new})]),
        Reply(text="Changed four lines."),
    )
    app = make_app(edited)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "change values 24 to 27")
        screen = await permission_dialog(pilot, app)

        def shown() -> list[str]:  # the rows of the diff in sight (not scrolled)
            details = screen.query_one("#permission-details").region
            return [line.rstrip("▁▂▃▄▅▆▇█ ") for line in screen_lines(app)[details.y : details.bottom]]

        changes = [(n, "-", f"value_{n} = {n}") for n in range(24, 28)]
        changes += [(n, "+", f"value_{n} = {n}00") for n in range(24, 28)]
        await wait_for(pilot, lambda: all(numbered(shown(), *row) for row in changes), what="every change")
        assert numbered(shown(), 23, " ", "value_23 = 23"), shown()  # a line of context before
        assert not numbered(shown(), 21, " ", "value_21 = 21"), shown()  # not three
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
    assert "value_27 = 2700" in (edited / "values.py").read_text(encoding="utf-8")


def test_fewer_context_lines_mark_the_gap_they_leave() -> None:
    from etcode.tools.diff import unified_diff
    from etcode.ui.tui.diff_view import diff_rows, rows_text

    new = LINES.replace("value_20 = 20\n", "value_20 = 0\n").replace("value_26 = 26\n", "value_26 = 0\n")
    diff = unified_diff("values.py", LINES, new)  # one hunk: the changes are 6 lines apart
    assert rows_text(diff_rows(diff, 1)).splitlines() == [
        "19   value_19 = 19",
        "20 - value_20 = 20",
        "20 + value_20 = 0",
        "21   value_21 = 21",
        "   ⋮",
        "25   value_25 = 25",
        "26 - value_26 = 26",
        "26 + value_26 = 0",
        "27   value_27 = 27",
    ]
    assert len(diff_rows(diff)) == 15  # the hunk's own context: three lines each side, all between
