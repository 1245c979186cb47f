"""Snapshot tests of the main screens (pytest-textual-snapshot): fixed size, no spinner,
no cursor blink, fixed token counts. Update with ``pytest --snapshot-update``."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.ui.tui.app import EtcodeApp
from etcode.ui.tui.widgets.permission import PermissionScreen
from tests.fake_llm import Call, FakeLLM, Reply
from tests.require import reason
from tests.tui_support import (
    ProjectSpec,
    make_app,
    permission_dialog,
    ready,
    run_turn,
    submit,
    wait_for,
    write_config,
)

pytest.importorskip(
    "pytest_textual_snapshot",
    reason=reason("package", "pytest-textual-snapshot (test extras) is not installed"),
)

SIZE = (100, 32)


@pytest.fixture(autouse=True)
def colors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots in the default theme's colours (the suite sets NO_COLOR elsewhere)."""
    monkeypatch.delenv("NO_COLOR", raising=False)


PROJECT = ProjectSpec(
    files={"notes.txt": "the secret number is 42\n", "app.py": "def main():\n    return 1\n"}
)


async def calm(pilot, app: EtcodeApp) -> None:
    """No animation in frame: a still busy mark and a steady cursor."""
    app.status_bar.spinner = False
    app.prompt.input.cursor_blink = False
    await ready(pilot, app)


def test_start_screen(snap_compare, project: Path) -> None:
    app = make_app(project)
    assert snap_compare(app, terminal_size=SIZE, run_before=lambda pilot: calm(pilot, app))


def test_start_screen_without_color(snap_compare, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(project)
    assert app.no_color
    assert snap_compare(app, terminal_size=SIZE, run_before=lambda pilot: calm(pilot, app))


def test_turn_with_tools_todos_and_markdown(snap_compare, project: Path, llm: FakeLLM) -> None:
    todos = [
        {"content": "Read the notes", "status": "completed"},
        {"content": "Answer", "status": "in_progress", "activeForm": "Answering"},
        {"content": "Celebrate", "status": "pending"},
    ]
    llm.script(
        Reply(
            text="Let me look.",
            reasoning="The user wants the number.",
            calls=[Call("ReadFile", {"file_path": "notes.txt"}), Call("TodoWrite", {"todos": todos})],
            usage=(1200, 40),
        ),
        Reply(calls=[Call("ReadFile", {"file_path": "missing.txt"})], usage=(1300, 20)),
        Reply(text="## Answer\n\nThe number is **42**.\n\n- found in `notes.txt`\n", usage=(1400, 30)),
    )
    app = make_app(project)

    async def run_before(pilot) -> None:
        await calm(pilot, app)
        await run_turn(pilot, app, "what number is in notes.txt?")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_permission_modal_with_a_diff(snap_compare, project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"edit": "ask"})
    llm.script(
        Reply(
            calls=[
                Call("Edit", {"file_path": "app.py", "old_string": "return 1", "new_string": "return 42"})
            ],
            usage=(1000, 10),
        ),
        Reply(text="Changed.", usage=(1000, 10)),
    )
    app = make_app(project)

    async def run_before(pilot) -> None:
        await calm(pilot, app)
        await submit(pilot, app, "change the return value")
        await permission_dialog(pilot, app)  # armed: buttons enabled, "Allow once" focused
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_permission_modal_while_keys_are_held_back(
    snap_compare, project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The type-ahead guard: buttons disabled, the hint says why, the typing in the input."""
    monkeypatch.setattr(PermissionScreen, "ARM_DELAY", 600.0)
    write_config(project, llm, permission={"bash": "ask"})
    llm.script(
        Reply(calls=[Call("Bash", {"command": "rm -rf build", "description": "clean"})], usage=(1000, 10))
    )
    app = make_app(project)

    async def run_before(pilot) -> None:
        await calm(pilot, app)
        await submit(pilot, app, "clean up")
        await permission_dialog(pilot, app, armed=False)
        await pilot.press("t", "h", "e", "n", "space", "r", "u", "n")
        await wait_for(pilot, lambda: app.prompt.input.text == "then run")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_and_completion_menu(snap_compare, project: Path) -> None:
    app = make_app(project)

    async def run_before(pilot) -> None:
        await calm(pilot, app)
        await submit(pilot, app, "/help")
        await pilot.press("slash", "c")
        await wait_for(pilot, lambda: app.prompt.menu_open)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_expanded_edit_shows_its_diff(snap_compare, project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(
            calls=[
                Call("Edit", {"file_path": "app.py", "old_string": "return 1", "new_string": "return 42"})
            ],
            usage=(1000, 10),
        ),
        Reply(text="Changed it.", usage=(1000, 10)),
    )
    app = make_app(project)

    async def run_before(pilot) -> None:
        await calm(pilot, app)
        await run_turn(pilot, app, "change the return value")
        widget = next(iter(app.conversation.tools.values()))
        widget.action_toggle_detail()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
