"""Folders and files that hold transcripts (the session database, saved tool output, the
prompt history) are the user's alone: folders ``0700``, files ``0600``, whatever the
umask — and ones found looser (made by an older etcode) are tightened when opened."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO

DIR_MODE = 0o700
FILE_MODE = 0o600


def tighten(path: str | os.PathLike[str]) -> None:
    """Take group and other permissions away from ``path`` (the owner's stay), when it is
    ours and has any. Missing paths and failures (not ours, read-only) are ignored."""
    with contextlib.suppress(OSError):
        info = os.stat(path)
        if info.st_mode & 0o077 and info.st_uid == os.getuid():
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o077)


def private_dir(path: Path, *, tighten_existing: bool = True) -> Path:
    """Create ``path`` (and missing parents) with the folder itself ``0700``. An existing
    folder is tightened unless ``tighten_existing`` is False (a folder the user chose)."""
    existed = path.is_dir()
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if not existed or tighten_existing:
        tighten(path)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode ``0600`` when missing; tighten it when it exists
    with a looser mode (it is not opened then: a read-only file stays usable)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        os.close(os.open(path, flags, FILE_MODE))
    except FileExistsError:
        tighten(path)
    return path


def open_private(path: Path, mode: str = "a", encoding: str = "utf-8") -> IO[str]:
    """``open(path, mode)`` for text, the file created ``0600`` (and tightened if looser)."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if mode == "a" else os.O_TRUNC
    fd = os.open(path, flags, FILE_MODE)
    tighten(path)
    return os.fdopen(fd, mode, encoding=encoding)
