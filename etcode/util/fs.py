"""Filesystem helpers shared by the tools: binary sniffing, size format, near names,
atomic writes and line-ending / BOM handling."""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import stat
import tempfile
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
    """Sniff ``path``: known binary extensions, then the first ``sample_size`` bytes."""
    if path.suffix.lower() in BINARY_EXTENSIONS:
        return True
    with open(path, "rb") as handle:
        return looks_binary(handle.read(sample_size))


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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash never leaves a half-written file: to a
    temp file in the same folder, then ``os.replace`` over it, keeping the old mode bits.

    Links survive: a symlink is written through (its target gets the content, the link
    stays a link), and a file with several hard links is rewritten in place, because a
    rename would split it from its other names (see :func:`_write_in_place`)."""
    target = real_path(path) if os.path.islink(path) else path
    if target != path and os.path.islink(target):
        raise OSError(errno.ELOOP, "Too many levels of symbolic links", str(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        info = target.stat()
    except OSError:
        info = None
    if info is not None and info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
        _write_in_place(target, data)
        return
    mode = info.st_mode & 0o7777 if info is not None else None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
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
    """Rewrite a hard-linked file through its own inode. Not atomic, so the old bytes are
    kept in memory and put back if the write fails (a full disk fails while growing the
    file, and the old bytes fit where they were)."""
    old = path.read_bytes()
    with open(path, "r+b") as handle:
        try:
            handle.write(data)
            handle.truncate(len(data))
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.seek(0)
            handle.write(old)
            handle.truncate(len(old))
            handle.flush()
            raise


def detect_newline(text: str) -> str:
    """``"\\r\\n"`` when the text uses CRLF line endings (the majority), else ``"\\n"``."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def decode_text(data: bytes) -> tuple[str, bool]:
    """Decode UTF-8 (lenient), returning (text without BOM, had_bom)."""
    text = data.decode("utf-8", errors="replace")
    if text.startswith(BOM):
        return text[1:], True
    return text, False


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


def is_within(path: Path, root: Path) -> bool:
    """True when ``path`` (resolved) is ``root`` or inside it."""
    try:
        real_path(path).relative_to(real_path(root))
        return True
    except ValueError:
        return False


# ---- private files ---------------------------------------------------------------------

#: Modes of what holds transcripts (the session database, saved tool output, history).
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dir(folder: Path, tighten: bool = True) -> Path:
    """Create ``folder`` (and missing parents) as ``0700`` — it holds transcripts, for its
    owner's eyes only — and, with ``tighten``, take group/other access off an existing one
    (only for etcode's own folders: never a folder the user chose)."""
    existed = folder.is_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if tighten or not existed:
        _tighten(folder, PRIVATE_DIR_MODE)
    return folder


def make_private_file(path: Path) -> Path:
    """Create ``path`` if missing, as ``0600`` (tightening an existing file)."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE))
    _tighten(path, PRIVATE_FILE_MODE)
    return path


def _tighten(path: Path, mode: int) -> None:
    """Remove group/other bits from a path we own (others' files are left alone)."""
    with contextlib.suppress(OSError):
        info = path.stat()
        if info.st_uid == os.getuid() and info.st_mode & 0o077:
            os.chmod(path, stat.S_IMODE(info.st_mode) & mode)
