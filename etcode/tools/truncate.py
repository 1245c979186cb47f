"""Cut long tool output for the model and keep the full text on disk.

Output over :data:`MAX_LINES` lines or :data:`MAX_BYTES` bytes is reduced to its head
(or tail, for command output) plus a note that gives the path of a file holding the
full text under ``$XDG_DATA_HOME/etcode/tool-output/`` (``~/.local/share`` fallback), a
folder only its owner can open (``0700``, files ``0600``).
Applying it twice is harmless: truncated text is already within the limits. Known secret
values are redacted before the cut, so neither the head nor the saved file holds one.
"""

from __future__ import annotations

import stat
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from etcode.security.redact import redact_known
from etcode.util.fs import format_size
from etcode.util.paths import tool_output_dir
from etcode.util.private import private_dir, private_file, tighten

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
RETENTION_SECONDS = 7 * 24 * 3600
_NOTE_RESERVE = 600
_cleaned = False
_pending: dict[str, threading.Thread] = {}
_pending_lock = threading.Lock()
#: Outputs at least this large are saved in a background thread.
BACKGROUND_SAVE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Truncated:
    """``text`` is what the model sees; ``path`` holds the full output when cut."""

    text: str
    truncated: bool
    path: str | None = None


def output_dir() -> Path:
    """Folder of saved full outputs: ``$XDG_DATA_HOME/etcode/tool-output``."""
    return tool_output_dir()


def _cleanup(folder: Path) -> None:
    """Remove saved outputs older than the retention period, and make the others the
    owner's alone if an older etcode left them readable (once per process)."""
    global _cleaned
    if _cleaned:
        return
    _cleaned = True
    cutoff = time.time() - RETENTION_SECONDS
    try:
        for entry in folder.iterdir():
            try:
                info = entry.stat()
                if not stat.S_ISREG(info.st_mode):
                    continue
                if info.st_mtime < cutoff:
                    entry.unlink()
                elif info.st_mode & 0o077:
                    tighten(entry)
            except OSError:
                continue
    except OSError:
        pass


#: A background save writes this much at a time: each write gives the GIL back, and a
#: thread waiting for the GIL waits up to 5 ms, so fewer, larger writes disturb less.
WRITE_CHUNK_BYTES = 4 * 1024 * 1024


def _write(path: Path, text: str | list[str], redact: bool = False) -> None:
    try:
        with open(path, "wb") as handle:
            pieces = [text] if isinstance(text, str) else text
            batch: list[bytes] = []
            size = 0
            for piece in pieces:
                encoded = (redact_known(piece) if redact else piece).encode("utf-8")
                batch.append(encoded)
                size += len(encoded)
                if size >= WRITE_CHUNK_BYTES:
                    handle.write(b"".join(batch))
                    batch.clear()
                    size = 0
            handle.write(b"".join(batch))
    finally:
        with _pending_lock:
            _pending.pop(str(path), None)


def save_output(text: str | list[str], background: bool = False, *, redact: bool = True) -> Path:
    """Write ``text`` (or its pieces, in order) to a new file in :func:`output_dir` and
    return its path, known secret values redacted (unless ``redact`` is False: the text
    already is). With ``background`` the (large) write finishes in a thread, redaction
    included; :func:`wait_saved` waits for it (the file tools do before reading a path),
    and the interpreter waits at exit."""
    folder = output_dir()
    private_dir(folder.parent)  # etcode's data folder (the session database is there too)
    private_dir(folder)
    _cleanup(folder)
    path = private_file(folder / f"tool_{time.strftime('%Y%m%d_%H%M%S')}_{uuid.uuid4().hex[:8]}.txt")
    if not background:
        _write(path, text, redact)
        return path
    writer = threading.Thread(
        target=_write, args=(path, text, redact), name="etcode-save-output", daemon=False
    )
    with _pending_lock:
        _pending[str(path)] = writer
    writer.start()
    return path


def is_pending(path: str | Path) -> bool:
    """True while a background save of ``path`` is still writing."""
    with _pending_lock:
        return str(path) in _pending


def wait_saved(path: str | Path, timeout: float | None = 30.0) -> None:
    """Block until a background save of ``path`` (if any) has finished."""
    with _pending_lock:
        writer = _pending.get(str(path))
    if writer is not None:
        writer.join(timeout)


def _byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def needs_truncation(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> bool:
    """True when ``text`` has more than ``max_lines`` lines or ``max_bytes`` UTF-8 bytes."""
    if len(text) > max_bytes:  # a character is at least one byte
        return True
    if len(text) <= max_bytes // 4 and text.count("\n") < max_lines:
        return False
    return text.count("\n") + 1 > max_lines or _byte_len(text) > max_bytes


def _fit_bytes(piece: str, budget: int, from_end: bool) -> str:
    """``piece`` cut to ``budget`` UTF-8 bytes at a line boundary when there is one."""
    if _byte_len(piece) <= budget:
        return piece
    data = piece.encode("utf-8")
    if from_end:
        cut = data[-budget:].decode("utf-8", errors="ignore")
        newline = cut.find("\n")
        return cut[newline + 1 :] if 0 <= newline < len(cut) - 1 else cut
    cut = data[:budget].decode("utf-8", errors="ignore")
    newline = cut.rfind("\n")
    return cut[:newline] if newline > 0 else cut


def _head(text: str, lines: int, budget: int) -> str:
    end = -1
    for _ in range(lines):
        end = text.find("\n", end + 1)
        if end == -1:
            end = len(text)
            break
    return _fit_bytes(text[: max(end, 0)], budget, from_end=False)


def _tail(text: str, lines: int, budget: int) -> str:
    start = len(text)
    for _ in range(lines):
        start = text.rfind("\n", 0, start)
        if start == -1:
            break
    return _fit_bytes(text[start + 1 :], budget, from_end=True)


def _save_full(text: str | list[str], size: int, redact: bool) -> tuple[str | None, str]:
    """Save the full output; its path (None when saving failed) and a sentence saying where."""
    try:
        path = str(save_output(text, background=size >= BACKGROUND_SAVE_BYTES, redact=redact))
    except OSError as err:
        return None, f"The full output could not be saved ({err.strerror or err})."
    return (
        path,
        f"The full output was saved to {path}; read it with ReadFile (offset/limit) or search it with Grep.",
    )


def save_full_output(parts: list[str]) -> tuple[str | None, str]:
    """Save the full text ``parts`` (redacted, in the background when large): its path
    (None when saving failed) and a sentence for the model saying where it is."""
    return _save_full(parts, sum(map(len, parts)), redact=True)


def _note(body: str, total_lines: int, total_bytes: int, where: str) -> str:
    omitted = total_lines - (body.count("\n") + 1 if body else 0)
    return (
        f"[... output truncated: {omitted} of {total_lines} lines omitted "
        f"({format_size(total_bytes)} in total). {where}]"
    )


def truncate_output(
    text: str,
    *,
    max_lines: int = MAX_LINES,
    max_bytes: int = MAX_BYTES,
    direction: Literal["head", "tail"] = "head",
    line_count: int | None = None,
) -> Truncated:
    """Keep the head (or tail) of ``text`` within the limits, saving the full text.
    ``line_count`` (when the caller knows it, roughly) saves counting a huge text."""
    if not needs_truncation(text, max_lines, max_bytes):
        return Truncated(text, False)  # the scheduler redacts what it passes on
    text = redact_known(text)  # before the cut (a key split by it would escape) and the save
    budget = max(max_bytes - _NOTE_RESERVE, max_bytes // 2)
    keep_lines = max(max_lines - 3, 1)
    body = _tail(text, keep_lines, budget) if direction == "tail" else _head(text, keep_lines, budget)
    path, where = _save_full(text, len(text), redact=False)
    total = line_count if line_count is not None else text.count("\n") + 1
    note = _note(body, total, _byte_len(text), where)
    result = f"{note}\n\n{body}" if direction == "tail" else f"{body}\n\n{note}"
    return Truncated(result, True, path)


#: Tools whose output matters most at its end (command output: errors come last).
TAIL_TOOLS = frozenset({"Bash", "BashOutput"})


def truncate_for_model(tool_name: str, output: str) -> str:
    """The scheduler's output filter: any tool's output cut to the limits (the tail for
    Bash, the head otherwise), the full text saved. Already-cut output passes unchanged."""
    direction: Literal["head", "tail"] = "tail" if tool_name in TAIL_TOOLS else "head"
    return truncate_output(output, direction=direction).text
