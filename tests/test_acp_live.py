"""What the editor shows of a running call, through the ``agent-client-protocol`` SDK's client
side against ``python -m etcode acp``: live Bash output that grows (ACP ``content`` replaces
the card's content), the permission question about the real call with its "always" scope
named, edit locations with their line, TodoWrite as a plan only, and a cancelled command's
output kept in the editor's terminal."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, text_block

from tests.acp_support import RecordingClient, acp_agent, capabilities, step
from tests.cli_helpers import write_config
from tests.fake_llm import Call, FakeLLM, Reply


async def _start(conn: Any, project: Path, terminal: bool = False) -> str:
    await step(
        conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(terminal=terminal)
        )
    )
    session = await step(conn.new_session(cwd=str(project), mcp_servers=[]))
    return str(session.session_id)


def _texts(update: Any) -> str:
    return "".join(getattr(getattr(c, "content", None), "text", "") or "" for c in update.content or [])


async def _wait_for(client: RecordingClient, found: Any) -> None:
    """Until ``found()`` holds (checked after each update), at most the step's limit."""

    async def wait() -> None:
        while not found():
            client.update_seen.clear()
            if found():
                return
            await client.update_seen.wait()

    await step(wait())


async def test_live_bash_output_grows_and_the_last_update_holds_every_line(
    llm: FakeLLM, project: Path
) -> None:
    # Each line waits for the test to have seen the one before: several updates, every time.
    script = "; ".join(f"echo line-{i}; while [ ! -e go{i} ]; do sleep 0.02; done" for i in range(1, 4))
    write_config(project, llm)
    llm.script(
        Reply(calls=[Call("Bash", {"command": script + "; echo line-4", "description": "count"}, id="call_sh")]),
        Reply(text="counted"),
    )  # fmt: skip
    client = RecordingClient(answers=["allow_once"] * 4)
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("count")]))
        for i in range(1, 4):
            await _wait_for(
                client, lambda i=i: any(f"line-{i}" in _texts(u) for u in client.tool_updates("call_sh"))
            )
            (project / f"go{i}").touch()
        assert (await step(running)).stop_reason == "end_turn"
    updates = client.tool_updates("call_sh")
    live = [u for u in updates if u.status is None and u.content]
    assert len(live) >= 3, [_texts(u) for u in live]
    # Each live update holds everything printed so far, in order (ACP content replaces).
    for i in range(2, 5):  # the first update showing a line shows the ones before it
        first = next(_texts(u) for u in live if f"line-{i}" in _texts(u))
        assert all(f"line-{j}" in first for j in range(1, i)), first
    last = _texts(live[-1])
    assert [line for line in last.splitlines() if line.startswith("line-")] == [
        f"line-{i}" for i in range(1, 5)
    ]
    assert last.startswith("```\n") and not last.endswith("\n\n```")
    final = _texts(updates[-1])
    assert updates[-1].status == "completed" and "line-4" in final
    assert not final.rstrip("`").endswith("\n\n"), final  # no blank line before the closing fence


async def test_the_permission_question_shows_the_real_call_and_names_the_always_scope(
    llm: FakeLLM, project: Path
) -> None:
    write_config(project, llm, permission={"bash": {"rm *": "ask", "*": "allow"}, "edit": "ask"})
    (project / "junk.txt").write_text("x\n", encoding="utf-8")
    lines = "".join(f"line {i}\n" for i in range(1, 11))
    (project / "a.py").write_text(lines, encoding="utf-8")
    edit = {"file_path": "a.py", "old_string": "line 7\n", "new_string": "line seven\n"}
    write = {
        "file_path": "a.py",
        "content": lines.replace("line 7\n", "line seven\n").replace("line 3\n", "3\n"),
    }
    llm.script(
        Reply(calls=[Call("Bash", {"command": "rm -f junk.txt", "description": "clean up"}, id="call_rm")]),
        Reply(calls=[Call("Edit", edit, id="call_ed")]),
        Reply(calls=[Call("WriteFile", write, id="call_wr")]),
        Reply(text="done"),
    )  # fmt: skip
    client = RecordingClient(answers=["allow_once"] * 3)
    options: list[list[str]] = []
    asked = client.request_permission

    async def record_options(**kwargs: Any) -> Any:
        options.append([option.name for option in kwargs["options"] if option.kind == "allow_always"])
        return await asked(**kwargs)

    client.request_permission = record_options  # type: ignore[method-assign]
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        assert (
            await step(conn.prompt(session_id=session_id, prompt=[text_block("go")]))
        ).stop_reason == "end_turn"
    rm, edited, written = client.permission_requests
    # The question is about the call itself: its input, title and kind, not the rule's internals.
    assert rm.tool_call_id == "call_rm" and rm.raw_input == {
        "command": "rm -f junk.txt",
        "description": "clean up",
    }
    assert rm.kind == "execute" and "rm -f junk.txt" in (rm.title or "")
    assert edited.tool_call_id == "call_ed" and edited.raw_input == edit and edited.kind == "edit"
    assert written.raw_input == write and (written.title or "").startswith("WriteFile")
    # "Always allow" says what it allows.
    assert options == [["Always allow rm *"], ["Always allow edits to a.py"], ["Always allow edits to a.py"]]
    # Edits point at their first changed line (1-based), in the question and on the card.
    target = str((project / "a.py").resolve())
    assert [(loc.path, loc.line) for loc in edited.locations] == [(target, 7)]
    assert [(loc.path, loc.line) for loc in written.locations] == [(target, 3)]
    assert [(loc.path, loc.line) for loc in client.tool_updates("call_ed")[-1].locations] == [(target, 7)]
    assert [(loc.path, loc.line) for loc in client.tool_updates("call_wr")[-1].locations] == [(target, 3)]


async def test_todo_write_is_a_plan_not_a_tool_card_live_and_replayed(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    todos = [{"content": "Read", "status": "completed"}, {"content": "Fix", "status": "in_progress"}]
    llm.script(
        Reply(calls=[Call("TodoWrite", {"todos": todos}, id="call_plan")]),
        Reply(calls=[Call("TodoWrite", {"todos": "not a list"}, id="call_bad")]),
        Reply(text="planned"),
    )  # fmt: skip
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        assert (
            await step(conn.prompt(session_id=session_id, prompt=[text_block("plan")]))
        ).stop_reason == "end_turn"
    [plan] = client.of_kind("plan")
    assert [(e.content, e.status) for e in plan.entries] == [("Read", "completed"), ("Fix", "in_progress")]
    ids = [u.tool_call_id for u in client.of_kind("tool_call") + client.of_kind("tool_call_update")]
    assert "call_plan" not in ids
    # A TodoWrite that failed is shown once, as a failed call (the model's mistake is visible).
    [bad] = [u for u in client.of_kind("tool_call") if u.tool_call_id == "call_bad"]
    assert bad.status == "failed" and client.tool_updates("call_bad") == []
    replayed = RecordingClient()
    async with acp_agent(replayed, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        await step(conn.load_session(cwd=str(project), session_id=session_id, mcp_servers=[]))
    ids = [u.tool_call_id for u in replayed.of_kind("tool_call") + replayed.of_kind("tool_call_update")]
    assert "call_plan" not in ids and len(replayed.of_kind("plan")) == 1


async def test_a_cancelled_command_in_the_editors_terminal_keeps_its_output(
    llm: FakeLLM, project: Path
) -> None:
    write_config(project, llm, permission={"bash": "allow"})
    command = "echo first-part; sleep 120; echo never"
    llm.script(Reply(calls=[Call("Bash", {"command": command, "description": "wait"}, id="call_t")]))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project, terminal=True)
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("wait")]))
        await _wait_for(client, lambda: "term-1" in client.terminals)

        async def printed() -> None:
            while b"first-part" not in client.terminals["term-1"].output:
                await asyncio.sleep(0.05)

        await step(printed())
        await conn.cancel(session_id=session_id)
        assert (await step(running)).stop_reason == "cancelled"
    end = client.tool_updates("call_t")[-1]
    assert end.status == "failed", end
    shown = json.dumps(end.model_dump(mode="json", by_alias=True))
    # The terminal stays on the card (the editor keeps showing a released terminal's output),
    # and the output so far is there as text too.
    assert any(getattr(c, "terminal_id", None) == "term-1" for c in end.content), shown
    assert "first-part" in shown and "never" not in shown


async def test_a_subagents_question_shows_its_call_without_waiting(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, permission={"bash": {"rm *": "ask", "*": "allow"}})
    (project / "junk.txt").write_text("x\n", encoding="utf-8")
    task = {"description": "clean", "prompt": "remove junk.txt", "subagent_type": "general"}
    llm.script(
        Reply(calls=[Call("Task", task, id="call_task")]),
        Reply(calls=[Call("Bash", {"command": "rm -f junk.txt", "description": "remove"}, id="child_rm")]),
        Reply(text="removed"),
        Reply(text="the subagent removed it"),
    )  # fmt: skip
    client = RecordingClient(answers=["allow_once"])
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        assert (
            await step(conn.prompt(session_id=session_id, prompt=[text_block("go")]), timeout=30)
        ).stop_reason == "end_turn"
    [asked] = client.permission_requests
    assert asked.tool_call_id == "child_rm" and asked.raw_input == {
        "command": "rm -f junk.txt",
        "description": "remove",
    }
    assert asked.kind == "execute" and not (project / "junk.txt").exists()


async def test_a_question_about_a_file_a_command_reads_says_so_on_the_commands_card(
    llm: FakeLLM, project: Path
) -> None:
    write_config(project, llm, permission={"bash": "allow", "read": {"secret.txt": "ask"}})
    (project / "secret.txt").write_text("s3cret\n", encoding="utf-8")
    command = {"command": "cat secret.txt", "description": "show it"}
    llm.script(Reply(calls=[Call("Bash", command, id="call_cat")]), Reply(text="shown"))
    client = RecordingClient(answers=["reject_once"])
    options: list[str] = []
    asked = client.request_permission

    async def record_options(**kwargs: Any) -> Any:
        options.extend(option.name for option in kwargs["options"] if option.kind == "allow_always")
        return await asked(**kwargs)

    client.request_permission = record_options  # type: ignore[method-assign]
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        assert (
            await step(conn.prompt(session_id=session_id, prompt=[text_block("go")]))
        ).stop_reason == "end_turn"
    [question] = client.permission_requests
    assert question.tool_call_id == "call_cat" and question.raw_input == command
    assert question.kind == "execute" and "cat secret.txt" in (question.title or "")
    assert _texts(question) == "Allow reading secret.txt?"
    assert options == ["Always allow reading secret.txt"]


async def test_a_cancelled_command_run_by_etcode_keeps_its_live_output(llm: FakeLLM, project: Path) -> None:
    """Without the editor's terminal the card showed the command's output live; the cancel's
    last update replaces the card's content (ACP), so it must still hold that output."""
    write_config(project, llm, permission={"bash": "allow"})
    command = "echo first-part; sleep 120; echo never"
    llm.script(Reply(calls=[Call("Bash", {"command": command, "description": "wait"}, id="call_c")]))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("wait")]))
        await _wait_for(client, lambda: any("first-part" in _texts(u) for u in client.tool_updates("call_c")))
        await conn.cancel(session_id=session_id)
        assert (await step(running)).stop_reason == "cancelled"
    end = client.tool_updates("call_c")[-1]
    assert end.status == "failed", end
    shown = _texts(end)
    assert "first-part" in shown and "never" not in shown, shown
    assert "interrupted" in shown.lower(), shown


async def test_a_nested_subagents_question_comes_without_the_cards_wait(llm: FakeLLM, project: Path) -> None:
    """A subagent that may delegate (``tools: {Task: true}``) runs a worker whose command asks:
    its call reaches the editor's event stream too (under the first Task), so the question
    does not wait the 10 s bound for a card that never comes."""
    config = {
        "lead": {"description": "Delegates.", "prompt": "You delegate.", "mode": "subagent", "tools": {"Task": True}},
        "worker": {"description": "Works.", "prompt": "You work.", "mode": "subagent"},
    }  # fmt: skip
    write_config(project, llm, permission={"bash": {"rm *": "ask", "*": "allow"}}, agent=config)
    (project / "junk.txt").write_text("x\n", encoding="utf-8")
    delegate = {"description": "delegate", "prompt": "have junk.txt removed", "subagent_type": "lead"}
    work = {"description": "clean", "prompt": "remove junk.txt", "subagent_type": "worker"}
    llm.script(
        Reply(calls=[Call("Task", delegate, id="call_lead")]),
        Reply(calls=[Call("Task", work, id="lead_task")]),
        Reply(calls=[Call("Bash", {"command": "rm -f junk.txt", "description": "remove"}, id="worker_rm")]),
        Reply(text="removed"),
        Reply(text="the worker removed it"),
        Reply(text="done"),
    )  # fmt: skip
    client = RecordingClient(answers=["allow_once"])
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("go")]))

        async def worker_asked_model() -> float:
            while len(llm.requests) < 3:
                await asyncio.sleep(0.02)
            return time.monotonic()

        served = await step(worker_asked_model())
        await step(client.permission_asked.wait())
        waited = time.monotonic() - served
        assert (await step(running, timeout=30)).stop_reason == "end_turn"
    [asked] = client.permission_requests
    assert asked.tool_call_id == "worker_rm" and asked.raw_input["command"] == "rm -f junk.txt"
    assert waited < 5.0, f"the question waited {waited:.1f} s for a card"  # the bound is 10 s
    assert not (project / "junk.txt").exists()
