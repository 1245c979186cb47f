"""Child processes etcode starts: each in its own session (process group), started so
that a cancellation can never leave part of the group running, and ended as a group.

``asyncio.create_subprocess_exec`` forks and execs at once but then awaits its pipes for a
few event-loop turns; a cancellation landing there makes asyncio SIGKILL the leader only,
and whatever the leader had started already (``sleep 30 &``, a server's worker) moves to
PID 1 and runs on. :func:`start_process` shields the start instead and, when a cancel
arrived, kills the whole group before re-raising. After it returns, the caller must enter
the ``try`` that kills the group (:func:`kill_process_group`) before its next ``await``.
The start's own task survives being cancelled too (``asyncio.run`` cancels every task at
its end, asyncio's pipe connection included, whose clean-up would then wait forever): it
kills and reaps what it forked, then lets the cancel go on.
Every process etcode starts itself goes through here (future hooks too), and each group is
registered until it is seen gone, so an exit that cannot wait for the clean ends
(:func:`kill_all_now`: a second Ctrl-C, a watchdog, the interpreter's exit) leaves none behind.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import subprocess
from collections.abc import Collection, Mapping
from typing import Any, TypedDict, TypeVar, Unpack

T = TypeVar("T")

#: How long a group killed after a cancelled start may take to disappear.
REAP_SECONDS = 5.0
#: Loop turns given to asyncio's own exit callbacks after a cancelled start's process exited.
_SETTLE_TURNS = 5

#: The groups started here that may still have live members, by pgid (the leader's pid):
#: :func:`kill_all_now` ends them. A group leaves it once it is seen gone or is SIGKILLed,
#: so a pgid the system has reused for someone else's group is never killed.
_live: dict[int, asyncio.subprocess.Process] = {}
_at_exit: list[object] = []


class ProcessOptions(TypedDict, total=False):
    """The keywords of ``asyncio.create_subprocess_exec`` etcode starts its processes with."""

    cwd: str
    env: Mapping[str, str]
    stdin: int
    stdout: int
    stderr: int
    pass_fds: Collection[int]


async def start_process(*argv: str, **kwargs: Unpack[ProcessOptions]) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec(*argv, start_new_session=True, **kwargs)``, safe
    against cancellation: if the calling task is cancelled while the process starts, the
    start still completes, the whole new group is SIGKILLed and reaped, and the
    ``CancelledError`` is re-raised. Errors of the start itself (``OSError``) propagate."""
    if not _at_exit:
        _at_exit.append(atexit.register(kill_all_now))  # an Agent nobody closed: its groups too
    _forget_ended()
    creating = asyncio.ensure_future(_create(argv, kwargs))
    try:
        return await asyncio.shield(creating)
    except asyncio.CancelledError:
        await _kill_after_start(creating)
        raise


async def _create(argv: tuple[str, ...], options: ProcessOptions) -> asyncio.subprocess.Process:
    """The start itself, in a task of its own that survives being cancelled too (as
    ``asyncio.run`` cancels every task at its end): the process it forked is killed and
    reaped, then the cancel goes on."""
    # asyncio keeps the Popen in the transport's ``extra`` dict as soon as it forked: given
    # our own dict, the pid is known even when the start never returns.
    started: dict[str, object] = {}
    # Only asyncio's own loops take it (uvloop refuses unknown keywords): elsewhere a start
    # cancelled in its pipe connection is reaped by the group's kill alone.
    transport_extra: dict[str, Any] = {"extra": started} if _takes_extra(asyncio.get_running_loop()) else {}
    starting = asyncio.ensure_future(
        asyncio.create_subprocess_exec(*argv, start_new_session=True, **options, **transport_extra)
    )
    try:
        await asyncio.wait({starting})
    except asyncio.CancelledError:
        await _end_cancelled_start(starting, started)
        raise
    proc = starting.result()
    _live[proc.pid] = proc
    return proc


def _takes_extra(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is asyncio's own, whose ``subprocess_exec`` hands ``extra=`` on to
    the transport (a loop of another library, uvloop's, raises on it)."""
    own = asyncio.base_events.BaseEventLoop
    return isinstance(loop, own) and type(loop).subprocess_exec is own.subprocess_exec


async def _end_cancelled_start(
    starting: asyncio.Future[asyncio.subprocess.Process], started: dict[str, object]
) -> None:
    """Kill and reap what a cancelled start forked. When asyncio's own start is cancelled
    in its pipe connection as well, its clean-up waits forever for a process exit it is no
    longer told of: once the process has exited, that wait is cancelled again."""
    found = started.get("subprocess")
    popen = found if isinstance(found, subprocess.Popen) else None
    if popen is None:
        starting.cancel()  # not forked yet: it never will be
    else:
        kill_group(popen.pid)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REAP_SECONDS
    while not starting.done() and loop.time() < deadline:
        if popen is not None and popen.returncode is not None:
            for _ in range(_SETTLE_TURNS):  # asyncio's exit callbacks run, if they still can
                await _held_turn()
            break
        await _held_turn(0.01)
    if not starting.done():
        starting.cancel()
    await wait_despite_cancels(starting, REAP_SECONDS)
    proc = None if not starting.done() or starting.cancelled() or starting.exception() else starting.result()
    if proc is not None:
        kill_group(proc.pid)
        with contextlib.suppress(asyncio.CancelledError):
            await _reap(proc, REAP_SECONDS)
        close_pipes(proc)
    elif popen is not None:
        await _reap_group(popen.pid, REAP_SECONDS)
        for pipe in (popen.stdin, popen.stdout, popen.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


async def _held_turn(seconds: float = 0) -> None:
    """One wait that a further cancel does not cut short (the clean-up goes on)."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(seconds)


async def _reap_group(pgid: int, seconds: float) -> None:
    """Wait (bounded) until no live member is left in group ``pgid``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline and group_alive(pgid):
        await _held_turn(0.01)


def kill_all_now() -> None:
    """SIGKILL every group started here that is still registered, at once and without
    waiting: for an exit that cannot wait for the clean ends (a second Ctrl-C, the chat's
    watchdog after SIGHUP, the interpreter's exit after an ``Agent`` nobody closed). Safe
    from a signal handler or another thread."""
    for pgid in tuple(_live):
        kill_group(pgid)


def forget_if_gone(proc: asyncio.subprocess.Process) -> None:
    """The caller is done with ``proc``: if its leader has exited and its group is empty,
    :func:`kill_all_now` no longer ends it (what a command left running there still is)."""
    if proc.returncode is None:
        return
    try:
        os.killpg(proc.pid, 0)  # no process at all in it: gone (the common case, no /proc scan)
    except ProcessLookupError:
        _live.pop(proc.pid, None)
        return
    except PermissionError:
        pass
    if not group_alive(proc.pid):
        _live.pop(proc.pid, None)


def _forget_ended() -> None:
    """Drop the groups whose leader exited and which are empty now (a command that left a
    child of its own behind stays until the child is gone too)."""
    for proc in [p for p in _live.values() if p.returncode is not None]:
        forget_if_gone(proc)


async def wait_despite_cancels(future: asyncio.Future[T], seconds: float | None = None) -> None:
    """Wait for ``future`` (up to ``seconds`` if given) however often the calling task is
    cancelled meanwhile: the clean-up after a cancel (an anyio cancel scope re-delivers its
    cancel every turn) must not be cut short. The caller re-raises its ``CancelledError``."""
    loop = asyncio.get_running_loop()
    deadline = None if seconds is None else loop.time() + seconds
    while not future.done():
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            return
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({future}, timeout=left)


async def _kill_after_start(creating: asyncio.Future[asyncio.subprocess.Process]) -> None:
    """Let the start finish (a few loop turns; further cancels are held back), then kill
    and reap the group it made."""
    await wait_despite_cancels(creating)
    if creating.cancelled() or creating.exception() is not None:
        return  # nothing started, or asyncio already killed its lone leader
    proc = creating.result()
    kill_group(proc.pid)
    with contextlib.suppress(asyncio.CancelledError):
        await _reap(proc, REAP_SECONDS)
    close_pipes(proc)


async def _reap(proc: asyncio.subprocess.Process, seconds: float) -> None:
    """Wait (bounded) until the leader has exited and no live member is left in its group."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline and (proc.returncode is None or group_alive(proc.pid)):
        await asyncio.sleep(0.01)


def close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Stop reading pipes still held open by a process that left the group."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


def kill_group(pgid: int) -> None:
    """SIGKILL process group ``pgid`` (a process started in its own session: its pid)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    _live.pop(pgid, None)


async def kill_process_group(proc: asyncio.subprocess.Process, grace: float = 2.0) -> None:
    """SIGTERM the process group of ``proc`` (started by :func:`start_process`), then
    SIGKILL whatever is left after ``grace`` seconds."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        _live.pop(pgid, None)
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while loop.time() < deadline:
        if proc.returncode is not None and not group_alive(pgid):
            _live.pop(pgid, None)
            return
        await asyncio.sleep(0.05)
    kill_group(pgid)


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) process is in group ``pgid``."""
    if os.path.isdir("/proc/self"):
        return _proc_group_alive(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _proc_group_alive(pgid: int) -> bool:
    # Zombies count as gone: in containers nobody may reap re-parented children.
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False
