"""The chat's view of the session's background processes (Bash ``run_in_background``): the
running count for the status bar, kept current through ``BackgroundProcesses.subscribe``
(listeners run on the event loop: nothing here blocks), and how a process is shown in
``/bashes``. No Textual here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.tools.background import BackgroundInfo, BackgroundProcesses


class BackgroundWatch:
    """Follows one :class:`BackgroundProcesses` (the agent's; a new one after ``/new``,
    ``/sessions``…): ``on_count`` is called with the running count when it changes, never
    for output. Remembers when each process ended, for its run time."""

    def __init__(self, on_count: Callable[[int], None]) -> None:
        self.on_count = on_count
        self.processes: BackgroundProcesses | None = None
        self.count = 0
        #: When each process was seen to end (``time.time()``), by id.
        self.ended: dict[str, float] = {}
        self._unsubscribe: Callable[[], None] | None = None

    def follow(self, processes: BackgroundProcesses | None) -> None:
        """Watch ``processes`` instead of the ones watched so far."""
        if processes is self.processes and processes is not None:
            return
        self.close()
        self.processes = processes
        self.ended = {}
        if processes is not None:
            self._unsubscribe = processes.subscribe(self._changed)
        self._recount()

    def close(self) -> None:
        """Stop listening (the app unmounts)."""
        if self._unsubscribe is not None:
            unsubscribe, self._unsubscribe = self._unsubscribe, None
            unsubscribe()
        self.processes = None

    def _changed(self, info: BackgroundInfo) -> None:
        if info.status != "running":
            self.ended.setdefault(info.id, time.time())
        self._recount()

    def _recount(self) -> None:
        count = self.processes.running_count() if self.processes is not None else 0
        if count != self.count:
            self.count = count
            self.on_count(count)


def runtime_text(seconds: float) -> str:
    """``7s``, ``3m04s``, ``2h05m``."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def status_text(info: BackgroundInfo) -> str:
    """``running``, ``exit 0``, ``killed``."""
    if info.status == "exited":
        return f"exit {info.exit_code}" if info.exit_code is not None else "exited"
    return info.status


def process_row(info: BackgroundInfo, ended: float | None, now: float | None = None) -> str:
    """One line of ``/bashes``: id, status, run time, command (its first line, redacted, cut)."""
    from etcode.security.redact import redact

    now = time.time() if now is None else now
    end = now if info.status == "running" else ended
    runtime = runtime_text(end - info.started) if end is not None else "-"
    lines = redact(info.command).strip().splitlines() or [""]
    command = lines[0] + (" …" if len(lines) > 1 else "")
    if len(command) > 80:
        command = command[:79] + "…"
    return f"{info.id:<9} {status_text(info):<9} {runtime:>7}  {command}"


__all__ = ["BackgroundWatch", "process_row", "runtime_text", "status_text"]
