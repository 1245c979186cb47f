"""The todo panel gives the width back once every item is done (as Claude Code clears a
finished list); Ctrl+T still shows the finished list."""

from __future__ import annotations

from pathlib import Path

from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import ProjectSpec, make_app, ready, run_turn

PROJECT = ProjectSpec()


def todos(*statuses: str) -> list[dict[str, str]]:
    return [{"content": f"Step {i}", "status": status} for i, status in enumerate(statuses)]


async def test_finished_todo_list_hides_the_panel(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("TodoWrite", {"todos": todos("completed", "in_progress", "pending")})]),
        Reply(text="Working."),
        Reply(calls=[Call("TodoWrite", {"todos": todos("completed", "completed", "cancelled")})]),
        Reply(text="All done."),
    )
    app = make_app(project)
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "start")
        assert app.todos.display
        await pilot.pause()
        narrowed = app.conversation.size.width
        assert app.todos.region.width >= 30 and narrowed < 90  # beside the conversation
        await run_turn(pilot, app, "finish")
        await pilot.pause()
        assert not app.todos.display
        assert app.conversation.size.width > narrowed + 30, app.conversation.size  # the width is back
        await pilot.press("ctrl+t")  # the finished list on demand
        await pilot.pause()
        assert app.todos.display and "Todos 2/3" in app.todos.render().plain
