"""Taking undo copies of files and telling whether a file still holds what etcode wrote.

Small files are read whole (their copy goes into the database); larger ones are copied by
streaming, in 1 MiB chunks hashed on the way, to a content-addressed file in the session's
folder beside the database; files over the cap are not copied at all. Nothing here reads a
large file into memory.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from etcode.util.private import private_dir

CHUNK = 1024 * 1024
#: Copies up to this size stay in the database; larger ones are files beside it.
INLINE_LIMIT = 256 * 1024
#: The default of ``snapshot.maxFileBytes``.
DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024

#: A file's state: None when missing, ``NOT_A_FILE`` for a folder/device/FIFO, else
#: ``(size, sha256 hex)`` (the hash "" when it was not needed: the size alone differs).
NOT_A_FILE = "not a regular file"
State = tuple[int, str] | str | None


@dataclass
class Capture:
    """What :func:`capture` kept of a file (see ``store.Snapshot`` for ``copy``)."""

    existed: bool
    content: bytes | None = None
    copy: str = "db"
    size: int | None = None
    digest: str | None = None


def sha256_file(path: Path) -> tuple[int, str]:
    """Size and SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def capture(path: Path, folder: Path | None, max_bytes: int, inline_limit: int = INLINE_LIMIT) -> Capture:
    """Keep ``path``'s current content for undo: inline when small (or when there is no
    ``folder``), as a file in ``folder`` when larger, not at all beyond ``max_bytes``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return Capture(existed=False)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    if info.st_size > max_bytes:
        return Capture(existed=True, copy="none", size=info.st_size)
    if folder is None or info.st_size <= inline_limit:
        data = path.read_bytes()
        if len(data) > max_bytes:  # it grew since the stat
            return Capture(existed=True, copy="none", size=len(data))
        return Capture(True, data, "db", len(data), hashlib.sha256(data).hexdigest())
    return _copy_out(path, folder, max_bytes)


def _copy_out(path: Path, folder: Path, max_bytes: int) -> Capture:
    try:
        private_dir(folder)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".copy-", suffix=".tmp")
    except OSError as err:
        raise _where(err, folder) from None
    digest = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
            while chunk := src.read(CHUNK):
                size += len(chunk)
                if size > max_bytes:  # it grew since the stat
                    raise _TooLarge
                digest.update(chunk)
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        name = digest.hexdigest()
        os.replace(tmp, folder / name)  # the same name holds the same bytes
    except _TooLarge:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return Capture(existed=True, copy="none", size=size)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _where(err, folder) if err.filename is None or err.filename == tmp else err from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return Capture(existed=True, copy="file", size=size, digest=name)


class _TooLarge(Exception):
    pass


def _where(err: OSError, folder: Path) -> OSError:
    """``err`` with a message naming the folder the copy was written to."""
    reason = (err.strerror or str(err)).lower()
    return OSError(err.errno, f"{reason} writing an undo copy in {folder}")


def state_of(path: Path, sizes: set[int]) -> State:
    """``path``'s state; its content is hashed only when its size is one of ``sizes``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return NOT_A_FILE
    if info.st_size not in sizes:
        return (info.st_size, "")
    return sha256_file(path)


def restore_copy(source: Path, target: Path) -> None:
    """Put an outside copy back at ``target``, streamed: atomically (keeping the mode), or
    in place for a file with several hard links (as ``atomic_write_bytes`` does)."""
    from etcode.util.fs import write_target

    target = write_target(target)
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        with open(source, "rb") as src, open(target, "r+b") as dst:  # every name sees it
            while chunk := src.read(CHUNK):
                dst.write(chunk)
            dst.truncate()
            dst.flush()
            os.fsync(dst.fileno())
        return
    mode = info.st_mode & 0o7777 if info is not None else None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with open(source, "rb") as src, os.fdopen(fd, "wb") as dst:
            while chunk := src.read(CHUNK):
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
