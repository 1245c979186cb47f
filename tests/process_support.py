"""Finding the processes a test started, wherever they went: each test command carries a
unique token in its argv (``sleep 300.<n>``), so an orphan re-parented to PID 1 or moved
to another group is still found in ``/proc``."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

_counter = itertools.count(1)


def token() -> str:
    """A number unique to this test process and call, usable as ``sleep`` seconds (300+)."""
    return f"300.{os.getpid()}{next(_counter):04d}"


def live_with(mark: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains ``mark``."""
    found: list[int] = []
    needle = mark.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state not in (b"Z", b"X"):
            found.append(int(entry))
    return found


async def survivors(mark: str, seconds: float = 30.0) -> list[int]:
    """Wait until no live process carries ``mark``; those still alive after ``seconds``
    (generous: only a failure waits that long), which are then killed."""
    deadline = time.monotonic() + seconds
    left = live_with(mark)
    while left and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        left = live_with(mark)
    kill_all(left)
    return left


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


async def wait_for_file(path: os.PathLike[str], seconds: float = 60.0) -> str:
    """The text of ``path`` once it is non-empty (fails after ``seconds``, a safety net)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            text = Path(path).read_text().strip()
        except FileNotFoundError:
            text = ""
        if text:
            return text
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


def hold_pipe_connect(
    monkeypatch: pytest.MonkeyPatch, *, after_connect: bool = False
) -> tuple[asyncio.Event, asyncio.Event]:
    """Hold every start of a subprocess with pipes inside asyncio's pipe connection (the last
    await of ``create_subprocess_exec``; the process already runs) until ``release`` is set:
    ``entered`` is set when a start arrives there, before the real connect or after it."""
    loop = asyncio.get_running_loop()
    real = loop.connect_read_pipe
    entered, release = asyncio.Event(), asyncio.Event()

    async def held(*args: Any, **kwargs: Any) -> Any:
        if not after_connect:
            entered.set()
            await release.wait()
            return await real(*args, **kwargs)
        connected = await real(*args, **kwargs)
        entered.set()
        await release.wait()
        return connected

    monkeypatch.setattr(loop, "connect_read_pipe", held)
    return entered, release


def group_alive(pgid: int) -> list[int]:
    """Pids of the live (non-zombie) processes of process group ``pgid``. (A zombie whose
    parent is gone waits for PID 1 to reap it, which a container's init may never do: it
    runs nothing, so it does not count.)"""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            found.append(int(entry))
    return found
