"""The tools' seam to a front end's files and terminal: the ``ClientFiles`` and
``ClientTerminal`` protocols, the session-state keys, and the reads, writes and runs of
ReadFile, Edit, WriteFile and Bash through them. ``acp/editor_requests.py`` implements them
for editors.

An editor driving etcode (``etcode acp``) may serve file reads and writes itself, so the
model sees unsaved buffers and the editor sees every change, and may run commands in a
terminal it shows. The front end puts a :class:`ClientFiles` / :class:`ClientTerminal`
into the session state; ReadFile, Edit, WriteFile and Bash use them when present and the
disk or a local process otherwise. Nothing here imports a protocol.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from etcode.tools.base import ToolContext, ToolError
from etcode.tools.snapshot import after_write, before_write
from etcode.util.fs import atomic_write_bytes, read_regular_bytes

#: Session-state keys the front end fills.
FILES_KEY = "client_files"
TERMINAL_KEY = "client_terminal"


class ClientFileError(Exception):
    """The front end could not read or write a file (its message says why)."""


class ClientTerminalError(Exception):
    """The front end could not start a command (nothing ran)."""


@runtime_checkable
class ClientFiles(Protocol):
    can_read: bool
    can_write: bool

    async def read_text(self, path: Path) -> str:
        """The text the front end holds for ``path`` (an unsaved buffer included)."""
        ...

    async def write_text(self, path: Path, text: str) -> None:
        """Replace ``path``'s content with ``text`` through the front end."""
        ...


@dataclass(frozen=True)
class TerminalRun:
    """How a command run by the front end ended."""

    output: str
    exit_code: int
    timed_out: bool = False
    interrupted: bool = False
    truncated: bool = False
    terminal_id: str = ""


@runtime_checkable
class ClientTerminal(Protocol):
    async def run(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        timeout_s: float,
        abort: asyncio.Event,
        call_id: str,
    ) -> TerminalRun:
        """Run ``argv`` until it exits, ``timeout_s`` passes or ``abort`` is set (then it is
        killed). Raises :class:`ClientTerminalError` when the command could not start."""
        ...


def client_files(ctx: ToolContext) -> ClientFiles | None:
    files = ctx.state.get(FILES_KEY)
    return files if isinstance(files, ClientFiles) else None


def client_terminal(ctx: ToolContext) -> ClientTerminal | None:
    terminal = ctx.state.get(TERMINAL_KEY)
    return terminal if isinstance(terminal, ClientTerminal) else None


async def read_text(ctx: ToolContext, path: Path) -> str | None:
    """The front end's text of ``path``, or None when it does not read files or could not
    read this one (then the caller reads the disk)."""
    files = client_files(ctx)
    if files is None or not files.can_read:
        return None
    try:
        return await files.read_text(path)
    except ClientFileError:
        return None


async def write_text(ctx: ToolContext, path: Path, text: str, shown: str) -> bool:
    """Write ``text`` to ``path`` through the front end. False when it does not write files
    (the caller writes the disk); a failed write is a :class:`ToolError` and the disk is
    left alone, so a change never lands in two different places."""
    files = client_files(ctx)
    if files is None or not files.can_write:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # stray bytes kept as surrogates: only the disk keeps them exactly
        return False
    try:
        await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)  # as on disk
    except OSError as err:
        raise ToolError(f"Cannot write {shown}: {err.strerror or err}") from None
    try:
        await files.write_text(path, text)
    except ClientFileError as err:
        raise ToolError(f"Cannot write {shown}: {err}") from None
    return True


async def read_existing(ctx: ToolContext, path: Path) -> str | None:
    """What ``path`` holds now for a tool about to replace it: the front end's copy when it
    serves files, else the disk's (decoded leniently); None when there is no such file."""
    if not path.exists():
        return None
    text = await read_text(ctx, path)
    if text is not None:
        return text
    raw = await asyncio.to_thread(read_regular_bytes, path)
    return raw.decode("utf-8", errors="replace")


async def save_text(ctx: ToolContext, path: Path, text: str, shown: str) -> None:
    """Write a tool's new content of ``path``: through the front end when it writes files,
    else atomically to disk; with undo's before- and after-images around it. Stray bytes
    kept as surrogates (``surrogateescape``) are written back as they were."""
    await before_write(ctx, path)
    if not await write_text(ctx, path, text, shown):
        data = text.encode("utf-8", errors="surrogateescape")
        try:
            await asyncio.to_thread(atomic_write_bytes, path, data)
        except OSError as err:
            raise ToolError(f"Cannot write {shown}: {err.strerror or err}") from None
    await after_write(ctx, path)
