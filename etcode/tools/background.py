"""A session's background processes: ``Bash`` with ``run_in_background``, read by
``BashOutput``, ended by ``KillBash`` and with the session.

Each process runs in its own process group (``util/process_group.py``, as a foreground
command), its combined output read into a bounded buffer that keeps the tail and counts
what it skipped. The registry lives in the session's tool state (:func:`of_state`), so the
tools reach it through their ``ToolContext``; the ``Agent`` owns it (``Agent.background``)
and closes it with the session: every group is ended, none outlives etcode (an exit that
cannot wait, or an ``Agent`` nobody closed: ``process_group.kill_all_now``).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from etcode.contract.tools import ToolError

if TYPE_CHECKING:
    import regex
from etcode.util.process_group import close_pipes, kill_process_group, start_process

#: The key of the registry in a session's tool state (``ToolContext.state``).
STATE_KEY = "background"
#: The key of the configured limit (``shell.maxBackground``) in that state.
LIMIT_KEY = "background_limit"
DEFAULT_MAX_RUNNING = 8
#: How an exit note (``prompts/tools/background_exit.txt``) starts: a replay shows it as a notice.
EXIT_NOTE_START = "[etcode] Background process "
#: Output kept per process; beyond it only the tail is kept (the rest counted as skipped).
MAX_BUFFER_BYTES = 256 * 1024
#: One read of a process's output, and the pause after each: output is gathered for 10 ms
#: and a process that floods its pipe is read at up to ~6 MB/s (it waits on the full pipe
#: meanwhile), not as fast as the event loop can go (benchmarks/bench_background.py).
READ_BYTES = 65536
FLOOD_PAUSE_SECONDS = 0.01
#: SIGTERM, then SIGKILL after this long.
KILL_GRACE_SECONDS = 2.0
#: After the leader exits, how long its pipe may stay open (a child of its own) before the
#: rest of its group is ended.
DRAIN_SECONDS = 1.0

Status = Literal["running", "exited", "killed"]


class BackgroundLimitError(ToolError):
    """The session already runs as many background processes as it may."""


class UnknownProcessError(ToolError):
    """No background process has that id in this session."""


@dataclass(frozen=True)
class BackgroundInfo:
    """One background process as front ends and the tools see it."""

    id: str  # "bash_1", "bash_2"… per session
    command: str
    description: str  # Bash's description param, or ""
    status: Status
    exit_code: int | None
    pid: int | None
    started: float  # time.time()


@dataclass(frozen=True)
class BackgroundOutput:
    """What :meth:`BackgroundProcesses.read_new` found: the output since the last read
    (``skipped`` bytes of it fell out of the buffer first), and the process as it is now."""

    info: BackgroundInfo
    text: str
    skipped: int

    def render(self) -> str:
        """The text with the skipped count in front, when anything was skipped."""
        if not self.skipped:
            return self.text
        return f"[… {self.skipped:,} bytes skipped …]\n".replace(",", "\u202f") + self.text


class _Buffer:
    """The tail of a stream: bytes ``start``…``end`` of everything written, at most
    ``limit`` of them, and the position the reader got to."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.start = 0  # absolute position of data[0]
        self.read_to = 0  # absolute position of the next unread byte
        self.changed = asyncio.Event()

    def write(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > 2 * self.limit:  # trimmed now and then, not at every chunk
            self._trim()
        self.changed.set()

    def _trim(self) -> None:
        excess = len(self.data) - self.limit
        if excess > 0:
            # The kept tail starts at a character, not inside one (its bytes count as skipped).
            for _ in range(3):
                if excess < len(self.data) and self.data[excess] & 0xC0 == 0x80:
                    excess += 1
            del self.data[:excess]
            self.start += excess

    @property
    def end(self) -> int:
        return self.start + len(self.data)

    def take(self) -> tuple[bytes, int]:
        """The unread bytes (at most the last ``limit``) and how many unread bytes were
        dropped before them."""
        self._trim()
        skipped = max(0, self.start - self.read_to)
        begin = max(self.read_to, self.start) - self.start
        chunk = bytes(self.data[begin:])
        self.read_to = self.end
        self.changed.clear()
        return chunk, skipped


class _Process:
    """A running or ended background process and the tasks that follow it."""

    def __init__(self, info: BackgroundInfo, proc: asyncio.subprocess.Process, limit: int) -> None:
        self.info = info
        self.proc = proc
        self.buffer = _Buffer(limit)
        self.reader: asyncio.Task[None] | None = None
        self.watcher: asyncio.Task[None] | None = None
        self.killing = False
        self.ended = asyncio.Event()
        self.reading = asyncio.Lock()
        self.on_end: Callable[[], object] | None = None


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def _clean(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return _ANSI.sub("", text).replace("\r\n", "\n")


class BackgroundProcesses:
    """A session's background processes (one per ``Agent``); closed with it."""

    def __init__(self, max_running: int = DEFAULT_MAX_RUNNING) -> None:
        self.max_running = max_running
        self.buffer_bytes = MAX_BUFFER_BYTES
        self._processes: dict[str, _Process] = {}
        self._next = 1
        self._listeners: list[Callable[[BackgroundInfo], None]] = []
        #: Exits not yet told to the model, by process id (a read that reported one drops it).
        self._exit_notes: dict[str, str] = {}
        self._closed = False
        self._starting = 0

    # ---- looking -------------------------------------------------------------------
    def list(self) -> list[BackgroundInfo]:
        """Every process of the session, oldest first."""
        return [process.info for process in self._processes.values()]

    def get(self, process_id: str) -> BackgroundInfo | None:
        process = self._processes.get(process_id)
        return process.info if process is not None else None

    def running_count(self) -> int:
        return sum(1 for process in self._processes.values() if process.info.status == "running")

    def subscribe(self, listener: Callable[[BackgroundInfo], None]) -> Callable[[], None]:
        """Call ``listener`` (on the event loop) when a process starts, exits or is killed;
        returns the function that stops it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def take_exit_notes(self) -> builtins.list[str]:
        """The exits the model has not been told of yet (each once)."""
        notes, self._exit_notes = list(self._exit_notes.values()), {}
        return notes

    # ---- starting ------------------------------------------------------------------
    def check_room(self) -> None:
        """Raise :class:`BackgroundLimitError` when no further process may start now."""
        if self._closed:
            raise BackgroundLimitError("background processes: the session is closing")
        if self.running_count() + self._starting >= self.max_running:
            raise BackgroundLimitError(
                f"background processes: {self.running_count() + self._starting} are running, the limit "
                f"(shell.maxBackground in etcode.json) is {self.max_running}; end one with KillBash first"
            )

    async def start(
        self,
        argv: Sequence[str],
        *,
        command: str,
        description: str = "",
        cwd: str,
        env: Mapping[str, str],
        pass_fds: Collection[int] = (),
        on_end: Callable[[], object] | None = None,
    ) -> BackgroundInfo:
        """Start ``argv`` in its own process group (stdin empty, stderr merged into
        stdout) and follow it; ``on_end`` is called once it has ended (the sandbox's
        clean-up). Raises :class:`BackgroundLimitError` at the limit."""
        self.check_room()
        self._starting += 1  # its slot is taken while it starts (a start beside it counts it)
        try:
            proc = await start_process(
                *argv,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                pass_fds=pass_fds,
            )
        finally:
            self._starting -= 1
        # From here to the tasks that own the group: no await (a cancel must not orphan it).
        process_id = f"bash_{self._next}"
        self._next += 1
        info = BackgroundInfo(process_id, command, description, "running", None, proc.pid, time.time())
        process = _Process(info, proc, self.buffer_bytes)
        process.on_end = on_end
        self._processes[process_id] = process
        assert proc.stdout is not None
        process.reader = asyncio.ensure_future(self._read(process, proc.stdout))
        process.watcher = asyncio.ensure_future(self._watch(process))
        self._notify(info)
        if self._closed:  # closed while it started
            await self.kill(process_id)
        return info

    async def first_output(self, process_id: str, seconds: float) -> BackgroundOutput:
        """Wait up to ``seconds`` for the process to print something or end, then read."""
        process = self._process(process_id)
        if not process.buffer.data and not process.ended.is_set():
            changed = asyncio.ensure_future(process.buffer.changed.wait())
            ended = asyncio.ensure_future(process.ended.wait())
            try:
                await asyncio.wait({changed, ended}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
                ended.cancel()
            if process.buffer.data and not process.ended.is_set():
                await asyncio.sleep(0.05)  # the rest of a first burst of lines
        return await self.read_new(process_id)

    # ---- reading -------------------------------------------------------------------
    async def read_new(self, process_id: str, filter: str | None = None) -> BackgroundOutput:
        """The output since the last read (``filter``: only the lines matching this
        regular expression; the others are dropped). Raises :class:`ToolError` for an
        unknown id, a bad expression or one that takes over :data:`FILTER_SECONDS` (the
        output is left unread then)."""
        pattern = _compile(filter) if filter else None
        process = self._process(process_id)
        async with process.reading:  # one read at a time: a filtered one waits for its thread
            ended = process.ended.is_set()  # before the take: all its output is in the buffer then
            before = process.buffer.read_to
            chunk, skipped = process.buffer.take()
            if not ended:  # a character cut in two, or a line a filter must see whole: next read
                held = _unfinished(chunk, whole_lines=pattern is not None)
                if held:
                    chunk = chunk[:-held]
                    process.buffer.read_to -= held
            text = _clean(chunk)
            if pattern is not None:
                try:  # in a thread, bounded: an expression that backtracks without end must not freeze etcode
                    text = await asyncio.to_thread(_matching_lines, pattern, text, FILTER_SECONDS)
                except TimeoutError:
                    process.buffer.read_to = before
                    process.buffer.changed.set()
                    raise ToolError(
                        f"BashOutput: filter {filter!r} took over {FILTER_SECONDS:g} s on the output "
                        "and was stopped (the output is left unread): use a simpler expression"
                    ) from None
            if ended:
                self._exit_notes.pop(process_id, None)  # this read tells the model
        return BackgroundOutput(process.info, text, skipped)

    def _process(self, process_id: str) -> _Process:
        process = self._processes.get(process_id)
        if process is None:
            known = ", ".join(self._processes) or "none"
            raise UnknownProcessError(f"no background process {process_id!r} (this session's: {known})")
        return process

    # ---- ending --------------------------------------------------------------------
    async def kill(self, process_id: str) -> bool:
        """End the process's group (SIGTERM, SIGKILL after a grace); False when it had
        already ended. Raises :class:`UnknownProcessError` for an unknown id."""
        process = self._process(process_id)
        if process.info.status != "running" or process.killing:
            if process.killing:
                await process.ended.wait()
            return False
        process.killing = True
        await asyncio.shield(self._end_group(process))
        return True

    async def close(self) -> None:
        """End every process and wait for them; idempotent."""
        self._closed = True
        running = [p for p in self._processes.values() if p.info.status == "running" and not p.killing]
        for process in running:
            process.killing = True
        ends = [self._end_group(process) for process in running]
        waits = [p.ended.wait() for p in self._processes.values() if p.killing]
        if ends or waits:
            await asyncio.shield(asyncio.gather(*ends, *waits, return_exceptions=True))

    async def _end_group(self, process: _Process) -> None:
        await kill_process_group(process.proc, KILL_GRACE_SECONDS)
        await self._settle(process)

    async def _settle(self, process: _Process) -> None:
        """After the group was ended: wait for the watcher to record it."""
        watcher = process.watcher
        if watcher is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait({watcher}, timeout=KILL_GRACE_SECONDS + DRAIN_SECONDS + 1)
        if not process.ended.is_set():  # its watcher was cancelled (the event loop's end)
            close_pipes(process.proc)
            self._ended(process, process.proc.returncode)

    async def _read(self, process: _Process, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                chunk = await stream.read(READ_BYTES)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            process.buffer.write(chunk)
            # Lines gathered for a moment, and a flood read at a bounded rate: the chat's loop goes first.
            await asyncio.sleep(FLOOD_PAUSE_SECONDS)

    async def _watch(self, process: _Process) -> None:
        """Wait for the leader to exit (polling: ``Process.wait()`` also waits for the pipe,
        which a child of its own may hold for ever), then end the rest of the group, drain
        the pipe and record the end."""
        proc = process.proc
        reader = process.reader
        assert reader is not None
        delay = 0.02
        watched = False
        try:
            while proc.returncode is None:
                done, _ = await asyncio.wait({reader}, timeout=delay)
                if done:
                    await proc.wait()
                    break
                delay = min(delay * 1.5, 0.25)
            await kill_process_group(proc, grace=0.2)  # what the leader left behind
            try:
                await asyncio.wait_for(asyncio.shield(reader), DRAIN_SECONDS)
            except TimeoutError:
                reader.cancel()
                close_pipes(proc)
            watched = True
        finally:
            # Cancelled while the process runs (every task is, as asyncio.run ends): it is
            # still running, for close() to end.
            if watched or proc.returncode is not None:
                self._ended(process, proc.returncode)

    def _ended(self, process: _Process, code: int | None) -> None:
        if process.ended.is_set():
            return
        if process.on_end is not None:
            on_end, process.on_end = process.on_end, None
            with contextlib.suppress(Exception):
                on_end()
        status: Status = "killed" if process.killing else "exited"
        process.info = replace(process.info, status=status, exit_code=code)
        process.ended.set()
        process.buffer.changed.set()
        if status == "exited" and not self._closed:
            from etcode.prompt import templates

            self._exit_notes[process.info.id] = templates.render(
                templates.load("tools/background_exit.txt"),
                {"id": process.info.id, "command": _short(process.info.command), "code": str(code)},
            ).strip()
        self._notify(process.info)

    def _notify(self, info: BackgroundInfo) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(info)


#: A filtered read holds back an unfinished last line up to this long (then it is read as it is).
MAX_HELD_LINE = 65536
#: How long BashOutput's filter may take over one read's lines.
FILTER_SECONDS = 1.0


def _compile(filter: str) -> regex.Pattern[str]:
    """BashOutput's filter compiled (the ``regex`` package: its matching takes a timeout)."""
    import regex

    try:
        return regex.compile(filter)
    except regex.error as err:
        raise ToolError(f"BashOutput: filter {filter!r} is not a regular expression ({err})") from None


def _matching_lines(pattern: regex.Pattern[str], text: str, seconds: float) -> str:
    """The lines of ``text`` that ``pattern`` finds something in; raises ``TimeoutError``
    after ``seconds`` (the matching lets go of the GIL: the event loop runs meanwhile)."""
    deadline = time.monotonic() + seconds
    kept: builtins.list[str] = []
    for line in text.splitlines(keepends=True):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        if pattern.search(line, concurrent=True, timeout=left):
            kept.append(line)
    return "".join(kept)


def _unfinished(data: bytes, *, whole_lines: bool) -> int:
    """How many bytes at the end of ``data`` to leave for the next read: an unfinished last
    line (``whole_lines``, up to :data:`MAX_HELD_LINE`), else a UTF-8 character cut short."""
    if whole_lines:
        held = len(data) - (data.rfind(b"\n") + 1)
        if held <= MAX_HELD_LINE:
            return held
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the last character's first byte
            size = 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4 if byte >> 3 == 0b11110 else 1
            return back if back < size else 0
    return 0


def _short(command: str, limit: int = 80) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def of_state(state: dict[str, object]) -> BackgroundProcesses:
    """The session's registry in its tool state, made on first use (with the limit the
    session put there, ``shell.maxBackground``)."""
    found = state.get(STATE_KEY)
    if isinstance(found, BackgroundProcesses):
        return found
    limit = state.get(LIMIT_KEY)
    made = BackgroundProcesses(limit if isinstance(limit, int) else DEFAULT_MAX_RUNNING)
    state[STATE_KEY] = made
    return made


def existing(state: dict[str, object]) -> BackgroundProcesses | None:
    """The session's registry if one was made."""
    found = state.get(STATE_KEY)
    return found if isinstance(found, BackgroundProcesses) else None
