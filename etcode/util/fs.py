"""Filesystem helpers shared by the tools: binary sniffing, size format, near names,
atomic writes and line-ending / BOM handling."""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import stat
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

BOM = "\ufeff"

#: Extensions that are binary whatever their first bytes say.
BINARY_EXTENSIONS = frozenset(
    {
        ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tiff", ".psd",
        ".pdf", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".tar", ".zst",
        ".exe", ".dll", ".so", ".dylib", ".o", ".a", ".lib", ".bin", ".class", ".jar",
        ".pyc", ".pyo", ".whl", ".egg", ".wasm", ".dat", ".db", ".sqlite", ".sqlite3",
        ".mp3", ".mp4", ".wav", ".ogg", ".flac", ".avi", ".mov", ".mkv", ".webm",
        ".ttf", ".otf", ".woff", ".woff2", ".eot", ".doc", ".docx", ".xls", ".xlsx",
        ".ppt", ".pptx", ".odt", ".iso", ".dmg", ".npy", ".npz", ".pkl", ".parquet",
    }
)  # fmt: skip


#: Bytes that may appear in text: tab, newlines, form feed, escape, and 0x20 and up.
_TEXT_BYTES = bytes([9, 10, 12, 13, 27, *range(32, 256)])


def looks_binary(sample: bytes) -> bool:
    """True when ``sample`` (the first few KB of a file) is not text: a NUL byte, more
    than 30% control bytes that are not ordinary whitespace, or mostly invalid UTF-8."""
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    control = len(sample.translate(None, _TEXT_BYTES))
    if control / len(sample) > 0.3:
        return True
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as err:
        # A multi-byte character cut at the end of the sample is still text.
        if err.start >= len(sample) - 4 and err.reason == "unexpected end of data":
            return False
    return _mostly_undecodable(sample)


def _mostly_undecodable(sample: bytes) -> bool:
    text = sample.decode("utf-8", errors="replace")
    return text.count("\ufffd") / max(len(text), 1) > 0.1


def is_binary_file(path: Path, sample_size: int = 8192) -> bool:
    """Sniff ``path``: known binary extensions, then the first ``sample_size`` bytes.
    A FIFO, socket or device raises :class:`NotRegularFileError` instead of blocking."""
    if path.suffix.lower() in BINARY_EXTENSIONS:
        return True
    with open(path, "rb", opener=regular_opener) as handle:
        return looks_binary(handle.read(sample_size))


class NotRegularFileError(OSError):
    """The path is a FIFO, socket or device: reading it could block or never end."""


def special_kind(path: Path | str) -> str | None:
    """What ``path`` is when it exists but is neither a regular file nor a folder, e.g.
    ``"a FIFO"`` (reading one may wait forever for a writer, a device may never end);
    None otherwise. Symlinks are followed; nothing is opened."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _kind_of(mode)


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def regular_opener(path: str | os.PathLike[str], flags: int) -> int:
    """An ``opener`` for :func:`open` that refuses anything but a regular file without
    blocking: opened with ``O_NONBLOCK`` (a FIFO does not wait for a writer), checked with
    ``fstat``, then set back to blocking. Raises :class:`NotRegularFileError`."""
    fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
            raise NotRegularFileError(errno.EINVAL, f"not a regular file ({_kind_of(mode)})", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular_bytes(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (:class:`NotRegularFileError` otherwise)."""
    with open(path, "rb", opener=regular_opener) as handle:
        return handle.read()


def read_regular_capped(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file ``path``, of at most ``limit`` bytes, read without ever
    blocking (a FIFO or device raises :class:`NotRegularFileError`; a longer file raises
    ``OSError`` whose ``strerror`` says "larger than …"): for files a cloned project supplies."""
    with open(path, "rb", opener=regular_opener) as handle:
        if os.fstat(handle.fileno()).st_size > limit:  # refused without reading it
            raise OSError(errno.EFBIG, f"larger than {format_size(limit)}", str(path))
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew
        raise OSError(errno.EFBIG, f"larger than {format_size(limit)}", str(path))
    return data


def format_size(size: int | float) -> str:
    """Human size: ``512 B``, ``2.1 KB``, ``12.5 MB`` (1 KB = 1024 B)."""
    if size < 1024:
        return f"{int(size)} B"
    if size < 1024**2:
        return f"{size / 1024:.1f} KB"
    if size < 1024**3:
        return f"{size / 1024**2:.1f} MB"
    return f"{size / 1024**3:.1f} GB"


def suggest_names(path: Path, limit: int = 3) -> list[Path]:
    """Existing entries next to ``path`` whose names are close to its name."""
    folder = path.parent
    try:
        names = [entry.name for entry in folder.iterdir()]
    except OSError:
        return []
    target = path.name
    close = difflib.get_close_matches(target, names, n=limit, cutoff=0.5)
    lower = target.lower()
    stem = path.stem.lower()
    for name in names:
        if len(close) >= limit:
            break
        candidate = name.lower()
        if name not in close and (
            candidate == lower or (stem and (candidate.startswith(stem) or stem in candidate))
        ):
            close.append(name)
    return [folder / name for name in close]


def write_target(path: Path) -> Path:
    """The file a write to ``path`` changes: ``path`` itself, or for a symlink (or a chain
    of them) the file it leads to, which may not exist yet. A symlink loop raises ``ELOOP``."""
    if not os.path.islink(path):
        return path
    target = real_path(path)
    if os.path.islink(target):  # realpath stops inside a loop
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))
    return target


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a failure never leaves a half-written file.

    The data goes to a temp file in the same folder, then ``os.replace`` puts it over the
    file, keeping the old mode bits. A symlink is written through: its target gets the
    data and the link stays. A file with several hard links is rewritten in place instead
    (a rename would leave the other names with the old content): see :func:`_write_in_place`."""
    target = write_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        _write_in_place(target, data)
        return
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if info is not None:
            os.chmod(tmp, info.st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_in_place(path: Path, data: bytes) -> None:
    """Rewrite a hard-linked file through its own inode, so every name sees the change.

    The trade-off: an in-place write is not atomic. What can fail is made to fail before
    the first byte changes — the space the new content needs is reserved first
    (``posix_fallocate``, so a full disk or a size limit refuses the write up front) — and
    on any error while writing, the old bytes (kept in memory) are written back. Only a
    crash of the machine or a kill in the middle can leave a mix; the session's undo copy,
    taken before every write, still holds the old content then."""
    fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    try:
        old = _read_all(fd)
        if len(data) > len(old) and hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(fd, 0, len(data))
            except OSError as err:
                if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    os.ftruncate(fd, len(old))  # fallocate may have grown it before failing
                    raise
        try:
            _write_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                _write_all(fd, old)
                os.ftruncate(fd, len(old))
                os.fsync(fd)
            raise
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1024 * 1024):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    """``data`` written from offset 0 (``os.write`` may write less than asked)."""
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset:], offset)


def real_path(path: str | os.PathLike[str]) -> Path:
    """``path`` absolute with every symlink resolved, like ``Path.resolve()`` — but a
    symlink loop never raises (``Path.resolve`` raises ``RuntimeError`` on Python < 3.13);
    the looping part is left as it is."""
    return Path(os.path.realpath(path))


def expand_user(path: str | os.PathLike[str]) -> Path:
    """``Path(path).expanduser()``, except that ``~name`` for an unknown user (or no
    home directory) stays a literal name instead of raising."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return Path(path)


def walk_breadth_first(
    root: Path | str, max_entries: int, descend: Callable[[os.DirEntry[str], int], bool]
) -> Iterator[tuple[str, os.DirEntry[str], int]]:
    """Every entry under ``root``, breadth first and by name within a folder, as its
    ``/``-joined path from ``root``, the entry and its folder's depth (0: in ``root``). A
    folder (not a link to one) is entered when ``descend(entry, depth)``; unreadable ones are
    passed over. Stops after ``max_entries`` entries, counting those of every folder listed
    (blocking: call it in a worker thread)."""
    queue: deque[tuple[str, int]] = deque([("", 0)])
    seen = 0
    while queue:
        folder, depth = queue.popleft()
        try:
            with os.scandir(os.path.join(root, folder)) as entries:
                listing = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in listing:
            seen += 1
            if seen > max_entries:
                return
            relative = f"{folder}/{entry.name}" if folder else entry.name
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_folder and descend(entry, depth):
                queue.append((relative, depth + 1))
            yield relative, entry, depth
