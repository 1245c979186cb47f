"""Pilot-driven TUI tests: whole turns against the fake LLM server over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual import events

from etcode.contract import events as ev
from etcode.ui.tui.widgets.messages import AssistantMessage, Notice, UserMessage
from etcode.ui.tui.widgets.permission import PermissionScreen
from etcode.ui.tui.widgets.tool import ToolMessage
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import (
    SIZE,
    ProjectSpec,
    make_app,
    permission_dialog,
    ready,
    record_events,
    run_turn,
    submit,
    wait_for,
    write_config,
)

PROJECT = ProjectSpec(files={"notes.txt": "the secret number is 42\n"})


def answers(app) -> list[AssistantMessage]:
    return list(app.conversation.query(AssistantMessage))


def notices(app) -> list[str]:
    return [str(n.render()) for n in app.conversation.query(Notice)]


async def test_streaming_text_appears_while_it_streams(project: Path, llm: FakeLLM) -> None:
    text = "# Plan\n\n" + " ".join(f"word{i}" for i in range(200)) + "\n\n- done"
    llm.script(Reply(text=text, chunk_size=12, delay=0.03))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "write a plan")
        partial = await wait_for(
            pilot,
            lambda: app.busy and answers(app) and 0 < len(answers(app)[0].text) < len(text),
            what="partial",
        )
        assert partial
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        await pilot.pause()
        (answer,) = answers(app)
        assert answer.text == text
        assert answer.source == text  # everything reached the Markdown widget
        user = app.conversation.query_one(UserMessage)
        assert "write a plan" in str(user.render())


async def test_code_is_coloured_when_its_lexer_has_loaded(project: Path, llm: FakeLLM) -> None:
    """A code block shows at once (plain) and is repainted when the lexer thread is done."""
    from etcode.ui.tui.widgets.messages import CodeFence

    llm.script(Reply(text="Here:\n\n```haskell\nmain = print 1\n```\n", chunk_size=8, delay=0.01))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "show code")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        fence = await wait_for(pilot, lambda: list(app.conversation.query(CodeFence)), what="a fence")
        assert fence[0].code.strip() == "main = print 1"
        await wait_for(pilot, lambda: fence[0]._highlighted_code.spans, timeout=20, what="colours")


async def test_tool_widget_goes_from_executing_to_its_summary(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("Bash", {"command": "sleep 0.6 && echo done", "description": "wait"})]),
        Reply(text="All done."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        seen = record_events(app)
        await ready(pilot, app)
        await submit(pilot, app, "run it")
        widget = await wait_for(
            pilot, lambda: app.conversation.tools and next(iter(app.conversation.tools.values()))
        )
        assert isinstance(widget, ToolMessage)
        assert widget.title.startswith("Bash (")
        assert widget.line_text == "  └ executing..."
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        start = next(e for e in seen if isinstance(e, ev.ToolCallStart))
        result = next(e for e in seen if isinstance(e, ev.ToolResultEvent))
        assert widget.title == start.title  # the summary generators' text, as is
        assert widget.line_text == f"  └ {result.summary}"
        assert not widget.is_error
        widget.focus()
        await pilot.press("enter")  # expand: the full output
        detail = widget.detail_renderable()
        assert "done" in str(detail)
        assert widget.expanded


async def test_edit_tool_expands_to_its_diff(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "hello.py", "content": "print('hi')\n"})]),
        Reply(text="Created."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "create hello.py")
        (widget,) = app.conversation.tools.values()
        assert widget.title == "WriteFile (hello.py)"
        assert "print('hi')" in (widget.data or {}).get("diff", "")
        widget.action_toggle_detail()
        await pilot.pause()
        assert widget.expanded and widget._detail is not None


async def test_tool_error_shows_a_warning_line(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "missing.txt"})]), Reply(text="It is missing."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "read missing.txt")
        (widget,) = app.conversation.tools.values()
        assert widget.is_error
        assert widget.line_text.startswith("  └ ⚠ ")


async def test_todo_panel_follows_todowrite(project: Path, llm: FakeLLM) -> None:
    todos = [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending"},
    ]
    llm.script(Reply(calls=[Call("TodoWrite", {"todos": todos})]), Reply(text="Working on it."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert not app.todos.display
        await run_turn(pilot, app, "plan")
        assert app.todos.display
        assert [t["status"] for t in app.todos.todos] == ["completed", "in_progress", "pending"]
        assert app.todos.in_progress == "Fix the bug"
        rendered = app.todos.render()
        plain = str(rendered)
        assert "Todos 1/3" in plain and "Fixing the bug" in plain and "Run the tests" in plain
        await pilot.press("ctrl+t")
        assert not app.todos.display


async def test_escape_interrupts_a_slow_turn(project: Path, llm: FakeLLM) -> None:
    text = " ".join(f"slow{i}" for i in range(400))
    llm.script(Reply(text=text, chunk_size=4, delay=0.05))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        seen = record_events(app)
        await ready(pilot, app)
        await submit(pilot, app, "talk slowly")
        await wait_for(pilot, lambda: answers(app) and len(answers(app)[0].text) > 20, what="some text")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy, timeout=3, what="the interrupt")
        stopped = [e for e in seen if isinstance(e, ev.StoppedEvent)]
        assert stopped and stopped[0].reason == "interrupted"
        assert any("Interrupted" in n for n in notices(app))
        kept = app.host.agent.history[-1]
        assert kept.role == "assistant" and kept.text and text.startswith(kept.text)
        assert len(kept.text) < len(text)
        assert app.prompt.input.has_focus  # typing goes on


async def test_escape_cancels_a_running_tool_and_answers_it(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(calls=[Call("Bash", {"command": "sleep 30", "description": "long"})]))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "wait long")
        widget = await wait_for(pilot, lambda: next(iter(app.conversation.tools.values()), None))
        await pilot.pause(0.3)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy, timeout=5, what="the interrupt")
        assert widget.result_summary is not None  # every tool call answered
        results = [p for m in app.host.agent.history for p in m.tool_results]
        assert len(results) == 1


async def test_permission_modal_allows(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": "ask"})
    llm.script(
        Reply(calls=[Call("Bash", {"command": "echo hi > out.txt", "description": "write"})]),
        Reply(text="Wrote it."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "write out.txt")
        screen = await permission_dialog(pilot, app)
        assert screen.request.metadata["command"] == "echo hi > out.txt"
        await pilot.press("1")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert (project / "out.txt").read_text().strip() == "hi"
        (widget,) = app.conversation.tools.values()
        assert not widget.is_error


async def test_permission_modal_rejects_with_a_reason_for_the_model(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": "ask"})
    llm.script(
        Reply(calls=[Call("Bash", {"command": "rm -rf build", "description": "clean"})]),
        Reply(text="OK, I will not."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        await permission_dialog(pilot, app)
        await pilot.press("3")
        await pilot.pause()
        for char in "keep the build":
            await pilot.press("space" if char == " " else char)
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        (widget,) = app.conversation.tools.values()
        assert widget.is_error
        assert "keep the build" in json.dumps(llm.requests[1].body)


async def test_allow_always_is_remembered_for_the_session(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": "ask"})
    llm.script(
        Reply(calls=[Call("Bash", {"command": "echo one", "description": "1"})]),
        Reply(calls=[Call("Bash", {"command": "echo one", "description": "again"})]),
        Reply(text="Twice."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "twice")
        screen = await permission_dialog(pilot, app)
        await pilot.press("2")  # selects "Allow always"; Enter confirms
        assert app.screen is screen and screen.focused.id == "allow-always"
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert len(app.asker.asked) == 1
        assert all(not w.is_error for w in app.conversation.tools.values())


async def test_escape_while_the_modal_is_open_closes_it(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": "ask"})
    llm.script(Reply(calls=[Call("Bash", {"command": "echo x", "description": "x"})]), Reply(text="Fine."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "x")
        await permission_dialog(pilot, app)
        await pilot.press("escape")  # the modal's Esc rejects
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert not isinstance(app.screen, PermissionScreen)
        (widget,) = app.conversation.tools.values()
        assert widget.is_error


async def test_mention_attaches_the_file(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="42."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "what is in @notes.txt ?")
        body = json.dumps(llm.requests[0].body)
        assert "the secret number is 42" in body
        user = app.conversation.query_one(UserMessage)
        assert "@notes.txt" in str(user.render())


async def test_messages_sent_while_busy_are_queued(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="first " * 100, chunk_size=8, delay=0.03), Reply(text="second"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "one")
        await wait_for(pilot, lambda: app.busy)
        await submit(pilot, app, "two")
        await wait_for(pilot, lambda: len(llm.requests) == 2 and not app.busy, what="the queued turn")
        assert [a.text for a in answers(app)][-1] == "second"


async def test_ctrl_c_twice_quits_and_keeps_finished_work(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(text="Step one.", calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(text="slow " * 300, chunk_size=4, delay=0.05),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "go")
        await wait_for(pilot, lambda: len(answers(app)) == 2 and answers(app)[1].text, what="the second step")
        # Both presses land mid-turn (Pilot.press would wait for an idle screen in between,
        # and cannot wait on an app that is exiting).
        app.post_message(events.Key("ctrl+c", None))
        app.post_message(events.Key("ctrl+c", None))
        await wait_for(pilot, lambda: app.return_code is not None, timeout=10, what="the app to exit")
    history = app.host.agent.history
    assert any(m.tool_results for m in history)  # the finished step survived the quit
    assert history[-1].role == "assistant" and history[-1].text.startswith("slow")  # partial text kept
    assert app.return_code == 0


async def test_one_ctrl_c_does_not_quit(project: Path, llm: FakeLLM) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.prompt.input.load_text("draft")
        await pilot.press("ctrl+c")
        assert app.return_code is None
        assert app.prompt.input.text == ""  # the first press clears the input


async def test_no_color_is_honoured(project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert app.no_color


async def test_config_error_is_shown_not_raised(tmp_path: Path) -> None:
    (tmp_path / "etcode.json").write_text(json.dumps({"model": "nope/x"}), encoding="utf-8")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: any("error" in n for n in notices(app)), what="an error notice")
        assert any("nope" in n for n in notices(app))


async def test_old_entries_are_pruned(project: Path, llm: FakeLLM) -> None:
    app = make_app(project, max_widgets=20)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        for i in range(60):
            await app.conversation.add_notice(f"note {i}")
        assert len(app.conversation.entries) <= 20
        assert app.conversation.pruned >= 40
        assert "earlier entries hidden" in str(app.conversation._banner.render())


async def test_a_long_answer_stays_light_and_complete(project: Path, llm: FakeLLM) -> None:
    from etcode.ui.tui.widgets.messages import FrozenMarkdown

    text = "".join(
        f"## Part {i}\n\nSome text for part {i}.\n\n- a {i}\n- b {i}\n\n```python\nx = {i}\n```\n\n"
        for i in range(60)
    )
    llm.script(Reply(text=text, chunk_size=64))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "write a lot")
        parts = [w for w in app.conversation.entries if isinstance(w, AssistantMessage | FrozenMarkdown)]
        assert "".join(p.text for p in parts) == text  # nothing lost, nothing doubled
        assert any(isinstance(p, FrozenMarkdown) for p in parts)
        (live,) = [p for p in parts if isinstance(p, AssistantMessage)]
        assert len(live.blocks) <= 12
        assert len(list(app.screen.walk_children())) < 150


async def test_spilled_code_is_coloured_when_its_lexer_has_loaded(project: Path, llm: FakeLLM) -> None:
    """Code that moved into the light widget before its lexer loaded is repainted later."""
    from etcode.ui.tui.widgets.messages import FrozenMarkdown

    text = "```erlang\nmain() -> ok.\n```\n\n" + "".join(f"Paragraph {i}.\n\n" for i in range(30))
    llm.script(Reply(text=text, chunk_size=400))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "code then prose")
        frozen = await wait_for(pilot, lambda: list(app.conversation.query(FrozenMarkdown)), what="a spill")
        assert "erlang" in frozen[0].source
        await wait_for(pilot, lambda: not frozen[0].rendered.waiting_for, timeout=20, what="a repaint")
        assert (
            "".join(
                w.text for w in app.conversation.entries if isinstance(w, AssistantMessage | FrozenMarkdown)
            )
            == text
        )


async def test_older_answers_become_light(project: Path, llm: FakeLLM) -> None:
    from etcode.ui.tui.widgets.messages import FrozenMarkdown

    llm.script(*[Reply(text=f"Answer **{i}**.") for i in range(4)])
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        for i in range(4):
            await run_turn(pilot, app, f"question {i}")
        kinds = [
            type(w).__name__
            for w in app.conversation.entries
            if isinstance(w, AssistantMessage | FrozenMarkdown)
        ]
        assert kinds == ["FrozenMarkdown", "FrozenMarkdown", "AssistantMessage", "AssistantMessage"]
        assert [
            w.text for w in app.conversation.entries if isinstance(w, AssistantMessage | FrozenMarkdown)
        ] == [f"Answer **{i}**." for i in range(4)]


async def test_partial_failure_shows_its_error_count(project: Path, llm: FakeLLM) -> None:
    """ReadManyFiles read some files and failed on others: done, with ``N errors ⚠`` (yellow)."""
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("ReadManyFiles", {"paths": ["a.txt", "nope.txt", "gone.txt"]})]),
        Reply(text="Two are missing."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "read them")
        (widget,) = app.conversation.tools.values()
        assert not widget.is_error
        assert widget.line_text == "  └ Read 1 file (6 B), 2 errors ⚠"
        assert (widget.data or {}).get("errorCount") == 2
