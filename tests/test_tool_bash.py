"""Bash: output, exit codes, timeouts and aborts that kill the whole process group."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from etcode.tools import bash as bash_module
from etcode.tools.base import PermissionDenied, ToolContext
from etcode.tools.bash import BashTool
from tests.process_support import hold_pipe_connect, survivors, token, wait_for_file
from tests.tool_support import make_ctx


@pytest.fixture(autouse=True)
def _data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))
    monkeypatch.setattr(bash_module, "KILL_GRACE_SECONDS", 0.5)


async def bash(ctx: ToolContext, **args: Any):
    tool = BashTool()
    return await tool.run(tool.parse(args), ctx)


def alive(pid: int) -> bool:
    """True when ``pid`` runs (a zombie waiting for its reaper counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except FileNotFoundError:
        return False


async def wait_dead(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_output_interleaved_and_cwd(tmp_path: Path) -> None:
    result = await bash(make_ctx(tmp_path), command="echo a; echo b >&2; echo c; pwd")
    assert result.output.splitlines() == ["a", "b", "c", str(tmp_path)]
    assert result.data and result.data["exitCode"] == 0
    assert BashTool().result_summary({}, result) == "4 lines of output"


async def test_nonzero_exit_is_not_tool_error(tmp_path: Path) -> None:
    result = await bash(make_ctx(tmp_path), command="echo oops; exit 3")
    assert not result.is_error
    assert result.data and result.data["exitCode"] == 3
    assert result.output.endswith("Exit code: 3")
    assert BashTool().result_summary({}, result) == "exit 3"


async def test_no_output(tmp_path: Path) -> None:
    result = await bash(make_ctx(tmp_path), command="true")
    assert "no output" in result.output
    assert BashTool().result_summary({}, result) == "Done"


async def test_stdin_is_empty(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await bash(make_ctx(tmp_path), command="cat; echo done", timeout=5000)
    assert result.output == "done"
    assert time.monotonic() - started < 3


async def test_timeout_kills_process_group(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await bash(
        make_ctx(tmp_path), command="sleep 30 & echo $! > sleep.pid; echo started; wait", timeout=500
    )
    assert time.monotonic() - started < 5
    assert result.is_error and result.data and result.data["timedOut"]
    assert "started" in result.output and "timed out after 0.5 s" in result.output
    pid = int((tmp_path / "sleep.pid").read_text())
    assert await wait_dead(pid), "the child sleep survived the timeout"
    assert BashTool().result_summary({}, result) == "timed out, killed"


async def test_timeout_kills_term_ignoring_child(tmp_path: Path) -> None:
    command = "(trap '' TERM; sleep 30) & echo $! > sub.pid; wait"
    result = await bash(make_ctx(tmp_path), command=command, timeout=300)
    assert result.data and result.data["timedOut"]
    pid = int((tmp_path / "sub.pid").read_text())
    assert await wait_dead(pid)


async def test_abort_kills(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)

    async def press_ctrl_c() -> None:
        await asyncio.sleep(0.3)
        ctx.abort.set()

    started = time.monotonic()
    _, result = await asyncio.gather(press_ctrl_c(), bash(ctx, command="sleep 30 & echo $! > s.pid; wait"))
    assert time.monotonic() - started < 5
    assert result.is_error and result.data and result.data["interrupted"]
    assert await wait_dead(int((tmp_path / "s.pid").read_text()))
    assert BashTool().result_summary({}, result) == "interrupted"


async def test_cancel_kills(tmp_path: Path) -> None:
    mark = token()
    task = asyncio.create_task(bash(make_ctx(tmp_path), command=f"sleep {mark} & echo $! > c.pid; wait"))
    await wait_for_file(tmp_path / "c.pid")  # the child runs: now cancel the running command
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await survivors(mark) == []


async def _cancel_and_count(task: asyncio.Task[Any], mark: str) -> list[int]:
    """Cancel ``task``; the processes carrying ``mark`` left alive (then killed, so that a
    task waiting on their pipes, as asyncio's own clean-up does, can end)."""
    task.cancel()
    await asyncio.wait({task}, timeout=10)
    left = await survivors(mark)
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return left


async def test_a_cancel_at_any_turn_of_the_start_leaves_no_process(tmp_path: Path) -> None:
    """The tool task is cancelled after 0, 1, 2, ... event-loop turns: before the start,
    while asyncio connects the pipes, just after, while the command runs. Every time
    the shell, its background child and its foreground child are all gone."""
    left: dict[int, list[int]] = {}
    for turns in range(40):
        mark = token()
        argv = [bash_module._shell(), "-c", f"sleep {mark} & sleep {mark}"]
        task = asyncio.create_task(
            bash_module._execute_here(argv, dict(os.environ), 60_000, make_ctx(tmp_path))
        )
        for _ in range(turns):
            await asyncio.sleep(0)
        if found := await _cancel_and_count(task, mark):
            left[turns] = found
    assert left == {}, f"processes left after a cancel at these turns: {left}"


@pytest.mark.parametrize("point", ["before", "after"])
async def test_a_cancel_while_the_pipes_connect_kills_the_children_already_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """The start is held inside asyncio's pipe connection (``before`` or ``after`` the
    real connect) until the shell has started both children, then cancelled: asyncio
    alone would SIGKILL the shell only and leave both sleeps to PID 1."""
    entered, release = hold_pipe_connect(monkeypatch, after_connect=point == "after")
    mark = token()
    command = f"sleep {mark} & echo $! > bg.pid; sleep {mark}"
    task = asyncio.create_task(bash(make_ctx(tmp_path), command=command))
    await asyncio.wait_for(entered.wait(), 60)
    await wait_for_file(tmp_path / "bg.pid")
    task.cancel()
    release.set()
    assert await _cancel_and_count(task, mark) == []
    assert task.cancelled()


async def test_event_loop_not_blocked(tmp_path: Path) -> None:
    """While a command runs the event loop keeps turning: a ticker every 10 ms never waits
    a whole second (20x its worst normal delay on a loaded box), so a blocking sleep or a
    blocking ``subprocess.run`` anywhere in the tool fails this."""
    loop = asyncio.get_running_loop()
    gaps: list[float] = []
    running = True
    started = asyncio.Event()

    async def ticker() -> None:
        last = loop.time()
        started.set()
        while running:
            await asyncio.sleep(0.01)
            now = loop.time()
            gaps.append(now - last)
            last = now

    ticking = asyncio.ensure_future(ticker())
    await started.wait()  # ticking before the tool starts: its very first step counts too
    try:
        result = await bash(make_ctx(tmp_path), command="sleep 1.5; echo finished")
    finally:
        running = False
        await ticking
    assert result.output == "finished"
    assert len(gaps) >= 10 and max(gaps) < 1.0, max(gaps)


async def test_long_output_keeps_tail_and_saves_full(tmp_path: Path) -> None:
    result = await bash(make_ctx(tmp_path), command="seq 1 100000")
    lines = result.output.splitlines()
    assert lines[-1] == "100000"
    assert "output truncated" in lines[0]
    assert "\n1\n" not in result.output
    saved = Path(result.data["outputPath"])
    assert saved.read_text().splitlines()[:2] == ["1", "2"]


async def test_background_child_does_not_hang(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await bash(make_ctx(tmp_path), command="sleep 20 & echo $! > bg.pid; echo done")
    assert time.monotonic() - started < 4
    assert result.output.startswith("done")
    pid = int((tmp_path / "bg.pid").read_text())
    os.kill(pid, signal.SIGKILL)


async def test_ansi_stripped(tmp_path: Path) -> None:
    result = await bash(make_ctx(tmp_path), command=r"printf '\033[31mred\033[0m\n'")
    assert result.output == "red"


async def test_permission_checked_with_command(tmp_path: Path) -> None:
    seen: list[tuple[str, list[str]]] = []

    async def deny(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        seen.append((permission, patterns))
        raise PermissionDenied("denied: rm is not allowed")

    (tmp_path / "keep").write_text("x")
    with pytest.raises(PermissionDenied):
        await bash(make_ctx(tmp_path, check_permission=deny), command="rm keep")
    assert seen == [("bash", ["rm keep"])]
    assert (tmp_path / "keep").exists()


def test_params_summary() -> None:
    assert BashTool().params_summary({"command": "npm test"}) == "npm test"
    assert BashTool().parse({"command": "x", "timeout": 5}).timeout == 5
