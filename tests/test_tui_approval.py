"""A call waiting for the user's answer says so (issue 30.2): ``waiting for approval``
while the permission dialog is open, no running clock; the clock starts when it runs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from etcode.ui.tui.widgets.permission import PermissionScreen
from etcode.ui.tui.widgets.tool import ToolMessage
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import SIZE, ProjectSpec, make_app, permission_dialog, ready, submit, wait_for

PROJECT = ProjectSpec(settings={"permission": {"bash": "ask"}}, files={"build/": ""})


def rm_build() -> Reply:
    return Reply(calls=[Call("Bash", {"command": "rm -rf build", "description": "remove build"})])


def block_text(widget: ToolMessage) -> str:
    """What the block shows: its lines as rendered."""
    return "\n".join(str(child.render()) for child in widget.children)


async def _waiting_block(pilot: object, app: object) -> ToolMessage:
    tools = app.conversation.tools  # type: ignore[attr-defined]
    return await wait_for(  # type: ignore[no-any-return]
        pilot,
        lambda: next((w for w in tools.values() if "waiting for approval" in w.line_text), None),
        what="the block waiting for approval",
    )


async def test_a_call_behind_the_dialog_waits_for_approval_and_its_clock_starts_after(
    project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PermissionScreen, "ARM_DELAY", 0.2, raising=False)
    llm.script(rm_build(), Reply(text="Removed."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        await permission_dialog(pilot, app)
        widget = await _waiting_block(pilot, app)
        widget.started -= 30  # as if the dialog had been open for half a minute
        app.feed.tick(1)
        assert "waiting for approval" in block_text(widget)
        assert "running" not in block_text(widget) and "running" not in widget.line_text
        approved = time.monotonic()
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert widget.started >= approved  # the clock started when it ran
        assert not widget.is_error and "waiting" not in widget.line_text
        assert not (project / "build").exists()


async def test_a_denied_call_never_shows_a_running_clock(
    project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PermissionScreen, "ARM_DELAY", 0.2, raising=False)
    llm.script(rm_build(), Reply(text="Left it."))
    app = make_app(project)
    shown: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        await permission_dialog(pilot, app)
        widget = await _waiting_block(pilot, app)
        widget.started -= 30
        await pilot.press("escape")
        app.feed.tick(1)  # between the answer and the result: still no clock
        shown.append(widget.line_text)
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert widget.is_error
        assert all("running" not in line for line in [*shown, widget.line_text])
        assert (project / "build").is_dir()
