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
