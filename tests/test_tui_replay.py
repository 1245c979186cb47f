"""A resumed session looks like the live run (issue 15, bug 1): the same tool lines, the
Edit's diff, internal messages as notices, the turns before a compaction, and the status
bar's tokens and cost before the next turn."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from rich.console import Console

from etcode.provider.types import Message, TextPart, ToolCallPart, ToolResultPart
from etcode.session.store import SessionStore
from etcode.ui.tui.widgets.messages import FrozenMarkdown, Notice, UserMessage, render_options
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

PROJECT = ProjectSpec(
    files={name: "".join(f"{name} line {i}\n" for i in range(60)) for name in ("a.py", "b.py", "c.py")}
)


def notices(app) -> list[str]:
    return [str(n.render()) for n in app.conversation.query(Notice)]


def users(app) -> list[str]:
    return [str(u.render()) for u in app.conversation.query(UserMessage)]


def tool_lines(app) -> dict[str, tuple[str, str]]:
    """call id -> (head title, ``└`` line) of every tool block shown."""
    return {cid: (w.title, w.line_text) for cid, w in app.conversation.tools.items()}


async def resumed(project: Path, check) -> None:
    """Open the project's last session in a new app (``etcode -c``) and run ``check(pilot, app)``."""
    app = make_app(project, continue_last=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: app.conversation.entries, what="the replayed history")
        await pilot.pause()
        await check(pilot, app)


async def test_resumed_tool_lines_and_edit_diff_match_the_live_run(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("ReadManyFiles", {"paths": ["a.py", "b.py", "c.py"]}, id="call_read")]),
        Reply(
            calls=[
                Call(
                    "Edit",
                    {"file_path": "a.py", "old_string": "a.py line 7\n", "new_string": "changed 7\n"},
                    id="call_edit",
                )
            ]
        ),
        Reply(text="Done."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "read and edit")
        live = tool_lines(app)
        live_diff = app.conversation.tools["call_edit"].data["diff"]
        await app.action_quit()
    assert live["call_read"][1].startswith("  └ Read 3 files (")
    assert live["call_edit"][1] == "  └ Updated a.py (+1 -1)"
    assert "+changed 7" in live_diff

    async def check(pilot, app) -> None:
        assert tool_lines(app) == live
        edit = app.conversation.tools["call_edit"]
        assert edit.data is not None and edit.data["diff"] == live_diff
        detail = edit.detail_renderable()
        console = Console(width=80, record=True)
        console.print(detail)
        shown = console.export_text()
        assert "8 + changed 7" in shown and "8 - a.py line 7" in shown  # the diff, not the model's text

    await resumed(project, check)


async def test_internal_messages_replay_as_notices(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "a.py", "content": "new\n"})]),
        Reply(text="Written."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "overwrite a.py")
        await submit(pilot, app, "/undo")
        await wait_for(pilot, lambda: any(n.startswith("Restored") for n in notices(app)), what="undo")
        live = [n for n in notices(app) if n.startswith("Restored")]
        await app.action_quit()

    async def check(pilot, app) -> None:
        assert not [u for u in users(app) if u.startswith("[etcode]")]
        assert users(app) == ["overwrite a.py"]
        undone = [n for n in notices(app) if n.startswith("Restored the last changed turn")]
        assert undone == live and "a.py" in undone[0]  # the notice the live chat showed

    await resumed(project, check)


async def test_turns_before_a_compaction_are_shown(project: Path, llm: FakeLLM) -> None:
    llm.script(
        # long enough that a summary is shorter (one that would grow the request is not kept)
        Reply(text=" ".join(f"point {i} of the first answer" for i in range(80))),
        Reply(text=" ".join(f"point {i} of the second answer" for i in range(80))),
        Reply(text="three " * 50),
        Reply(text="## Goal\nCount.\n## Next steps\nNone."),  # the summary
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        for text in ("first", "second", "third"):
            await run_turn(pilot, app, text)
        await submit(pilot, app, "/compact")
        await wait_for(pilot, lambda: any("context compacted" in n for n in notices(app)), what="compaction")
        await wait_for(pilot, lambda: not app.busy, what="the compaction's end")
        history = app.host.agent.history
        await app.action_quit()
    assert not any(m.text == "first" for m in history)  # compacted away from the model's view

    async def check(pilot, app) -> None:
        assert users(app) == ["first", "second", "third"]  # once each, in order
        compacted = [n for n in notices(app) if "context compacted" in n]
        assert len(compacted) == 1
        entries = app.conversation.entries
        notice = next(w for w in entries if isinstance(w, Notice) and "context compacted" in str(w.render()))
        assert entries.index(notice) == len(entries) - 1  # after the turns it summarised

    await resumed(project, check)


async def test_turns_before_a_clear_are_shown_after_its_notice(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="Before."), Reply(text="After."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "first")
        await submit(pilot, app, "/clear")
        await wait_for(pilot, lambda: "Context cleared." in notices(app), what="the clear")
        await run_turn(pilot, app, "second")
        await app.action_quit()

    async def check(pilot, app) -> None:
        shown = [
            str(w.render())
            for w in app.conversation.entries
            if isinstance(w, UserMessage | Notice) and "compacted" not in str(w.render())
        ]
        assert shown == ["first", "Context cleared.", "second"]

    await resumed(project, check)


async def test_tables_keep_their_borders_in_a_resumed_session(project: Path, llm: FakeLLM) -> None:
    table = "Sizes:\n\n| Name | Size |\n|------|-----:|\n| a.py | 10 |\n| b.py | 200 |\n"
    llm.script(Reply(text=table), Reply(text="Second."), Reply(text="Third."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        for text in ("sizes?", "more", "again"):
            await run_turn(pilot, app, text)
        await app.action_quit()

    async def check(pilot, app) -> None:
        frozen = [w for w in app.conversation.query(FrozenMarkdown) if "a.py" in w.source]
        assert frozen, "the oldest answer is a light widget in the replay"
        lines = frozen[0].rendered.lines(app.console, render_options(frozen[0]))
        text = ["".join(segment.text for segment in line) for line in lines]
        row = next(line for line in text if "a.py" in line)
        assert row.lstrip().startswith("│") and "│" in row.strip()[1:]  # as the live widget draws it
        assert any(line.lstrip().startswith("┌") for line in text)

    await resumed(project, check)


async def test_status_bar_names_the_window_as_people_do(project: Path, llm: FakeLLM) -> None:
    """A 131,072-token window is "128k", not "131.1k"."""
    write_priced_config(project, llm)
    config = json.loads((project / "etcode.json").read_text(encoding="utf-8"))
    config["provider"][0]["models"]["test-model"]["limit"]["context"] = 131072
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    llm.script(Reply(text="Hi.", usage=(13107, 10)))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "hello")
        live = app.status_bar.info.left().plain
        await app.action_quit()
    assert "(10% of 128k)" in live, live


def test_window_sizes_read_as_whole_k_or_m() -> None:
    from etcode.ui.tui.widgets.status import format_window

    sizes = (2048, 4096, 8192, 131072, 200000, 1000000, 1048576, 12345, 1500000)
    assert [format_window(n) for n in sizes] == [
        "2k",
        "4k",
        "8k",
        "128k",
        "200k",
        "1M",
        "1M",
        "12.3k",
        "1.5M",
    ]


async def test_status_bar_has_the_stored_tokens_and_cost_on_resume(project: Path, llm: FakeLLM) -> None:
    write_priced_config(project, llm)
    llm.script(Reply(text="Hi.", usage=(20000, 1000)))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "hello")
        live = app.status_bar.info.left().plain
        await app.action_quit()
    assert "21k tokens (21% of 100k)" in live and "$0.0750" in live

    async def check(pilot, app) -> None:
        await wait_for(pilot, lambda: app.status_bar.info.context_tokens, what="the stored tokens")
        assert app.status_bar.info.left().plain == live

    await resumed(project, check)


async def test_old_sessions_without_stored_summaries_still_replay(project: Path, llm: FakeLLM) -> None:
    """Rows written before the summary was stored: the generic line, as before."""
    # A real first session, then its rows put back in the old shape (no summary, no data).
    llm.script(
        Reply(calls=[Call("ReadManyFiles", {"paths": ["a.py", "b.py"]}, id="call_old")]),
        Reply(text="Read."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "read two")
        session_id = app.host.agent.session_id
        await app.action_quit()
    store = SessionStore.open()
    store.close()
    conn = sqlite3.connect(store.path)
    rows = conn.execute("SELECT seq, parts FROM messages WHERE session_id = ?", (session_id,)).fetchall()
    for seq, parts in rows:
        decoded = json.loads(parts)
        for part in decoded:
            part.pop("summary", None)
            part.pop("data", None)
        conn.execute(
            "UPDATE messages SET parts = ? WHERE session_id = ? AND seq = ?",
            (json.dumps(decoded), session_id, seq),
        )
    conn.commit()
    conn.close()

    async def check(pilot, app) -> None:
        title, line = tool_lines(app)["call_old"]
        assert title == "ReadManyFiles (2 files)"
        assert line.startswith("  └ ") and "lines of output" in line  # today's generic fallback

    await resumed(project, check)


def test_tool_result_display_fields_round_trip_and_stay_out_of_old_rows() -> None:
    part = ToolResultPart(
        "c1", "Edit", "Edited a.py", summary="Updated a.py (+1 -1)", data={"diff": "-a\n+b"}
    )
    message = Message("tool", [part])
    assert Message.from_dict(message.to_dict()).parts[0] == part
    plain = Message("tool", [ToolResultPart("c2", "Bash", "ok")]).to_dict()
    assert set(plain["parts"][0]) == {"call_id", "name", "output", "is_error", "type"}  # as before
    newer = {"role": "user", "parts": [{"type": "text", "text": "hi", "added_later": 1}]}
    assert Message.from_dict(newer).parts == [TextPart("hi")]  # a newer etcode's key is skipped
    assert ToolCallPart("x", "y").type == "tool_call"


def test_internal_messages_become_notices_and_ordinary_ones_do_not() -> None:
    from etcode.engine.compaction import announcement, summary_message
    from etcode.provider.types import ToolSchema
    from etcode.session.snapshots import undo_note
    from etcode.ui.tui.replay import COMPACTED, entries_of, notice_of

    tools = [ToolSchema("Deploy", "Deploy the site.\nMore.", {}), ToolSchema("Ping", "", {})]
    messages = [
        Message.user("[etcode] is in my text, but later"),
        announcement(tools),
        summary_message("## Goal\nX", has_tail=True),
        undo_note(["/p/a.py: restored", "/p/b.py: deleted (it did not exist before)"]),
        Message.user(
            "[etcode] Background process bash_1 (npm run dev) exited with code 1. Read the rest…\n"
            "[etcode] Background process bash_2 (make watch) exited with code 0. Read the rest…"
        ),
    ]
    shown = [notice_of(entry) for entry in entries_of(messages)]
    assert shown[0] is None  # typed by the user: stays a user message
    assert shown[1] == "New tools available: Deploy, Ping"
    assert shown[2] == COMPACTED
    assert shown[3] == (
        "Restored the last changed turn — /p/a.py: restored; /p/b.py: deleted (it did not exist before)"
    )
    assert shown[4] == (  # a background process's exit note (issue 29)
        "Background process bash_1 (npm run dev) exited with code 1. Read the rest…\n"
        "Background process bash_2 (make watch) exited with code 0. Read the rest…"
    )


async def test_reasoning_empty_parts_and_calls_out_of_pairs_replay() -> None:
    """Stored reasoning is shown finished; empty texts and reasoning show nothing; a result
    whose call is not stored gets a block of its own; a call without a result was interrupted."""
    from textual.app import App, ComposeResult

    from etcode.provider.types import ReasoningPart
    from etcode.ui.tui.replay import entries_of, entry_widgets
    from etcode.ui.tui.widgets.conversation import Conversation
    from etcode.ui.tui.widgets.messages import ReasoningMessage
    from etcode.ui.tui.widgets.tool import ToolMessage

    class Plain(App[None]):
        def compose(self) -> ComposeResult:
            yield Conversation()

    messages = [
        Message(role="user", parts=[TextPart("go")]),
        Message(role="assistant", parts=[ReasoningPart("pondering"), ReasoningPart(""), TextPart("")]),
        Message(role="tool", parts=[ToolResultPart("lost", "Bash", "out", summary="1 line")]),
        Message(role="assistant", parts=[ToolCallPart("cut", "Bash", '{"command": "sleep 9"}')]),
    ]
    app = Plain()
    async with app.run_test():
        widgets = entry_widgets(app.query_one(Conversation), entries_of(messages))
        assert [type(w) for w in widgets] == [UserMessage, ReasoningMessage, ToolMessage, ToolMessage]
        lost, cut = widgets[2], widgets[3]
        assert isinstance(lost, ToolMessage) and isinstance(cut, ToolMessage)
        assert (lost.call_id, lost.result_summary, lost.is_error) == ("lost", "1 line", False)
        assert (cut.call_id, cut.result_summary, cut.is_error) == ("cut", "Interrupted", True)
