"""Background Bash calls over ACP (issue 29): an ``execute`` tool call whose status follows
the process — ``in_progress`` while it runs, also after the prompt turn ended, then
``completed``/``failed`` with its exit code, sent when it ends — and EOF on ``etcode acp``'s
stdin (the editor closed) ends every background process group. Real ``etcode acp``
subprocesses, real processes, the scripted model."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from acp import PROTOCOL_VERSION, text_block

from tests.acp_support import RecordingClient, acp_agent, capabilities, step
from tests.fake_llm import Call, FakeLLM, Reply
from tests.process_support import group_alive, kill_all, live_with, survivors, token
from tests.project_support import ProjectSpec

PROJECT = ProjectSpec(settings={"permission": {"bash": "allow"}})


def background(command: str, call_id: str) -> Call:
    return Call(
        "Bash",
        {"command": command, "run_in_background": True, "description": "in the background"},
        id=call_id,
    )


async def _session(conn, project: Path) -> str:
    await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
    return (await step(conn.new_session(cwd=str(project), mcp_servers=[]))).session_id


async def _prompt(conn, session_id: str, text: str):
    return await step(conn.prompt(session_id=session_id, prompt=[text_block(text)]))


async def _update(client: RecordingClient, call_id: str, status: str, seconds: float = 30.0):
    """The first update of ``call_id`` with ``status`` (waits for it: sent outside any turn)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [u for u in client.tool_updates(call_id) if u.status == status]
        if found:
            return found[0]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {status} update of {call_id}: {client.tool_updates(call_id)}")


def _text(update) -> str:
    return "\n".join(getattr(item.content, "text", "") for item in update.content or [])


async def test_the_call_stays_in_progress_until_its_process_ends(llm: FakeLLM, project: Path) -> None:
    mark = token()
    waiting = "echo waiting-for-go; while [ ! -f go ]; do sleep 0.02; done; exit 3"
    llm.script(
        Reply(text="Starting.", calls=[background(waiting, "call_wait"), background(f"sleep {mark}", "call_sleep")]),
        Reply(text="Both started."),
        Reply(calls=[Call("KillBash", {"shell_id": "bash_2"}, id="call_kill")]),
        Reply(text="Killed it."),
    )  # fmt: skip
    client = RecordingClient()
    try:
        async with acp_agent(client, project) as (conn, _proc):
            session_id = await _session(conn, project)
            assert (await _prompt(conn, session_id, "start two")).stop_reason == "end_turn"
            starts = {u.tool_call_id: u for u in client.of_kind("tool_call")}
            assert starts["call_wait"].kind == "execute" and starts["call_sleep"].kind == "execute"
            for call_id in ("call_wait", "call_sleep"):  # after the turn: still running
                assert client.tool_updates(call_id)[-1].status == "in_progress"
            assert "waiting-for-go" in _text(client.tool_updates("call_wait")[-1])
            (project / "go").write_text("")  # outside any turn: the process exits with 3
            failed = await _update(client, "call_wait", "failed")
            assert failed.raw_output == {"background": "bash_1", "status": "exited", "exit_code": 3}
            assert "waiting-for-go" in _text(failed) and "bash_1 exited with code 3" in _text(failed)
            assert client.tool_updates("call_sleep")[-1].status == "in_progress"
            assert (await _prompt(conn, session_id, "kill the sleeper")).stop_reason == "end_turn"
            killed = await _update(client, "call_sleep", "completed")
            assert killed.raw_output["status"] == "killed" and "bash_2 was killed" in _text(killed)
            assert await survivors(mark, 10) == []
            finals = [u for u in client.tool_updates() if u.status in ("completed", "failed")]
            assert len([u for u in finals if u.tool_call_id in ("call_wait", "call_sleep")]) == 2  # once each
    finally:
        kill_all(live_with(mark))


async def test_eof_on_stdin_ends_every_background_group(llm: FakeLLM, project: Path) -> None:
    mark, pid_file = token(), project / "group.pid"
    command = f"echo $$ > {pid_file}; sleep {mark} & sleep {mark} & wait"
    llm.script(Reply(calls=[background(command, "call_group")]), Reply(text="Running."))
    client = RecordingClient()
    pgid = 0
    try:
        async with acp_agent(client, project) as (conn, proc):
            session_id = await _session(conn, project)
            assert (await _prompt(conn, session_id, "start it")).stop_reason == "end_turn"
            assert client.tool_updates("call_group")[-1].status == "in_progress"
            deadline = time.monotonic() + 30
            while not (pid_file.exists() and len(live_with(mark)) >= 3) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            pgid = int(pid_file.read_text().strip())
            assert group_alive(pgid)
            proc.stdin.close()  # the editor closed
            assert await asyncio.wait_for(proc.wait(), 60) == 0
        assert await survivors(mark, 10) == []
        assert not group_alive(pgid), "the background process group outlived etcode acp"
    finally:
        kill_all(live_with(mark))
        if pgid:
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)


def test_the_final_status_follows_how_the_process_ended() -> None:
    from etcode.acp.background import ended_update
    from etcode.tools.background import BackgroundInfo

    def final(status: str, code: int | None):
        info = BackgroundInfo("bash_1", "make serve", "", status, code, 1, 0.0)
        return ended_update("call_1", info, [])

    assert final("exited", 0).status == "completed"
    assert final("exited", 2).status == "failed" and "exited with code 2" in _text(final("exited", 2))
    assert final("killed", -15).status == "completed"  # ended on request (KillBash)
    assert final("killed", -15).raw_output == {"background": "bash_1", "status": "killed", "exit_code": -15}
