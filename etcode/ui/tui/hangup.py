"""Closing the terminal under a running chat (SIGHUP).

The terminal is gone: nothing can be shown any more, and a write to it fails (Textual's
writer thread dies on the first one, and the app then blocks when its queue is full). So
the standard streams are pointed at /dev/null before the app winds down, and a watchdog
ends the process if winding down takes longer than ``GRACE_SECONDS`` (killing every process
group etcode started first: none may outlive it).
"""

from __future__ import annotations

import contextlib
import os
import threading

from etcode.util.process_group import kill_all_now

#: How long the turn may take to stop (end commands, save) after the terminal closed.
GRACE_SECONDS = 15.0


def detach_from_terminal(grace: float = GRACE_SECONDS) -> None:
    """Send stdin/stdout/stderr to /dev/null and start the exit watchdog."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
        os.close(null)
    watchdog = threading.Timer(grace, _quit_now)
    watchdog.daemon = True
    watchdog.start()


def _quit_now() -> None:
    with contextlib.suppress(Exception):  # nothing may stop the exit
        kill_all_now()
    os._exit(130)
