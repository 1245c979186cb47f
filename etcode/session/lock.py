"""One process at a time per session: an advisory lock file next to the session database.

Two ``etcode`` processes writing the same session would interleave their messages and
reuse turn numbers. The first one to open a session holds ``locks/<id>.lock`` (``flock``,
released by the kernel even when the process is killed); another process is refused with
one line naming the holder. Within one process the lock is shared (the TUI may reopen the
session it is showing).
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from etcode.util.errors import EtcodeError


class SessionBusyError(EtcodeError):
    """Another etcode process is working in this session."""


@dataclass
class _Held:
    fd: int
    count: int


_HELD: dict[Path, _Held] = {}
_GUARD = threading.Lock()


def _holder(path: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text(encoding="ascii").strip())
        return f" (pid {pid})"
    return ""


class SessionLock:
    """Held while a session is open for writing; ``release()`` it when done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._released = False

    @classmethod
    def acquire(cls, folder: Path, session_id: str) -> SessionLock:
        """Take the lock of ``session_id`` or raise :class:`SessionBusyError`."""
        import fcntl

        path = folder / f"{session_id}.lock"
        with _GUARD:
            held = _HELD.get(path)
            if held is not None:
                held.count += 1
                return cls(path)
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise SessionBusyError(
                    f"session {session_id} is in use by another etcode process{_holder(path)}; "
                    "wait for it to finish, or copy it with --fork"
                ) from None
            except OSError:  # a file system without locks: run without one
                os.close(fd)
                return cls(path)
            with contextlib.suppress(OSError):  # the pid is for messages; a full disk loses it
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode("ascii"))
            _HELD[path] = _Held(fd, 1)
            return cls(path)

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        with _GUARD:
            held = _HELD.get(self.path)
            if held is None:
                return
            held.count -= 1
            if held.count == 0:
                del _HELD[self.path]
                with contextlib.suppress(OSError):
                    os.ftruncate(held.fd, 0)
                os.close(held.fd)  # closing the descriptor drops the flock
