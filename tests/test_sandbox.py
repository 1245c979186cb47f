"""The OS sandbox for Bash (issue 12, point 9), with the real bubblewrap: what a command
may write and reach in each mode, that a timeout still kills everything, the re-run
outside the sandbox as an ask, and the CLI: `--sandbox`, the plan agent, no bwrap."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from etcode.permission import (
    AllowAsker,
    Decision,
    DenyAsker,
)
from etcode.security.sandbox import SandboxPolicy, unavailable_reason
from etcode.tools import bash as bash_module
from etcode.tools.base import ToolContext
from etcode.tools.bash import BashTool
from tests import process_support
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.permission_support import Answer, ruled_context
from tests.require import needs

pytestmark = needs(
    "bwrap", unavailable_reason() is not None, f"no sandbox on this machine: {unavailable_reason()}"
)


@pytest.fixture(autouse=True)
def _fast_kill(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bash_module, "KILL_GRACE_SECONDS", 0.5)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "etcode.json").write_text("{}\n")
    (root / "src").mkdir()
    return root.resolve()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the worktree and outside the temp dir (which stays writable)."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="etcode-sandbox-test-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def ctx_for(root: Path, policy: SandboxPolicy, asker: Any = None, permission: Any = None) -> ToolContext:
    return ruled_context(root, permission, asker, sandbox=policy)


async def bash(ctx: ToolContext, command: str, **args: Any) -> Any:
    tool = BashTool()
    return await tool.run(tool.parse({"command": command, **args}), ctx)


WRITE = SandboxPolicy("workspace-write")
READ = SandboxPolicy("read-only")


async def test_workspace_write_confines_writes(project: Path, outside: Path) -> None:
    ctx = ctx_for(project, WRITE)
    result = await bash(ctx, "echo hi > src/a.txt && cat src/a.txt")
    assert result.output == "hi" and result.data["sandbox"] == "workspace-write"
    result = await bash(ctx, f"touch {outside}/x")
    assert not (outside / "x").exists()
    assert "Read-only file system" in result.output
    assert "etcode's sandbox (workspace-write)" in result.output  # the model is told why
    assert "not allowed" in result.output and "non-interactive" in result.output
    for protected in (".git/HEAD", "etcode.json"):
        result = await bash(ctx, f"echo pwned > {protected}")
        assert result.data["exitCode"] != 0, protected
    assert (project / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (project / "etcode.json").read_text() == "{}\n"
    result = await bash(ctx, 'mktemp | { read -r f && echo ok > "$f" && cat "$f" && rm "$f"; }')
    assert result.output == "ok"  # the temp dir stays writable


async def test_read_only_mode(project: Path) -> None:
    ctx = ctx_for(project, READ)
    result = await bash(ctx, "touch src/new.txt")
    assert not (project / "src" / "new.txt").exists() and "Read-only file system" in result.output
    result = await bash(ctx, "echo scratch > /tmp/etcode-private-$$ && cat /tmp/etcode-private-$$ && ls src")
    assert result.output.startswith("scratch")  # a private /tmp, gone with the command


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


async def test_no_network_unless_allowed(project: Path, listener: int) -> None:
    command = f"(echo hi > /dev/tcp/127.0.0.1/{listener}) && echo connected"
    closed = await bash(ctx_for(project, WRITE), command)
    assert "connected" not in closed.output
    opened = await bash(ctx_for(project, SandboxPolicy("workspace-write", network=True)), command)
    assert opened.output == "connected"


def survivors(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if marker.encode() in handle.read():
                        with open(f"/proc/{entry}/stat") as stat:
                            if stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                                found.append(int(entry))
            except OSError:
                continue
    return found


async def wait_gone(marker: str, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not survivors(marker):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_timeout_and_interrupt_kill_everything_in_the_sandbox(project: Path) -> None:
    started = time.monotonic()
    result = await bash(ctx_for(project, WRITE), "sleep 31.4159 & sleep 31.4159; wait", timeout=500)
    assert result.data["timedOut"] and time.monotonic() - started < 10
    assert await wait_gone("31.4159"), "a sandboxed child survived the timeout"
    ctx = ctx_for(project, READ)

    async def interrupt() -> None:
        while not survivors("27.1828"):
            await asyncio.sleep(0.02)
        ctx.abort.set()

    _, result = await asyncio.gather(interrupt(), bash(ctx, "(trap '' TERM; sleep 27.1828) & wait"))
    assert result.data["interrupted"]
    assert await wait_gone("27.1828"), "a sandboxed child survived the interrupt"


@pytest.mark.parametrize("policy", [WRITE, READ], ids=["workspace-write", "read-only"])
async def test_a_cancel_while_a_sandboxed_command_starts_leaves_nothing(
    project: Path, monkeypatch: pytest.MonkeyPatch, policy: SandboxPolicy
) -> None:
    """The start of ``bwrap`` is held in asyncio's pipe connection until the sandboxed shell
    has started its children, then cancelled: nothing of the sandbox is left. (bwrap's
    --die-with-parent already covered this; now the group kill does too.)"""
    entered, release = process_support.hold_pipe_connect(monkeypatch)
    mark = process_support.token()
    task = asyncio.create_task(bash(ctx_for(project, policy), f"sleep {mark} & sleep {mark}"))
    await asyncio.wait_for(entered.wait(), 60)
    while len(process_support.live_with(f"sleep\0{mark}")) < 2:  # both sandboxed sleeps run
        await asyncio.sleep(0.01)
    task.cancel()
    release.set()
    await asyncio.wait({task}, timeout=30)
    assert await process_support.survivors(mark) == []
    assert task.cancelled()


async def test_rerun_outside_the_sandbox_is_an_ask(project: Path, outside: Path) -> None:
    allow = Answer(Decision.allow_once())
    result = await bash(ctx_for(project, WRITE, allow), f"touch {outside}/made && echo made")
    assert (outside / "made").exists()
    assert result.output.startswith("made") and result.data["sandbox"] == "outside"
    assert "allowed running it again outside the sandbox" in result.output
    assert (
        allow.requests[0].permission == "sandbox"
        and "workspace-write" in allow.requests[0].metadata["reason"]
    )
    refuse = Answer(Decision.reject("no"))
    result = await bash(ctx_for(project, WRITE, refuse), f"touch {outside}/refused")
    assert not (outside / "refused").exists() and refuse.requests
    for asker in (AllowAsker(), DenyAsker()):  # --yes keeps the sandbox; headless cannot ask
        result = await bash(ctx_for(project, WRITE, asker), f"touch {outside}/headless")
        assert not (outside / "headless").exists()
        assert "not allowed" in result.output


async def test_a_command_that_just_fails_is_not_asked_about(project: Path) -> None:
    asker = Answer(Decision.allow_once())
    result = await bash(ctx_for(project, WRITE, asker), "echo nope; exit 3")
    assert result.data["exitCode"] == 3 and asker.requests == []


# ---- the CLI ---------------------------------------------------------------------------------


def sent(llm: FakeLLM) -> str:
    return json.dumps([request.body["messages"] for request in llm.requests])


def test_plan_agent_runs_commands_read_only(project: Path, llm: FakeLLM) -> None:
    # Even a plan agent whose rules allow every command cannot change a file.
    write_config(project, llm, agent={"plan": {"permission": {"bash": {"*": "allow"}}}})
    llm.script(Reply(calls=[Call("Bash", {"command": "touch src/a.txt"})]), Reply(text="done"))
    proc = etcode("run", "--agent", "plan", "--yes", "change it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not (project / "src" / "a.txt").exists()
    assert "etcode's sandbox (read-only)" in sent(llm) and "--yes does not lift the sandbox" in sent(llm)


def test_sandbox_flag(project: Path, llm: FakeLLM, outside: Path) -> None:
    write_config(project, llm)
    llm.script(
        Reply(
            calls=[Call("Bash", {"command": f"touch {outside}/flag"}), Call("Bash", {"command": "touch ok"})]
        ),
        Reply(text="done"),
    )
    proc = etcode("run", "--sandbox", "workspace-write", "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not (outside / "flag").exists() and (project / "ok").exists()
    bad = etcode("run", "--sandbox", "sometimes", "go", cwd=project)
    assert bad.returncode == 2 and "--sandbox must be one of off, workspace-write, read-only" in bad.stderr


def test_flag_off_wins_over_the_plan_agent(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, agent={"plan": {"permission": {"bash": {"*": "allow"}}}})
    llm.script(Reply(calls=[Call("Bash", {"command": "touch made.txt"})]), Reply(text="done"))
    proc = etcode("run", "--trust", "--agent", "plan", "--sandbox", "off", "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "made.txt").exists()


@pytest.fixture
def no_bwrap(tmp_path: Path) -> dict[str, str]:
    """A PATH with bash but without bubblewrap."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("bash", "sh", "touch", "cat", "echo"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    return {"PATH": str(folder)}


def test_missing_bubblewrap(project: Path, llm: FakeLLM, no_bwrap: dict[str, str]) -> None:
    write_config(project, llm, sandbox="workspace-write")
    proc = etcode("run", "go", cwd=project, env=no_bwrap)
    assert proc.returncode == 1 and llm.requests == []
    assert proc.stderr.strip().splitlines() == [
        'error: sandbox: bubblewrap (bwrap) is not installed; install the Debian package bubblewrap or set "sandbox": "off"'
    ]
    # The plan agent's own default only warns, then runs (plain lines only: test_hidden_code_e2e.py).
    write_config(project, llm)
    llm.script(Reply(text="planned"))
    proc = etcode("run", "--agent", "plan", "plan it", cwd=project, env=no_bwrap)
    assert proc.returncode == 0, proc.stderr
    assert "without its read-only sandbox" in proc.stderr and proc.stdout.strip() == "planned"


async def test_the_chat_offers_to_run_a_refused_command_outside_the_sandbox(
    tmp_path: Path, llm: FakeLLM, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from etcode.ui.tui.widgets.permission import PermissionScreen, request_title
    from tests.tui_support import SIZE, make_app, permission_dialog, ready, submit, wait_for
    from tests.tui_support import write_config as tui_config

    monkeypatch.setattr(PermissionScreen, "ARM_DELAY", 0.05, raising=False)
    folder = tmp_path / "chat"
    folder.mkdir()
    tui_config(folder, llm, sandbox="workspace-write")
    command = f"touch {outside}/from-chat"
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="Done."))
    app = make_app(folder)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "make the file")
        screen = await permission_dialog(pilot, app)
        assert request_title(screen.request) == "Bash wants to run a command again outside the sandbox"
        assert not (outside / "from-chat").exists()  # refused inside; asked before the second run
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy, what="the turn to end")
    assert (outside / "from-chat").exists()
    assert "allowed running it again outside the sandbox" in sent(llm)


def test_a_project_cannot_take_plan_out_of_its_sandbox(project: Path, llm: FakeLLM) -> None:
    """Neither the project's etcode.json (a trust finding) nor its agent file."""
    from etcode.config.loader import load_config
    from etcode.trust.project import config_findings

    write_config(project, llm, agent={"plan": {"sandbox": "off", "permission": {"bash": {"*": "allow"}}}})
    findings = [str(f) for f in config_findings(load_config(project, project))]
    assert any("takes the plan agent out of its read-only sandbox" in f for f in findings), findings
    write_config(project, llm, agent={"plan": {"permission": {"bash": {"*": "allow"}}}})
    agent_file = project / ".etcode" / "agent" / "plan.md"
    agent_file.parent.mkdir(parents=True)
    agent_file.write_text('---\nsandbox: "off"\n---\n', encoding="utf-8")
    llm.script(Reply(calls=[Call("Bash", {"command": "touch src/b.txt"})]), Reply(text="done"))
    # --trust: the project's allow over plan's own "ask" is a trust finding (issue 27.4)
    proc = etcode("run", "--trust", "--agent", "plan", "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not (project / "src" / "b.txt").exists()
    assert "cannot take the plan agent out of its read-only sandbox" in proc.stderr


def test_paths_that_do_not_exist_are_not_bound(project: Path, tmp_path: Path) -> None:
    """A read-only project folder or a listed unix socket that is not there gets no bind
    (bwrap would fail on it), the ones that are there do."""
    from etcode.security.sandbox import prepare

    gone = tmp_path / "gone"
    socket_path, missing_socket = tmp_path / "here.sock", tmp_path / "missing.sock"
    socket_path.write_text("")
    launches = [
        prepare(READ, "true", "/bin/sh", gone, project),
        prepare(SandboxPolicy("workspace-write", unix_sockets=(socket_path, missing_socket)), "true", "/bin/sh", project, project),
    ]  # fmt: skip
    try:
        read_only, with_sockets = (launch.argv for launch in launches)
        assert ["--ro-bind", str(project), str(project)] == read_only[read_only.index(str(project)) - 1 :][:3]
        assert str(gone) not in read_only[: read_only.index("--chdir")]
        assert ["--bind", str(socket_path), str(socket_path)] == with_sockets[
            with_sockets.index(str(socket_path)) - 1 :
        ][:3]
        assert str(missing_socket) not in with_sockets
    finally:
        for launch in launches:
            launch.close()
