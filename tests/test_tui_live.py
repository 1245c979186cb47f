"""The TUI while work runs (issue 15): a command's output lines appear in its tool block
before it ends, and the ``✻ Working…`` line shows elapsed time and tokens during a turn."""

from __future__ import annotations

from pathlib import Path

from etcode.ui.tui.widgets.tool import ToolMessage
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, submit, wait_for

PROJECT = ProjectSpec()  # etcode.json for the fake LLM server


def tool_widget(app) -> ToolMessage | None:  # type: ignore[no-untyped-def]
    return next(iter(app.conversation.tools.values()), None)


async def test_a_running_command_shows_its_output_lines_and_elapsed_time(project: Path, llm: FakeLLM) -> None:
    # line2 comes only once the test has seen line1 on screen and creates the file
    command = "echo line1; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo line2"
    llm.script(Reply(calls=[Call("Bash", {"command": command, "description": "wait"})]), Reply(text="Done."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "run it")
        widget = await wait_for(pilot, lambda: tool_widget(app), what="the tool block")
        await wait_for(pilot, lambda: "line1" in widget.live_text, timeout=20, what="the first line")
        assert widget.running
        assert widget.line_text.startswith("  └ running ")
        assert "line2" not in widget.live_text
        (project / "go").write_text("", encoding="utf-8")
        await wait_for(pilot, lambda: not app.busy, timeout=30, what="the end of the turn")
        assert not widget.running
        assert widget.live_text == ""  # the summary replaced the live lines
        assert widget.line_text == "  └ 2 lines of output"


async def test_the_working_line_shows_elapsed_time_and_tokens_while_the_model_streams(
    project: Path, llm: FakeLLM
) -> None:
    text = " ".join(f"word{i}" for i in range(300))
    llm.script(Reply(text=text, chunk_size=20, delay=0.02, usage=(100, 777)))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert not app.working.display
        await submit(pilot, app, "talk")
        line = await wait_for(
            pilot,
            lambda: app.busy and "tokens" in app.working.line_text and app.working.line_text,
            timeout=20,
            what="the working line with tokens",
        )
        assert line.startswith("Working… ") and "esc to interrupt" in line
        assert app.working.display and app.working.region.height == 1  # on screen
        await wait_for(pilot, lambda: not app.busy, timeout=30, what="the end of the turn")
        await pilot.pause()
        assert not app.working.display
        assert app.working.line_text == ""
        assert app.working.tokens == 777  # the usage replaced the estimate at the step's end
