"""Slash commands in the running TUI, against the fake LLM server."""

from __future__ import annotations

from pathlib import Path

from etcode.ui.tui.widgets.messages import HelpMessage, Notice
from tests.fake_llm import FakeLLM, Reply
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, run_turn, submit, wait_for

PROJECT = ProjectSpec()  # etcode.json for the fake LLM server


def notices(app) -> list[str]:
    return [str(n.render()) for n in app.conversation.query(Notice)]


async def test_help_lists_every_command(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/help")
        (help_widget,) = app.conversation.query(HelpMessage)
        for name in (
            "help",
            "new",
            "sessions",
            "agent",
            "model",
            "clear",
            "compact",
            "undo",
            "export",
            "exit",
        ):
            assert f"/{name}" in help_widget.source


async def test_unknown_command_is_reported(project: Path, llm: FakeLLM) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/frobnicate")
        assert any("unknown command /frobnicate" in n for n in notices(app))
        assert not llm.requests  # nothing was sent to the model


async def test_model_switches_for_the_next_turn(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="one"), Reply(text="two"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "first")
        await submit(pilot, app, "/model fake/other-model")
        assert app.status_bar.info.model == "fake/other-model"
        await run_turn(pilot, app, "second")
        assert llm.requests[0].body["model"] == "test-model"
        assert llm.requests[1].body["model"] == "other-model"
        # the conversation goes on with the new model
        assert "first" in str(llm.requests[1].body["messages"])


async def test_model_with_an_unknown_provider_is_an_error(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/model nowhere/x")
        assert any("nowhere" in n and n.startswith("error") for n in notices(app))
        assert app.status_bar.info.model == "fake/test-model"


async def test_agent_switches_and_rejects_unknown_names(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="planned"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/agent plan")
        assert app.status_bar.info.agent == "plan"
        await run_turn(pilot, app, "make a plan")
        tools = {t["function"]["name"] for t in llm.requests[0].body.get("tools", [])}
        assert "WriteFile" not in tools and "ReadFile" in tools  # the plan agent is read-only
        await submit(pilot, app, "/agent nobody")
        assert any('unknown agent "nobody"' in n for n in notices(app))
        await submit(pilot, app, "/agent")
        assert any("available: build, plan" in n for n in notices(app))


async def test_clear_empties_the_view_and_the_context(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="remember 7"), Reply(text="fresh"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "remember the number 7")
        await submit(pilot, app, "/clear")
        assert not [w for w in app.conversation.entries if not isinstance(w, Notice)]
        await run_turn(pilot, app, "what number?")
        assert "remember the number 7" not in str(llm.requests[1].body["messages"])


async def test_new_starts_another_session(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="hi"), Reply(text="hello again"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "hi")
        first = app.host.agent.session_id
        await submit(pilot, app, "/new")
        assert app.host.agent.session_id != first
        await run_turn(pilot, app, "again")
        assert "hi" not in [m.get("content") for m in llm.requests[1].body["messages"] if m["role"] == "user"]


async def test_export_writes_the_transcript(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="The **answer** is 42."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "the answer?")
        await submit(pilot, app, "/export chat.md")
        text = (project / "chat.md").read_text(encoding="utf-8")
        assert "## User" in text and "the answer?" in text and "The **answer** is 42." in text
        assert any("chat.md" in n for n in notices(app))


async def test_commands_that_change_the_agent_wait_for_the_turn(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="slow " * 200, chunk_size=4, delay=0.02))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "talk")
        await wait_for(pilot, lambda: app.busy)
        await submit(pilot, app, "/model fake/x")
        assert any("wait for the turn" in n.message for n in app._notifications)  # a toast
        assert not any("wait for the turn" in n for n in notices(app))  # not mid-answer
        app.action_interrupt()
        await wait_for(pilot, lambda: not app.busy)


async def test_exit_quits(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.prompt.input.load_text("/exit")
        app.prompt.input.submit()
        await wait_for(pilot, lambda: app.return_code is not None, what="the app to exit")
    assert app.return_code == 0
