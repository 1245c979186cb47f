"""What the chat prints when it quits: the resume hint, the inline transcript."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from etcode.ui.tui.goodbye import print_goodbye
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, record_events, run_turn, wait_for

PROJECT = ProjectSpec(files={"notes.txt": "the number is 42\n"})


def printed(state: object, *, inline: bool) -> str:
    out = io.StringIO()
    print_goodbye(state, inline=inline, console=Console(file=out, width=100, color_system=None))  # type: ignore[arg-type]
    return out.getvalue()


async def test_quitting_after_a_turn_prints_how_to_resume_and_the_transcript(
    project: Path, llm: FakeLLM
) -> None:
    llm.script(
        Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(text="It is **42**."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        events = record_events(app)
        await ready(pilot, app)
        await run_turn(pilot, app, "what number?")
        session_id = app.host.agent.session_id
        await app.action_quit()
        await wait_for(pilot, lambda: app.exit_state is not None, what="the exit state")
    (result,) = [e for e in events if e.type == "tool_result"]
    assert result.summary and "42" not in result.summary  # a summary, not the output
    fullscreen = printed(app.exit_state, inline=False)
    assert fullscreen.strip() == f"Resume this session: etcode -c  (or: etcode --session {session_id})"
    inline = printed(app.exit_state, inline=True)
    lines = [line.rstrip() for line in inline.splitlines() if line.strip()]
    assert lines == [
        "> what number?",
        "Reading.",
        "● ReadFile (notes.txt)",
        f"  └ {result.summary}",  # as the live run said it
        "It is 42.",
        fullscreen.strip(),
    ]


async def test_no_resume_hint_without_a_turn(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await app.action_quit()
        await wait_for(pilot, lambda: app.exit_state is not None, what="the exit state")
    assert printed(app.exit_state, inline=False) == ""
    assert printed(app.exit_state, inline=True) == ""
