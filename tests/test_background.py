"""The session's background processes (``etcode/tools/background.py``) with real
processes: the bounded buffer and its skipped count, reads since the last read, the
filter, listeners, the limit, kill and close (every group ended), and the ``Agent`` that
owns them."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from etcode.contract.tools import ToolError
from etcode.tools.background import BackgroundInfo, BackgroundLimitError, BackgroundProcesses, of_state
from etcode.util.process_group import group_alive
from tests import process_support

ENV = dict(os.environ)


async def start(registry: BackgroundProcesses, command: str, tmp_path: Path) -> BackgroundInfo:
    return await registry.start(["bash", "-c", command], command=command, cwd=str(tmp_path), env=ENV)


async def ended(registry: BackgroundProcesses, process_id: str) -> BackgroundInfo:
    """Wait (bounded) for the registry to record the end of ``process_id``."""
    done = asyncio.Event()
    unsubscribe = registry.subscribe(lambda info: done.set() if info.id == process_id else None)
    try:
        info = registry.get(process_id)
        if info is not None and info.status == "running":
            await asyncio.wait_for(done.wait(), 30)
    finally:
        unsubscribe()
    found = registry.get(process_id)
    assert found is not None
    return found


async def test_the_buffer_keeps_the_tail_and_counts_what_it_skipped(tmp_path: Path) -> None:
    registry = BackgroundProcesses()
    registry.buffer_bytes = 1000
    script = "import sys; sys.stdout.write('a' * 5000 + '\\n'); sys.stdout.write('tail-marker\\n')"
    info = await start(registry, f'{sys.executable} -c "{script}"', tmp_path)
    await ended(registry, info.id)
    found = await registry.read_new(info.id)
    assert found.info.status == "exited" and found.info.exit_code == 0
    total = 5001 + len("tail-marker\n")
    assert found.skipped == total - 1000
    assert len(found.text) == 1000 and found.text.endswith("tail-marker\n")
    assert found.render().startswith(f"[… {total - 1000:,} bytes skipped …]\n".replace(",", "\u202f"))
    again = await registry.read_new(info.id)
    assert again.text == "" and again.skipped == 0  # only what is new
    await registry.close()


async def test_the_kept_tail_starts_at_a_whole_character(tmp_path: Path) -> None:
    """The buffer's cut falls inside a two-byte character: the tail starts after it (the
    character counted as skipped), never with U+FFFD."""
    registry = BackgroundProcesses()
    registry.buffer_bytes = 9  # of b"x" + 20 × "é" (41 bytes) the cut falls at byte 32, inside one
    info = await start(registry, "printf 'x%s' " + "é" * 20, tmp_path)
    await ended(registry, info.id)
    found = await registry.read_new(info.id)
    assert found.text == "é" * 4 and found.skipped == 33
    await registry.close()


async def test_reads_return_what_is_new_and_filter_lines(tmp_path: Path) -> None:
    registry = BackgroundProcesses()
    go = tmp_path / "go"
    info = await start(
        registry, f"echo one; echo two; while [ ! -f {go} ]; do sleep 0.02; done; echo three", tmp_path
    )
    first = await registry.first_output(info.id, 30)
    assert first.text.startswith("one\n") and first.info.status == "running"
    go.touch()
    await ended(registry, info.id)
    rest = await registry.read_new(info.id, filter="^th")
    assert rest.text == "three\n"
    assert "two" not in rest.text
    with pytest.raises(ToolError, match=r"filter '\[' is not a regular expression"):
        await registry.read_new(info.id, filter="[")
    with pytest.raises(ToolError, match="no background process 'bash_9'"):
        await registry.read_new("bash_9")
    await registry.close()


async def test_listeners_see_starts_exits_and_kills(tmp_path: Path) -> None:
    registry = BackgroundProcesses()
    seen: list[tuple[str, str, int | None]] = []
    registry.subscribe(lambda info: seen.append((info.id, info.status, info.exit_code)))
    quick = await start(registry, "exit 5", tmp_path)
    await ended(registry, quick.id)
    mark = process_support.token()
    slow = await start(registry, f"sleep {mark} & sleep {mark}", tmp_path)
    assert registry.running_count() == 1
    assert await registry.kill(slow.id) is True
    assert await registry.kill(slow.id) is False  # already ended
    assert seen[:2] == [("bash_1", "running", None), ("bash_1", "exited", 5)]
    assert seen[2][:2] == ("bash_2", "running") and seen[3][:2] == ("bash_2", "killed")
    assert [i.id for i in registry.list()] == ["bash_1", "bash_2"]
    assert registry.take_exit_notes() == [
        "[etcode] Background process bash_1 (exit 5) exited with code 5. Read the rest of its output with BashOutput."
    ]
    assert registry.take_exit_notes() == []  # once
    assert not group_alive(slow.pid or 0)
    assert not await process_support.survivors(mark)
    await registry.close()


async def test_a_read_that_reports_the_exit_drops_its_note(tmp_path: Path) -> None:
    registry = BackgroundProcesses()
    info = await start(registry, "echo bye; exit 4", tmp_path)
    await ended(registry, info.id)
    found = await registry.read_new(info.id)
    assert found.info.status == "exited" and found.info.exit_code == 4 and found.text == "bye\n"
    assert registry.take_exit_notes() == []  # the read told the model
    await registry.close()


async def test_the_limit_and_close(tmp_path: Path) -> None:
    registry = BackgroundProcesses(max_running=2)
    mark = process_support.token()
    first = await start(registry, f"sleep {mark} & sleep {mark}", tmp_path)
    second = await start(registry, f"sleep {mark}", tmp_path)
    with pytest.raises(BackgroundLimitError, match=r"shell\.maxBackground.*is 2"):
        await start(registry, "echo never", tmp_path)
    await registry.close()
    await registry.close()  # idempotent
    assert [i.status for i in registry.list()] == ["killed", "killed"]
    assert registry.take_exit_notes() == []  # the session ended them: nothing to tell
    assert not group_alive(first.pid or 0) and not group_alive(second.pid or 0)
    assert not process_support.live_with(mark)
    with pytest.raises(BackgroundLimitError, match="closing"):
        await start(registry, "echo late", tmp_path)


async def test_the_agent_owns_them_and_ends_them_with_the_session(tmp_path: Path) -> None:
    from etcode.api import Agent
    from etcode.testing import ScriptedModel, call, reply

    mark = process_support.token()
    model = ScriptedModel(
        reply(None, call("Bash", command=f"echo up; sleep {mark}", run_in_background=True)), reply("started")
    )
    agent = Agent(llm=model, store=False, directory=tmp_path, builtin_tools=True)
    result = await agent.arun("start it")
    assert result.text == "started"
    registry = agent.background
    assert of_state(agent.state) is registry
    [info] = registry.list()
    assert info.status == "running" and info.command == f"echo up; sleep {mark}"
    assert "Started bash_1 in the background" in str(model.requests[1].messages[-1]["content"])
    agent.reset()  # a new batch keeps the session's processes
    assert agent.background is registry
    await agent.aclose()
    assert registry.list()[0].status == "killed"
    assert not group_alive(info.pid or 0)
    assert not process_support.live_with(mark)


async def test_a_subagents_processes_are_the_sessions(tmp_path: Path) -> None:
    """A Task child's background process outlives the child (its parent may poll and kill
    it) and ends with the parent's session."""
    from etcode.api import Agent
    from etcode.testing import ScriptedModel, call, reply

    mark = process_support.token()
    model = ScriptedModel(
        reply(None, call("Task", description="serve", prompt="start it", subagent_type="general")),
        reply(None, call("Bash", command=f"sleep {mark}", run_in_background=True)),
        reply("child started it"),
        reply(None, call("BashOutput", bash_id="bash_1")),
        reply("parent polled it"),
    )
    agent = Agent(llm=model, store=False, directory=tmp_path)
    result = await agent.arun("go")
    assert result.text == "parent polled it"
    [info] = agent.background.list()
    assert info.status == "running"  # the child has ended; its process has not
    assert "bash_1 (sleep" in str(model.requests[4].messages[-1]["content"])
    await agent.aclose()
    assert agent.background.list()[0].status == "killed"
    assert not process_support.live_with(mark)


async def test_a_switch_of_model_or_agent_keeps_them(tmp_path: Path) -> None:
    """The chat's /model and /agent close the agent with ``end_session=False`` and go on with
    a new one (``carry_hooks``): the session's processes go on with it."""
    from etcode.api import Agent
    from etcode.testing import ScriptedModel

    mark = process_support.token()
    old = Agent(llm=ScriptedModel(), store=False, directory=tmp_path)
    info = await start(old.background, f"sleep {mark}", tmp_path)
    await old.aclose(end_session=False)
    assert old.background.get(info.id) == info  # still running
    new = Agent(llm=ScriptedModel(), store=False, directory=tmp_path)
    new.carry_hooks(old)
    assert new.background is old.background
    await new.aclose()
    assert new.background.list()[0].status == "killed"
    assert not process_support.live_with(mark)


@pytest.mark.parametrize("collected", [False, True])
def test_nothing_outlives_an_interpreter_that_never_closed_them(tmp_path: Path, collected: bool) -> None:
    """An ``Agent`` nobody closed: the interpreter's exit kills its processes' groups, also
    when the agent (and its registry) was garbage-collected before the exit."""
    import subprocess

    mark = process_support.token()
    script = f"""
import asyncio, gc, os
from etcode.api import Agent
from etcode.testing import ScriptedModel

async def main():
    agent = Agent(llm=ScriptedModel(), store=False, directory={str(tmp_path)!r})
    await agent.background.start(["bash", "-c", "sleep {mark} & sleep {mark}"], command="x", cwd={str(tmp_path)!r}, env=dict(os.environ))
    print("started", flush=True)

asyncio.run(main())
if {collected!r}:
    gc.collect()
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "started" in proc.stdout, proc.stderr
    assert not asyncio.run(process_support.survivors(mark, seconds=20))


def test_the_chats_hangup_watchdog_kills_them_before_it_quits(tmp_path: Path) -> None:
    """After SIGHUP the chat's watchdog ends etcode if the wind-down is slow: the groups
    etcode started go first (a background one, and a foreground one ignoring SIGTERM)."""
    import subprocess

    mark = process_support.token()
    script = f"""
import asyncio, os
from etcode.tools.background import BackgroundProcesses
from etcode.ui.tui.hangup import detach_from_terminal
from etcode.util.process_group import start_process

async def main():
    registry = BackgroundProcesses()
    await registry.start(["bash", "-c", "sleep {mark} & sleep {mark}"], command="x", cwd={str(tmp_path)!r}, env=dict(os.environ))
    await start_process("bash", "-c", "trap '' TERM; sleep {mark}")
    print("started", flush=True)
    detach_from_terminal(grace=0.2)
    await asyncio.Event().wait()  # a wind-down that never ends: only the watchdog ends it

asyncio.run(main())
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130 and "started" in proc.stdout, proc.stderr
    assert not asyncio.run(process_support.survivors(mark, seconds=20))


def test_read_only_agents_may_read_them_but_not_kill_them() -> None:
    """plan and explore (an explore child may run beside other calls) poll, never kill."""
    from etcode.agent.registry import builtin_agents

    agents = builtin_agents()
    for name in ("plan", "explore"):
        assert agents[name].tool_enabled("BashOutput") and not agents[name].tool_enabled("KillBash")
    assert agents["build"].tool_enabled("KillBash") and agents["general"].tool_enabled("KillBash")


async def test_a_filter_that_backtracks_without_end_is_stopped_off_the_event_loop(tmp_path: Path) -> None:
    """BashOutput's filter is the model's: ``^(a|aa)+$`` on a line of 38 ``a`` and a ``!``
    backtracks for minutes. It runs beside the event loop (which goes on meanwhile) and is
    stopped after ``FILTER_SECONDS``: a one-line error, the output left unread."""
    registry = BackgroundProcesses()
    line = "a" * 38 + "!"
    info = await start(registry, f"printf '{line}\\nok\\n'", tmp_path)
    await ended(registry, info.id)
    reading = asyncio.ensure_future(registry.read_new(info.id, r"^(a|aa)+$"))
    await asyncio.sleep(0)  # the read's first step: on the loop, it would run to its end here
    await asyncio.sleep(0)
    assert not reading.done()
    with pytest.raises(ToolError) as caught:
        await asyncio.wait_for(reading, 60)
    assert "filter '^(a|aa)+$' took over" in str(caught.value) and "\n" not in str(caught.value)
    again = await registry.read_new(info.id)
    assert again.text == f"{line}\nok\n"
    await registry.close()


async def test_a_read_never_cuts_a_character_or_a_filtered_line(tmp_path: Path) -> None:
    """What a process has printed so far ends mid-character or mid-line: the read returns up
    to the last whole character (whole line with a filter) and the rest comes with the next."""
    registry = BackgroundProcesses()
    go = tmp_path / "go"
    wait = f"while [ ! -f {go} ]; do sleep 0.02; done; rm {go}"
    # "é" is c3 a9: the first byte now, the second after "go"; "match me" unfinished till then.
    command = f"printf 'caf\\xc3'; {wait}; printf '\\xa9\\nmatch '; {wait}; printf 'me\\n'"
    info = await start(registry, command, tmp_path)
    buffer = registry._processes[info.id].buffer

    async def printed(size: int) -> None:
        for _ in range(1500):  # up to 30 s: only a failure waits that long
            if buffer.end >= size:
                return
            await asyncio.sleep(0.02)

    await printed(4)
    first = await registry.read_new(info.id)
    assert first.text == "caf"  # not "caf\ufffd"
    go.touch()
    await printed(4 + 1 + 1 + len("match "))
    second = await registry.read_new(info.id, filter="é|match")
    assert second.text == "é\n"  # whole, and "match " waits: not a whole line yet
    go.touch()
    await ended(registry, info.id)
    third = await registry.read_new(info.id, filter="match")
    assert third.text == "match me\n"
    await registry.close()


async def test_starts_side_by_side_respect_the_limit(tmp_path: Path) -> None:
    """Two starts at once (a read-only subagent's beside another) cannot both take the last slot."""
    registry = BackgroundProcesses(max_running=1)
    mark = process_support.token()
    results = await asyncio.gather(
        start(registry, f"sleep {mark}", tmp_path),
        start(registry, f"sleep {mark}", tmp_path),
        return_exceptions=True,
    )
    assert sum(isinstance(r, BackgroundInfo) for r in results) == 1
    assert sum(isinstance(r, BackgroundLimitError) for r in results) == 1
    await registry.close()
    assert not process_support.live_with(mark)
