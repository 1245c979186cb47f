"""``etcode acp`` driven by a client nobody here wrote: the ``agent-client-protocol`` SDK's
client side, talking to ``python -m etcode acp`` over real pipes, with the fake LLM server."""

from __future__ import annotations

import asyncio
import json
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError, embedded_text_resource, resource_block, text_block
from acp.schema import McpServerStdio

from tests.acp_support import RecordingClient, acp_agent, agent_env, capabilities, step
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Reply
from tests.require import needs


async def _start(conn, project: Path, fs: bool = False, terminal: bool = False) -> str:
    init = await step(
        conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(fs, terminal))
    )
    assert init.agent_capabilities.load_session is True
    session = await step(conn.new_session(cwd=str(project), mcp_servers=[]))
    return session.session_id


async def _prompt(conn, session_id: str, text: str):
    return await step(conn.prompt(session_id=session_id, prompt=[text_block(text)]))


async def test_tool_turn_streams_text_tool_call_and_diff(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    target = project / "app.py"
    target.write_text("x = 1\nprint(x)\n", encoding="utf-8")
    llm.script(
        Reply(text="Editing now.", calls=[Call("Edit", {"file_path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}, id="call_e1")]),
        Reply(text="Done: x is 2."),
    )  # fmt: skip
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        response = await _prompt(conn, session_id, "set x to 2")
    assert response.stop_reason == "end_turn"
    assert target.read_text(encoding="utf-8") == "x = 2\nprint(x)\n"
    assert client.message_text() == "Editing now.Done: x is 2."
    [start] = client.of_kind("tool_call")
    assert start.tool_call_id == "call_e1" and start.kind == "edit" and start.status == "in_progress"
    assert start.title.startswith("Edit") and start.locations[0].path == str(target.resolve())
    end = client.tool_updates("call_e1")[-1]
    assert end.status == "completed"
    [diff] = end.content
    assert diff.type == "diff" and diff.path == str(target.resolve())
    assert "x = 1" in diff.old_text and "x = 2" in diff.new_text and "x = 1" not in diff.new_text
    # The same session, in the CLI's store: listed, and resumed by `etcode run -c`.
    listed = etcode("sessions", "list", "--json", cwd=project)
    assert session_id in listed.stdout, listed.stderr
    llm.script(Reply(text="resumed"))
    resumed = etcode("run", "-c", "--format", "json", "what did you change?", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    history = json.dumps(llm.requests[-1].body["messages"])
    assert "set x to 2" in history and "Done: x is 2." in history


async def test_permission_asked_in_the_editor_allow_and_reject(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, permission={"edit": "ask"})
    a, b = project / "a.txt", project / "b.txt"
    a.write_text("old a\n", encoding="utf-8")
    b.write_text("old b\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("Edit", {"file_path": "a.txt", "old_string": "old a", "new_string": "new a"}, id="call_a")]),
        Reply(text="a done"),
        Reply(calls=[Call("Edit", {"file_path": "b.txt", "old_string": "old b", "new_string": "new b"}, id="call_b")]),
        Reply(text="b refused"),
    )  # fmt: skip
    client = RecordingClient(answers=["allow_once", "reject_once"])
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        first = await _prompt(conn, session_id, "change a")
        second = await _prompt(conn, session_id, "change b")
    assert first.stop_reason == second.stop_reason == "end_turn"
    assert a.read_text(encoding="utf-8") == "new a\n"
    assert b.read_text(encoding="utf-8") == "old b\n"
    asked_a, asked_b = client.permission_requests
    assert asked_a.tool_call_id == "call_a" and asked_b.tool_call_id == "call_b"
    assert asked_a.content[0].type == "diff" and "new a" in asked_a.content[0].new_text
    assert client.tool_updates("call_a")[-1].status == "completed"
    assert client.tool_updates("call_b")[-1].status == "failed"
    refusal = json.dumps(llm.requests[3].body["messages"])
    assert "rejected by the user" in refusal


async def test_allow_always_is_not_asked_again(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, permission={"edit": "ask"})
    (project / "a.txt").write_text("one\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"})]),
        Reply(calls=[Call("Edit", {"file_path": "a.txt", "old_string": "two", "new_string": "three"})]),
        Reply(text="ok"),
    )  # fmt: skip
    client = RecordingClient(answers=["allow_always"])
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        assert (await _prompt(conn, session_id, "go")).stop_reason == "end_turn"
    assert len(client.permission_requests) == 1
    assert (project / "a.txt").read_text(encoding="utf-8") == "three\n"


async def test_cancel_mid_stream_stops_the_turn_and_keeps_what_was_said(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(
        Fault(keepalive=0.05, cut_after=2, reply=Reply(text="partial answer that never ends", chunk_size=4))
    )
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("talk")]))
        await step(client.update_seen.wait())
        await conn.cancel(session_id=session_id)
        response = await step(running, timeout=30)
        assert response.stop_reason == "cancelled"
        # The session takes the next prompt at once.
        llm.script(Reply(text="next"))
        assert (await _prompt(conn, session_id, "again")).stop_reason == "end_turn"
    assert client.message_text().startswith("part")
    assert "talk" in json.dumps(llm.requests[-1].body["messages"])


async def test_cancel_while_a_permission_question_is_open(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, permission={"edit": "ask"})
    (project / "a.txt").write_text("one\n", encoding="utf-8")
    llm.script(Reply(calls=[Call("Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"})]))
    client = RecordingClient(answers=["hold"])
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("go")]))
        await step(client.permission_asked.wait())
        await conn.cancel(session_id=session_id)
        response = await step(running, timeout=30)
    assert response.stop_reason == "cancelled"
    assert (project / "a.txt").read_text(encoding="utf-8") == "one\n"


async def test_load_replays_the_stored_session(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    (project / "notes.md").write_text("# Notes\n", encoding="utf-8")
    llm.script(
        Reply(reasoning="let me look", calls=[Call("ReadFile", {"file_path": "notes.md"}, id="call_r")]),
        Reply(text="The notes have a title."),
        Reply(text="still here"),
    )  # fmt: skip
    first = RecordingClient()
    async with acp_agent(first, project) as (conn, _proc):
        session_id = await _start(conn, project)
        await _prompt(conn, session_id, "what is in notes.md?")
    second = RecordingClient()
    async with acp_agent(second, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        loaded = await step(conn.load_session(cwd=str(project), session_id=session_id, mcp_servers=[]))
        replayed = list(second.kinds())
        assert (await _prompt(conn, session_id, "and now?")).stop_reason == "end_turn"
    assert replayed[:1] == ["user_message_chunk"]
    assert second.message_text("user_message_chunk").startswith("what is in notes.md?")
    assert "let me look" in second.message_text("agent_thought_chunk")
    [call] = [u for u in second.of_kind("tool_call") if u.tool_call_id == "call_r"]
    assert call.kind == "read"
    assert second.tool_updates("call_r")[-1].status == "completed"
    assert "The notes have a title." in second.message_text()
    assert loaded.modes.current_mode_id == "build"
    history = json.dumps(llm.requests[-1].body["messages"])
    assert "what is in notes.md?" in history and "The notes have a title." in history


async def test_modes_switch_agents(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(Reply(text="planning"))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        session = await step(conn.new_session(cwd=str(project), mcp_servers=[]))
        ids = [mode.id for mode in session.modes.available_modes]
        assert session.modes.current_mode_id == "build" and "plan" in ids
        await step(conn.set_session_mode(session_id=session.session_id, mode_id="plan"))
        await _prompt(conn, session.session_id, "plan it")
        with pytest.raises(RequestError) as bad:
            await step(conn.set_session_mode(session_id=session.session_id, mode_id="nope"))
    assert "unknown mode nope" in json.dumps(bad.value.data)
    tools = [tool["function"]["name"] for tool in llm.requests[-1].body["tools"]]
    assert "Edit" not in tools and "ReadFile" in tools


async def test_a_prompt_while_one_runs_is_an_error_not_a_crash(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(Fault(hang=True))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("first")]))
        while not llm.requests:  # the first turn has reached the model
            await asyncio.sleep(0.02)
        with pytest.raises(RequestError) as busy:
            await _prompt(conn, session_id, "second")
        assert "already running" in str(busy.value)
        with pytest.raises(RequestError) as unknown:
            await _prompt(conn, "ses_nope", "hello")
        assert unknown.value.code == -32602
        await conn.cancel(session_id=session_id)
        assert (await step(running, timeout=30)).stop_reason == "cancelled"


async def test_model_error_is_a_json_rpc_error_with_one_line(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, provider={"options": {}})
    llm.script(Fault(status=401))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        with pytest.raises(RequestError) as failed:
            await _prompt(conn, session_id, "hi")
    message = str(failed.value)
    assert failed.value.code == -32603 and "\n" not in message
    assert "401" in message or "API key" in message, message


async def test_mcp_servers_passed_by_the_client_become_tools(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(
        Reply(calls=[Call("time_get_current_time", {"timezone": "UTC"}, id="call_t")]),
        Reply(text="It is now."),
    )  # fmt: skip
    server = McpServerStdio(
        name="time", command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"], env=[]
    )
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        session = await step(conn.new_session(cwd=str(project), mcp_servers=[server]))
        assert (await _prompt(conn, session.session_id, "what time is it?")).stop_reason == "end_turn"
    names = [tool["function"]["name"] for tool in llm.requests[0].body["tools"]]
    assert any(name.startswith("time_") for name in names), names
    result = client.tool_updates("call_t")[-1]
    assert result.status == "completed" and "UTC" in json.dumps(result.model_dump(mode="json"))


async def test_todo_list_is_sent_as_a_plan_and_bash_output_as_a_code_block(
    llm: FakeLLM, project: Path
) -> None:
    write_config(project, llm)
    todos = [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress"},
        {"content": "Run the tests", "status": "pending"},
    ]
    llm.script(
        Reply(calls=[Call("TodoWrite", {"todos": todos}, id="call_plan")]),
        Reply(calls=[Call("Bash", {"command": "echo hello-from-bash", "description": "say hello"}, id="call_sh")]),
        Reply(text="All done."),
    )  # fmt: skip
    client = RecordingClient(answers=["allow_once"])
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        assert (await _prompt(conn, session_id, "work")).stop_reason == "end_turn"
    [plan] = client.of_kind("plan")
    assert [(e.content, e.status) for e in plan.entries] == [(t["content"], t["status"]) for t in todos]
    [shell] = [u for u in client.of_kind("tool_call") if u.tool_call_id == "call_sh"]
    assert shell.kind == "execute" and "echo hello-from-bash" in shell.title
    done = client.tool_updates("call_sh")[-1]
    assert done.status == "completed"
    assert (
        done.content[0].content.text.startswith("```") and "hello-from-bash" in done.content[0].content.text
    )


def _raw_exchange(project: Path, lines: list[bytes], expect: int) -> tuple[list[dict], str]:
    """Write raw lines to ``etcode acp``; read ``expect`` replies (then close stdin)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "etcode", "acp"], cwd=project, env=agent_env(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(line + b"\n" for line in lines))
    proc.stdin.flush()
    replies = []
    for _ in range(expect):
        line = proc.stdout.readline()
        assert line, "etcode acp closed stdout early"
        replies.append(json.loads(line))
    proc.stdin.close()
    rest = proc.stdout.read()
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.wait(timeout=60) == 0, stderr
    assert rest.strip() == b"", rest  # nothing else on stdout
    return replies, stderr


def test_bad_input_gets_json_rpc_errors_and_the_agent_keeps_serving(project: Path) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "initialize",
        "params": {"protocolVersion": PROTOCOL_VERSION},
    }
    lines = [
        b"this is not json",
        b"\xff\xfe{stray bytes}",
        b"[1, 2]",
        b'"just a string"',
        b'{"jsonrpc": "2.0", "id": 1, "method": "no/such_method", "params": {}}',
        b'{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": 42, "mcpServers": []}}',
        b'{"jsonrpc": "2.0", "id": 3, "method": 7}',
        b'{"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}',
        json.dumps(init).encode(),
    ]
    replies, stderr = _raw_exchange(project, lines, expect=len(lines))
    unnamed = [reply["error"]["code"] for reply in replies if reply.get("id") is None]
    assert unnamed == [-32700, -32700, -32600, -32600]  # answered in order, as they arrive
    named = {
        reply["id"]: reply.get("error", {}).get("code") for reply in replies if reply.get("id") is not None
    }
    assert named == {1: -32601, 2: -32602, 3: -32600, 4: -32602, 9: None}
    [ready] = [reply for reply in replies if reply.get("id") == 9]
    assert ready["result"]["agentCapabilities"]["loadSession"] is True
    assert "Traceback" not in stderr


async def test_list_sessions_and_unknown_or_busy_sessions(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(Reply(text="one"), Fault(hang=True))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        await _prompt(conn, session_id, "first session")
        listed = await step(conn.list_sessions(cwd=str(project)))
        assert [s.session_id for s in listed.sessions] == [session_id]
        assert listed.sessions[0].cwd == str(project.resolve())
        with pytest.raises(RequestError) as unknown:
            await step(conn.load_session(cwd=str(project), session_id="ses_missing", mcp_servers=[]))
        assert unknown.value.code == -32602 and "ses_missing" in json.dumps(unknown.value.data)
        from etcode.session.store import SessionStore

        store = SessionStore.open()  # two ids sharing a prefix ('p' is no hex digit: no real id has it)
        for sid in ("ses_0acp1", "ses_0acp2"):
            store.create_session(sid, project_id="p", directory=str(project))
        store.close()
        with pytest.raises(RequestError) as ambiguous:
            await step(conn.load_session(cwd=str(project), session_id="ses_0acp", mcp_servers=[]))
        assert ambiguous.value.code == -32602
        assert "ses_0acp matches 2 sessions: ses_0acp1, ses_0acp2" in json.dumps(ambiguous.value.data)
        # A turn still running in this session: another etcode may not open it meanwhile.
        running = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("hang")]))
        while len(llm.requests) < 2:
            await asyncio.sleep(0.02)
        other = RecordingClient()
        async with acp_agent(other, project) as (conn2, _proc2):
            await step(
                conn2.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
            )
            with pytest.raises(RequestError) as busy:
                await step(conn2.load_session(cwd=str(project), session_id=session_id, mcp_servers=[]))
        assert "\n" not in str(busy.value) and session_id in str(busy.value)
        await conn.cancel(session_id=session_id)
        assert (await step(running, timeout=30)).stop_reason == "cancelled"


def test_client_going_away_mid_turn_ends_the_agent_and_keeps_finished_steps(
    llm: FakeLLM, project: Path
) -> None:
    write_config(project, llm)
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "a.txt"}, id="call_keep")]), Fault(hang=True))
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL_VERSION}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(project), "mcpServers": []},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "etcode", "acp"], cwd=project, env=agent_env(), bufsize=0,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        replies = [json.loads(_read_line(proc)) for _ in range(2)]
        session_id = next(r["result"]["sessionId"] for r in replies if r["id"] == 2)
        prompt = {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                  "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "read a.txt"}]}}  # fmt: skip
        proc.stdin.write(json.dumps(prompt).encode() + b"\n")
        proc.stdin.flush()
        while not ('"call_keep"' in (line := _read_line(proc)) and '"completed"' in line):
            pass  # the tool ran and its step is finished
        deadline = time.monotonic() + 60
        while len(llm.requests) < 2 and time.monotonic() < deadline:  # the next model call hangs
            time.sleep(0.02)
        proc.stdin.close()  # the editor closed
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    shown = etcode("sessions", "export", session_id, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "call_keep" in shown.stdout and "alpha" in shown.stdout


def _read_line(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> str:
    """One line of the agent's stdout (unbuffered, so ``select`` sees what is left), or a
    failure when none comes in ``timeout`` seconds."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the agent wrote nothing"
    line = proc.stdout.readline()
    assert line, "the agent closed stdout"
    return line.decode()


async def test_files_and_commands_go_through_the_editor_when_it_offers_them(
    llm: FakeLLM, project: Path
) -> None:
    write_config(project, llm)
    target = project / "app.py"
    target.write_text("x = 1\n", encoding="utf-8")
    unsaved = "x = 1\ny = 'only in the editor'\n"
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "app.py"}, id="call_r")]),
        Reply(calls=[Call("Edit", {"file_path": "app.py", "old_string": "only in the editor", "new_string": "edited"}, id="call_e")]),
        Reply(calls=[Call("Bash", {"command": "echo from-terminal; exit 4", "description": "say"}, id="call_t")]),
        Reply(text="done"),
    )  # fmt: skip
    client = RecordingClient(answers=["allow_once"], buffers={str(target.resolve()): unsaved})
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project, fs=True, terminal=True)
        assert (await _prompt(conn, session_id, "work")).stop_reason == "end_turn"
    history = json.dumps(llm.requests[1].body["messages"])
    assert "only in the editor" in history  # the model saw the unsaved buffer
    assert ("read", str(target.resolve())) in client.fs_calls
    assert ("write", str(target.resolve())) in client.fs_calls
    assert client.buffers[str(target.resolve())] == "x = 1\ny = 'edited'\n"
    [argv] = client.terminal_commands
    assert argv[-1] == "echo from-terminal; exit 4"
    done = client.tool_updates("call_t")[-1]
    assert done.status == "completed"
    [shown] = done.content
    assert shown.type == "terminal" and shown.terminal_id == "term-1"
    after_bash = json.dumps(llm.requests[3].body["messages"])
    assert "from-terminal" in after_bash and "Exit code: 4" in after_bash


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
async def test_a_session_from_the_editor_opens_in_the_chat_with_etcode_c(llm: FakeLLM, project: Path) -> None:
    from tests.test_tui_cli import Tmux, _quote, tmux_env

    write_config(project, llm)
    llm.script(Reply(text="Answer given in the editor."))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        await _prompt(conn, session_id, "question asked in the editor")
    tmux = Tmux("acp-continue")
    try:
        tmux.start(f"env {tmux_env()} TERM=xterm-256color {_quote(sys.executable)} -m etcode -c", project)
        screen = await asyncio.to_thread(tmux.wait_for, "Answer given in the editor.", 60)
        assert "question asked in the editor" in screen
    finally:
        tmux.kill()


async def test_custom_commands_are_offered_and_run(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    commands = project / ".claude" / "commands"
    (commands / "git").mkdir(parents=True)
    (commands / "git" / "commit.md").write_text(
        "---\ndescription: Commit the work\nargument-hint: MESSAGE\nagent: plan\n---\nCommit as $1. Rules: @rules.txt\n",
        encoding="utf-8",
    )
    (commands / "broken.md").write_text("---\nmodel: {x: 1}\n---\nbody\n", encoding="utf-8")
    (project / "rules.txt").write_text("sign off\n", encoding="utf-8")
    llm.script(Reply(text="committed"), Reply(text="a message"), Reply(text="with a file"))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        await step(_until(lambda: client.of_kind("available_commands_update")))
        [offered] = client.of_kind("available_commands_update")
        by_name = {command.name: command for command in offered.available_commands}
        assert sorted(by_name) == ["git:commit", "init"]
        assert by_name["git:commit"].description == "Commit the work"
        assert by_name["git:commit"].input.root.hint == "MESSAGE"
        assert "broken.md" in client.message_text("agent_thought_chunk")
        response = await _prompt(conn, session_id, '/git:commit "fix it"')
        assert response.stop_reason == "end_turn"
        assert "/git:commit runs with agent plan" in client.message_text("agent_thought_chunk")
        await _prompt(conn, session_id, "/nonexistent stays a message")
        # a file the editor attached follows the command's prompt (it is no argument: $1 is "x")
        attached = resource_block(embedded_text_resource(f"file://{project}/notes.md", "NOTES\n"))
        response = await step(
            conn.prompt(session_id=session_id, prompt=[text_block("/git:commit x"), attached])
        )
        assert response.stop_reason == "end_turn"
        loaded = RecordingClient()
    sent = [json.dumps(r.body["messages"][-1]) for r in llm.requests]
    assert "Commit as fix it. Rules: @rules.txt" in sent[0] and "sign off" in sent[0]
    assert "/nonexistent stays a message" in sent[1]
    assert "Commit as x. Rules: @rules.txt" in sent[2] and "NOTES" in sent[2]
    tools = [{tool["function"]["name"] for tool in r.body["tools"]} for r in llm.requests]
    assert "WriteFile" not in tools[0] and "WriteFile" in tools[1]  # the command's agent, then the session's
    async with acp_agent(loaded, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        await step(conn.load_session(cwd=str(project), session_id=session_id, mcp_servers=[]))
        assert len(loaded.of_kind("available_commands_update")) == 1  # before load's answer


async def test_the_editors_mode_beats_a_commands_agent(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    commands = project / ".etcode" / "commands"
    commands.mkdir(parents=True)
    (commands / "look.md").write_text("---\nagent: plan\n---\nLook around.", encoding="utf-8")
    llm.script(Reply(text="a"), Reply(text="b"))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session_id = await _start(conn, project)
        await _prompt(conn, session_id, "/look")  # no mode chosen: the command's plan
        await step(conn.set_session_mode(session_id=session_id, mode_id="build"))
        await _prompt(conn, session_id, "/look")  # the editor chose build: it stays
    tools = [{tool["function"]["name"] for tool in r.body["tools"]} for r in llm.requests]
    assert "WriteFile" not in tools[0] and "WriteFile" in tools[1]


async def _until(predicate) -> None:
    while not predicate():
        await asyncio.sleep(0.02)


async def test_init_writes_agents_md_with_a_command_agent(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, permission={"WriteFile": "allow"})
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "AGENTS.md", "content": "# Rules\n"})]),
        Reply(text="Wrote AGENTS.md."),
    )
    client = RecordingClient()
    async with acp_agent(client, project, "--trust") as (conn, _proc):
        session_id = await _start(conn, project)
        response = await _prompt(conn, session_id, "/init keep it short")
    assert response.stop_reason == "end_turn"
    assert (project / "AGENTS.md").read_text(encoding="utf-8") == "# Rules\n"
    sent = json.dumps(llm.requests[0].body["messages"][-1])
    assert "AGENTS.md" in sent and "keep it short" in sent
