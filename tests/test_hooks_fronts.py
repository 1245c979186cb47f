"""Hooks in the other front ends (the chat with Pilot, ``etcode acp``), in Task subagents, and
the parts under them: the runner (its time limit kills the whole group, its output is
capped) and the permission service's answer in advance (never past a deny or the sandbox)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, text_block

from etcode.contract.tools import PermissionDenied
from etcode.extensions.hook_runner import OUTPUT_CAP, hook_label, run_hook
from etcode.extensions.hook_set import HookCommand
from etcode.permission.rules import rules_from_config
from etcode.permission.service import Decision, PermissionRequest, PermissionService
from tests.acp_support import RecordingClient, acp_agent, capabilities, step
from tests.cli_helpers import etcode
from tests.fake_llm import Call, FakeLLM, Reply
from tests.project_support import write_config
from tests.test_hooks_cli import NO_RM, json_events, on, script, tool_results, user_hooks
from tests.tui_support import SIZE, make_app, permission_dialog, ready, run_turn, submit, wait_for


# ---- the chat ------------------------------------------------------------------------------
async def test_chat_shows_hooks_and_notification_runs_while_a_question_waits(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(project, llm, permission={"bash": "ask"})
    (project / "build").mkdir()
    told = tmp_path / "told.json"
    user_hooks(
        project,
        {
            "PreToolUse": on("Bash", "true"),
            "Notification": on("", f"cat > {told}"),
        },
    )
    llm.script(Reply(calls=[Call("Bash", {"command": "rm -rf build"})]), Reply(text="Stopped."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        await permission_dialog(pilot, app, armed=False)
        await wait_for(pilot, lambda: told.exists() and told.read_text(), timeout=20, what="Notification")
        notices = [str(w.render()) for w in app.query(".notice")]
        assert any("● PreToolUse hook (true)" in text and "└ done" in text for text in notices), notices
        app.host.agent.interrupt()
        await wait_for(pilot, lambda: not app.busy, what="the interrupt")
    event = json.loads(told.read_text())
    assert event["hook_event_name"] == "Notification" and "Bash" in event["message"]
    assert (project / "build").is_dir()


async def test_chat_clear_ends_and_starts_the_session_and_a_model_switch_does_neither(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    """Claude Code's order: ``/clear`` is SessionEnd (clear) then SessionStart (clear); a
    switch of model goes on in the same session (no SessionEnd, no SessionStart resume)."""
    order = tmp_path / "order.log"
    line = "import json,sys; e=json.load(sys.stdin); print(e['hook_event_name'], e.get('source') or e.get('reason'))"
    logger = f'{sys.executable} -c "{line}" >> {order}'
    write_config(project, llm)
    user_hooks(project, {"SessionStart": on("", logger), "SessionEnd": on("", logger)})
    llm.script(*(Reply(text=f"answer {n}") for n in range(4)))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "first")
        await submit(pilot, app, "/model fake/test-model")
        await run_turn(pilot, app, "second")
        await submit(pilot, app, "/clear")
        await run_turn(pilot, app, "third")
        await app.action_quit()
    assert order.read_text().splitlines() == [
        "SessionStart startup",
        "SessionEnd clear",
        "SessionStart clear",
        "SessionEnd other",
    ]


# ---- etcode acp ------------------------------------------------------------------------------
async def test_acp_shows_a_blocking_hook_as_a_call_and_the_model_sees_why(
    llm: FakeLLM, project: Path
) -> None:
    write_config(project, llm)
    (project / "keep.txt").write_text("x\n", encoding="utf-8")
    user_hooks(project, {"PreToolUse": on("Bash", script(project, "no_rm.py", NO_RM))})
    llm.script(Reply(calls=[Call("Bash", {"command": "rm keep.txt"}, id="call_rm")]), Reply(text="Kept it."))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        session = await step(conn.new_session(cwd=str(project), mcp_servers=[]))
        response = await step(conn.prompt(session_id=session.session_id, prompt=[text_block("clean")]))
    assert response.stop_reason == "end_turn"
    assert (project / "keep.txt").exists()
    hooks = [u for u in client.of_kind("tool_call") if u.title.startswith("PreToolUse hook")]
    [hook] = hooks
    assert hook.title == "PreToolUse hook (no_rm.py)" and hook.kind == "other" and hook.status == "failed"
    assert "move files to trash/" in hook.content[0].content.text
    assert client.tool_updates("call_rm")[-1].status == "failed"
    assert "move files to trash/" in tool_results(llm, 1)[0]


async def test_acp_a_blocked_prompt_is_a_refusal_the_editor_sees_why(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    user_hooks(project, {"UserPromptSubmit": on("", "echo 'no secrets in prompts' >&2; exit 2")})
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        session = await step(conn.new_session(cwd=str(project), mcp_servers=[]))
        response = await step(conn.prompt(session_id=session.session_id, prompt=[text_block("pw: x")]))
    assert response.stop_reason == "refusal"
    assert llm.requests == []
    [hook] = client.of_kind("tool_call")
    assert (
        hook.title == "UserPromptSubmit hook (echo)"
        and "no secrets in prompts" in hook.content[0].content.text
    )


# ---- Task subagents ------------------------------------------------------------------------
def test_a_subagents_tool_calls_run_the_hooks_too(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "keep.txt").write_text("x\n", encoding="utf-8")
    user_hooks(project, {"PreToolUse": on("Bash", script(project, "no_rm.py", NO_RM))})
    task = {"description": "clean", "prompt": "remove keep.txt", "subagent_type": "general"}
    llm.script(
        Reply(calls=[Call("Task", task)]),
        Reply(calls=[Call("Bash", {"command": "rm keep.txt"})]),  # the child's
        Reply(text="could not remove it"),  # the child's answer
        Reply(text="The hook refused."),
    )
    proc = etcode("run", "--yes", "--sandbox", "off", "--format", "json", "clean", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "keep.txt").exists()
    assert "move files to trash/" in tool_results(llm, 2)[0]  # the child's model saw why
    assert "subagent" in [e["type"] for e in json_events(proc)]


# ---- the Python API: SessionStart's sources, PreCompact, SessionEnd --------------------------
async def test_session_start_sources_pre_compact_and_session_end(
    project: Path, llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from etcode import Agent
    from tests.test_hooks_cli import RECORDER

    write_config(project, llm)
    log = tmp_path / "log"
    log.mkdir()
    monkeypatch.setenv("HOOK_LOG", str(log))
    recorder = script(project, "record.py", RECORDER)
    events = ("SessionStart", "PreCompact", "SessionEnd", "UserPromptSubmit")
    user_hooks(project, {event: on("", recorder) for event in events})
    llm.script(*(lambda recorded: Reply(text="ok") for _ in range(8)))
    agent = Agent(directory=project, store=True)
    await agent.arun("first")
    agent.clear()
    await agent.arun("second")
    await agent.compact()
    await agent.arun("third")
    await agent.aclose()
    again = Agent(directory=project, store=True, continue_last=True)
    await again.arun("fourth")
    await again.aclose()

    def read(event: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (log / f"{event}.jsonl").read_text().splitlines()]

    assert [e["source"] for e in read("SessionStart")] == ["startup", "clear", "compact", "resume"]
    assert [e["trigger"] for e in read("PreCompact")] == ["manual"]
    assert [e["reason"] for e in read("SessionEnd")] == ["clear", "other", "other"]
    assert [e["prompt"] for e in read("UserPromptSubmit")] == ["first", "second", "third", "fourth"]


# ---- the runner ------------------------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


async def test_runner_kills_the_group_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    command = HookCommand(f"sleep 300 & echo $! > {pid_file}; sleep 300", timeout=2)
    outcome = await asyncio.wait_for(run_hook(command, {}, cwd=tmp_path, env=dict(os.environ)), 30)
    assert outcome.timed_out and outcome.exit_code is None
    assert not _alive(int(pid_file.read_text()))


async def test_runner_kills_what_a_finished_hook_left_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # The child keeps the hook's stdout and stderr open: the hook's own exit still decides.
    command = HookCommand(f"sleep 300 & echo $! > {pid_file}; echo said >&2; exit 2", timeout=60)
    outcome = await asyncio.wait_for(run_hook(command, {}, cwd=tmp_path, env=dict(os.environ)), 50)
    assert (outcome.exit_code, outcome.timed_out, outcome.stderr) == (2, False, "said\n")
    assert not _alive(int(pid_file.read_text()))


async def test_runner_a_command_with_a_nul_byte_is_a_failed_hook(tmp_path: Path) -> None:
    outcome = await run_hook(HookCommand("echo a\0b"), {}, cwd=tmp_path, env=dict(os.environ))
    assert outcome.exit_code is None and "could not start" in outcome.error


async def test_runner_caps_output_and_reads_stdin_json(tmp_path: Path) -> None:
    big = f"{sys.executable} -c \"import sys, json; e = json.load(sys.stdin); print(e['x'] * 200000)\""
    outcome = await run_hook(HookCommand(big, timeout=30), {"x": "ab"}, cwd=tmp_path, env=dict(os.environ))
    assert outcome.exit_code == 0 and len(outcome.stdout) == OUTPUT_CAP
    answer = await run_hook(
        HookCommand('echo \'{"decision": "block"}\''), {}, cwd=tmp_path, env=dict(os.environ)
    )
    assert answer.data == {"decision": "block"}


async def test_runner_a_hook_that_ignores_stdin_is_fine(tmp_path: Path) -> None:
    payload: dict[str, Any] = {"big": "x" * 1_000_000}  # more than a pipe holds
    outcome = await run_hook(HookCommand("exit 0", timeout=30), payload, cwd=tmp_path, env=dict(os.environ))
    assert outcome.exit_code == 0 and not outcome.timed_out


@pytest.mark.parametrize(
    ("command", "label"),
    [
        ('ruff format "$CLAUDE_PROJECT_DIR/x.py"', "ruff format"),
        ("python3 .claude/hooks/check_bash.py --strict", "check_bash.py"),
        ("$CLAUDE_PROJECT_DIR/hooks/validate.sh", "validate.sh"),
        ("FOO=1 npx prettier --write", "npx prettier"),
        ("true", "true"),
        ('cd "$CLAUDE_PROJECT_DIR" && ruff format .', "ruff format"),
        ("jq -r .tool_input.file_path | xargs ruff format", "ruff format"),
        ("jq -r .tool_input.file_path | xargs -n 1 npx prettier --write", "npx prettier"),
        ("jq -r .tool_input.command | grep -qw rm && { echo 'no rm' >&2; exit 2; } || exit 0", "grep rm"),
        ('cd "$D"; python3 .claude/hooks/fmt.py 2>/dev/null', "fmt.py"),
        ("ruff check 2>&1 | tee log", "ruff check"),
        ("cat > /dev/null; echo bye >&2; exit 1", "cat"),
    ],
)
def test_hook_labels(command: str, label: str) -> None:
    assert hook_label(command) == label


# ---- the permission service's answer in advance ----------------------------------------------
class CountingAsker:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def ask(self, request: PermissionRequest) -> Decision:
        self.asked.append(request.permission)
        return Decision.reject("no")


async def test_an_allow_in_advance_answers_ask_but_not_deny_nor_the_sandbox() -> None:
    asker = CountingAsker()
    rules = rules_from_config({"bash": {"*": "ask", "rm *": "deny"}, "sandbox": "ask"})
    service = PermissionService(rules, asker)
    await service.check("bash", ["ls"], {"pre_answer": "allow"})
    assert asker.asked == []
    with pytest.raises(PermissionDenied, match="denied by permission rule"):
        await service.check("bash", ["rm x"], {"pre_answer": "allow"})
    with pytest.raises(PermissionDenied):
        await service.check("sandbox", ["ls"], {"pre_answer": "allow"})
    assert asker.asked == ["sandbox"]
    with pytest.raises(PermissionDenied):  # ask: asked though nothing said ask
        await PermissionService(rules_from_config({"read": "allow"}), asker).check(
            "read", ["a.txt"], {"pre_answer": "ask"}
        )
    assert asker.asked == ["sandbox", "read"]


async def test_an_automatic_compaction_runs_pre_compact(
    project: Path, llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from etcode import Agent
    from etcode.contract import events as ev
    from tests.fake_llm import Fault
    from tests.test_hooks_cli import RECORDER

    write_config(project, llm)
    log = tmp_path / "log"
    log.mkdir()
    monkeypatch.setenv("HOOK_LOG", str(log))
    recorder = script(project, "record.py", RECORDER)
    user_hooks(project, {"PreCompact": on("auto", recorder), "SessionStart": on("", recorder)})
    too_long = (
        # A window over 16k: a smaller one is first met by re-planning the request (lean, tools fitted).
        "This model's maximum context length is 32768 tokens. However, your messages resulted in 40000 tokens."
    )
    llm.script(
        Reply(text="first answer"),
        Fault(status=400, body=too_long),
        Reply(text="## Goal\nsummary"),
        Reply(text="answer after compaction"),
        Reply(text="third"),
    )
    agent = Agent(directory=project, store=False)
    await agent.arun("first question")
    events = [event async for event in agent.stream("second question")]
    await agent.arun("third question")
    await agent.aclose()
    hooks = [e for e in events if isinstance(e, ev.HookRun)]
    assert [(h.event, h.outcome) for h in hooks] == [("PreCompact", "ok")]
    assert {e["trigger"] for e in _read(log, "PreCompact")} == {"auto"}
    assert [e["source"] for e in _read(log, "SessionStart")][:2] == ["startup", "compact"]


def _read(log: Path, event: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (log / f"{event}.jsonl").read_text().splitlines()]


async def test_undo_after_a_formatting_hook_restores_the_file(
    project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from etcode import Agent
    from tests.test_hooks_cli import FORMATTER

    write_config(project, llm)
    (project / "app.py").write_text("def f():\n\treturn 1\n", encoding="utf-8")
    user_hooks(project, {"PostToolUse": on("Edit", script(project, "fmt.py", FORMATTER))})
    edit = {"file_path": "app.py", "old_string": "return 1", "new_string": "return 2"}
    llm.script(Reply(calls=[Call("Edit", edit)]), Reply(text="Edited."))
    agent = Agent(directory=project, store=True, asker=None)
    await agent.arun("change it")
    assert (project / "app.py").read_text(encoding="utf-8") == "def f():\n    return 2\n"  # formatted
    assert await agent.undo() == [str(project / "app.py")]  # not refused as "changed since"
    await agent.aclose()
    assert (project / "app.py").read_text(encoding="utf-8") == "def f():\n\treturn 1\n"


async def test_the_step_level_view_tells_a_blocking_hook(project: Path, llm: FakeLLM) -> None:
    from etcode import Agent
    from etcode.ui.loop_renderer import default_render

    write_config(project, llm)
    user_hooks(project, {"PreToolUse": on("Bash", script(project, "no_rm.py", NO_RM))})
    llm.script(Reply(calls=[Call("Bash", {"command": "rm x"})]), Reply(text="ok"))
    agent = Agent(directory=project, store=False)
    lines = [default_render(event) async for event in agent.arun_stream("clean")]
    await agent.aclose()
    assert (
        "warning: PreToolUse hook (no_rm.py): blocked: rm is not allowed here: move files to trash/ instead"
        in lines
    )


async def test_an_interrupt_does_not_wait_for_a_slow_hook(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    from etcode import Agent

    write_config(project, llm)
    started = tmp_path / "started"
    pid_file = tmp_path / "pid"
    slow = f"sleep 300 & echo $! > {pid_file}; touch {started}; wait"
    user_hooks(project, {"PreToolUse": on("Bash", slow, timeout=250)})
    llm.script(Reply(calls=[Call("Bash", {"command": "echo never"})]), Reply(text="unused"))
    agent = Agent(directory=project, store=False)

    async def interrupt_when_started() -> None:
        while not started.exists():
            await asyncio.sleep(0.02)
        agent.interrupt()

    watcher = asyncio.ensure_future(interrupt_when_started())
    try:  # far under the hook's 250 s: the interrupt does not wait for it
        result = await asyncio.wait_for(agent.arun("go"), 60)
    finally:
        watcher.cancel()
        await agent.aclose()
    assert result.stop_reason == "interrupted"
    assert len(llm.requests) == 1
    assert not _alive(int(pid_file.read_text()))


async def _interrupted_while_hook_hangs(
    project: Path, llm: FakeLLM, tmp_path: Path, event: str, *, agent: str | None = None, first: str = ""
) -> tuple[str, list[Any]]:
    """Run ``task`` with an ``event`` hook that hangs; interrupt once it started. The run's
    stop reason and its events (far under the hook's 250 s: an interrupt never waits)."""
    from etcode import Agent

    started = tmp_path / f"{event}.started"
    user_hooks(project, {event: on("", f"touch {started}; sleep 300", timeout=250)})
    chosen = Agent(directory=project, store=False, **({"agent": agent} if agent else {}))

    async def interrupt_when_started() -> None:
        while not started.exists():
            await asyncio.sleep(0.02)
        chosen.interrupt()

    if first:  # a turn before (something to compact)
        await chosen.arun(first)
    watcher = asyncio.ensure_future(interrupt_when_started())
    try:
        events = await asyncio.wait_for(_collect(chosen, "go"), 60)
    finally:
        watcher.cancel()
        await chosen.aclose()
    assert chosen.last_result is not None
    return chosen.last_result.stop_reason, events


async def _collect(agent: Any, task: str) -> list[Any]:
    return [event async for event in agent.stream(task)]


async def test_an_interrupted_stop_hook_ends_the_run_as_interrupted(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(project, llm)
    llm.script(Reply(text="the answer"), Reply(text="unused"))
    reason, _ = await _interrupted_while_hook_hangs(project, llm, tmp_path, "Stop")
    assert reason == "interrupted"
    assert len(llm.requests) == 1


async def test_an_interrupted_pre_compact_hook_does_not_hold_the_run(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    from tests.fake_llm import Fault

    write_config(project, llm)
    too_long = (
        # A window over 16k: a smaller one is first met by re-planning the request (lean, tools fitted).
        "This model's maximum context length is 32768 tokens. However, your messages resulted in 40000 tokens."
    )
    llm.script(
        Reply(text="first answer"),
        Fault(status=400, body=too_long),
        Reply(text="## Goal\nsummary"),
        Reply(text="unused"),
    )
    reason, _ = await _interrupted_while_hook_hangs(project, llm, tmp_path, "PreCompact", first="hello")
    assert reason == "interrupted"
    assert len(llm.requests) == 2  # no summary was asked for after the interrupt


async def test_an_interrupted_prompt_hook_of_the_workflow_does_not_hold_the_run(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(project, llm)
    reason, _ = await _interrupted_while_hook_hangs(
        project, llm, tmp_path, "UserPromptSubmit", agent="workflow"
    )
    assert reason == "interrupted"
    assert llm.requests == []


async def test_session_end_is_capped_so_closing_never_hangs(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    from etcode import Agent
    from etcode.extensions.hook_interceptor import SESSION_END_SECONDS

    write_config(project, llm)
    pid_file = tmp_path / "pid"
    user_hooks(project, {"SessionEnd": on("", f"sleep 300 & echo $! > {pid_file}; wait", timeout=250)})
    llm.script(Reply(text="ok"))
    agent = Agent(directory=project, store=False)
    await agent.arun("hi")
    assert SESSION_END_SECONDS * 10 < 250
    await asyncio.wait_for(agent.aclose(), SESSION_END_SECONDS * 10)  # not the hook's 250 s
    assert not _alive(int(pid_file.read_text()))


async def test_a_cancelled_session_end_still_stops_the_mcp_servers(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    import signal

    from etcode import Agent

    server = Path(__file__).parent / "mcp_servers" / "files_server.py"
    marker = tmp_path / "ended"
    tag = f"TAG{os.getpid()}"
    write_config(project, llm)
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "etcode"
    folder.mkdir(parents=True, exist_ok=True)
    user = {
        "hooks": {"SessionEnd": on("", f"touch {marker}; sleep 100", timeout=100)},
        "mcp": {"files": {"type": "local", "command": [sys.executable, str(server), tag], "timeout": 30000}},
    }
    (folder / "etcode.json").write_text(json.dumps(user), encoding="utf-8")
    llm.script(Reply(text="ok"))

    def servers() -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            try:
                line = Path(f"/proc/{entry}/cmdline").read_bytes() if entry.isdigit() else b""
            except OSError:
                continue
            if tag.encode() in line and b"files_server" in line:
                found.append(int(entry))
        return found

    agent = Agent(directory=project, store=False)
    try:
        await agent.arun("hi")
        assert servers(), "the MCP server did not start"
        closing = asyncio.ensure_future(agent.aclose())
        while not marker.exists():  # SessionEnd runs: cancel the close there (a Ctrl+C)
            await asyncio.sleep(0.02)
        closing.cancel()
        await asyncio.gather(closing, return_exceptions=True)
        for _ in range(300):
            if not servers():
                break
            await asyncio.sleep(0.1)
        assert not servers(), "a cancelled SessionEnd skipped closing the runtime"
    finally:
        for pid in servers():
            os.kill(pid, signal.SIGKILL)
