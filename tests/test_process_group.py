"""``etcode/util/process_group.py``: a start that a cancel cannot cut short."""

from __future__ import annotations

import asyncio

import pytest

from etcode.util.process_group import start_process
from tests.process_support import hold_pipe_connect, live_with, survivors, token


async def test_repeated_cancels_during_the_start_still_kill_the_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An anyio cancel scope re-delivers its cancel every turn: the start still finishes,
    the group (a shell and its background child) is killed, and one CancelledError ends it."""
    entered, release = hold_pipe_connect(monkeypatch)
    mark = token()
    start = asyncio.create_task(
        start_process("sh", "-c", f"sleep {mark} & sleep {mark}", stdout=asyncio.subprocess.PIPE)
    )
    await asyncio.wait_for(entered.wait(), 60)
    while len(live_with(f"sleep\0{mark}")) < 2:  # both children run, the start is still held
        await asyncio.sleep(0.01)
    for _ in range(5):
        start.cancel()
        await asyncio.sleep(0)
    release.set()
    await asyncio.wait({start}, timeout=30)
    assert start.cancelled()
    assert await survivors(mark) == []


async def test_a_start_that_fails_raises_its_error() -> None:
    with pytest.raises(FileNotFoundError):
        await start_process("etcode-no-such-program")


async def test_kill_all_now_ends_the_groups_still_live_and_only_those() -> None:
    """Every group started here is registered until seen gone: ``kill_all_now`` SIGKILLs a
    live one (a shell and its background child, ignoring SIGTERM), and a group that ended
    is forgotten (its pgid may be someone else's by then)."""
    from etcode.util import process_group

    mark = token()
    live = await start_process("sh", "-c", f"trap '' TERM; sleep {mark} & sleep {mark}")
    ended = await start_process("true")
    await ended.wait()
    process_group.forget_if_gone(ended)
    assert live.pid in process_group._live and ended.pid not in process_group._live
    while len(live_with(f"sleep\0{mark}")) < 2:
        await asyncio.sleep(0.01)
    process_group.kill_all_now()
    assert await survivors(mark) == []
    assert live.pid not in process_group._live
    await live.wait()


async def test_a_start_cancelled_with_every_other_task_ends_and_kills_its_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``asyncio.run`` cancels every task at its end, the start's own ones too (asyncio's
    pipe connection among them): the start still ends, its group killed and reaped."""
    entered, _ = hold_pipe_connect(monkeypatch)
    mark = token()
    start = asyncio.create_task(
        start_process("sh", "-c", f"sleep {mark} & sleep {mark}", stdout=asyncio.subprocess.PIPE)
    )
    await asyncio.wait_for(entered.wait(), 60)  # forked; asyncio connects its pipe
    while len(live_with(f"sleep\0{mark}")) < 2:
        await asyncio.sleep(0.01)
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            task.cancel()
    await asyncio.wait({start}, timeout=60)  # it hung here for good
    assert start.cancelled()
    assert await survivors(mark) == []
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


class _StrictLoop(asyncio.SelectorEventLoop):
    """A loop whose ``subprocess_exec`` takes no keyword it does not know, as uvloop's."""

    async def subprocess_exec(self, protocol_factory, *args, **kwargs):  # type: ignore[no-untyped-def]
        if "extra" in kwargs:
            raise ValueError("unexpected kwargs: extra")
        return await super().subprocess_exec(protocol_factory, *args, **kwargs)


def test_a_loop_that_takes_no_extra_keyword_still_starts_processes() -> None:
    """uvloop refuses ``extra=``: it is given only to asyncio's own loops."""

    async def echo() -> bytes:
        proc = await start_process("echo", "hi", stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        return out

    loop = _StrictLoop()
    try:
        assert loop.run_until_complete(echo()) == b"hi\n"
    finally:
        loop.close()
