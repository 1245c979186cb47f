"""Session features in the TUI (issue 6's store): -c, --session, /sessions, /undo, /compact,
and the status bar's context and cost from ``usage`` events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etcode.ui.tui.widgets.messages import AssistantMessage, Notice, UserMessage
from etcode.ui.tui.widgets.sessions import SessionPicker
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import (
    SIZE,
    ProjectSpec,
    make_app,
    ready,
    run_turn,
    submit,
    wait_for,
    write_priced_config,
)

PROJECT = ProjectSpec(files={"notes.txt": "the secret number is 42\n"})


def notices(app) -> list[str]:
    return [str(n.render()) for n in app.conversation.query(Notice)]


async def first_session(project: Path, llm: FakeLLM) -> str:
    """Run one turn with a tool call in a fresh app; returns its session id."""
    llm.script(
        Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(text="The number is 42."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "what number is in notes.txt?")
        session_id = app.host.agent.session_id
        await app.action_quit()
    return session_id


def shows_first_session(app) -> None:
    users = [str(u.render()) for u in app.conversation.query(UserMessage)]
    assert any("what number is in notes.txt?" in u for u in users)
    tool = next(iter(app.conversation.tools.values()))
    assert tool.title == "ReadFile (notes.txt)" and tool.result_summary
    assert any("The number is 42." in a.source for a in app.conversation.query(AssistantMessage))


async def test_continue_shows_and_continues_the_last_session(project: Path, llm: FakeLLM) -> None:
    session_id = await first_session(project, llm)
    llm.script(Reply(text="Still 42."))
    app = make_app(project, continue_last=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert app.host.agent.session_id == session_id
        await wait_for(pilot, lambda: app.conversation.tools, what="the replayed history")
        shows_first_session(app)
        await run_turn(pilot, app, "and now?")
        assert "the secret number is 42" in json.dumps(llm.requests[-1].body)


async def test_session_option_opens_that_session(project: Path, llm: FakeLLM) -> None:
    session_id = await first_session(project, llm)
    app = make_app(project, session_id=session_id[:10])  # a unique prefix is enough
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert app.host.agent.session_id == session_id
        await wait_for(pilot, lambda: app.conversation.tools, what="the replayed history")
        shows_first_session(app)


async def test_unknown_session_is_an_error(project: Path) -> None:
    app = make_app(project, session_id="ses_does_not_exist")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: any("no session" in n for n in notices(app)), what="the error")


async def test_sessions_command_resumes_the_chosen_one(project: Path, llm: FakeLLM) -> None:
    session_id = await first_session(project, llm)
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert app.host.agent.session_id != session_id
        await submit(pilot, app, "/sessions")
        picker = await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker) and app.screen)
        assert session_id in [str(getattr(s, "id", "")) for s in picker.sessions]
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.host.agent.session_id == session_id, what="the resume")
        await wait_for(pilot, lambda: app.conversation.tools, what="the replayed history")
        shows_first_session(app)


async def test_undo_restores_the_files_of_the_last_turn(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "notes.txt", "content": "overwritten\n"})]),
        Reply(text="Done."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "overwrite notes")
        assert (project / "notes.txt").read_text() == "overwritten\n"
        await submit(pilot, app, "/undo")
        await wait_for(pilot, lambda: any(n.startswith("Restored") for n in notices(app)), what="undo")
        assert (project / "notes.txt").read_text() == "the secret number is 42\n"
        assert any("notes.txt" in n for n in notices(app))


async def test_undo_refuses_when_the_user_changed_the_file_since(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "notes.txt", "content": "overwritten\n"})]),
        Reply(text="Done."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "overwrite notes")
        (project / "notes.txt").write_text("overwritten\nmy own line\n")
        await submit(pilot, app, "/undo")
        await wait_for(pilot, lambda: any("nothing undone" in n for n in notices(app)), what="the refusal")
        assert (project / "notes.txt").read_text() == "overwritten\nmy own line\n"
        assert any(str(project / "notes.txt") in n and "--force" in n for n in notices(app))
        await submit(pilot, app, "/undo --force")
        await wait_for(pilot, lambda: any(n.startswith("Restored") for n in notices(app)), what="undo")
        assert (project / "notes.txt").read_text() == "the secret number is 42\n"


async def test_compact_summarises_the_history(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(text="one " * 50),
        Reply(text="two " * 50),
        Reply(text="three " * 50),
        Reply(text="## Goal\nCount.\n## Next steps\nNone."),  # the summary
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        for text in ("first", "second", "third"):
            await run_turn(pilot, app, text)
        before = len(llm.requests)
        await submit(pilot, app, "/compact")
        await wait_for(pilot, lambda: any("context compacted" in n for n in notices(app)), what="compaction")
        assert len(llm.requests) == before + 1  # the summarisation request
        assert not any(n.startswith("error") for n in notices(app))


async def test_status_bar_shows_context_percent_and_cost(project: Path, llm: FakeLLM) -> None:
    write_priced_config(project, llm)
    llm.script(Reply(text="Hi.", usage=(20000, 1000)))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert app.status_bar.info.context_limit == 100000
        await run_turn(pilot, app, "hello")
        info = app.status_bar.info
        assert info.context_tokens == 21000
        assert info.cost == pytest.approx(20000 * 3 / 1e6 + 1000 * 15 / 1e6)
        text = info.left().plain
        assert "21k tokens (21% of 100k)" in text and "$0.0750" in text
