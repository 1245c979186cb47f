"""Running ``rg`` (ripgrep) for the search tools, with a pure-Python fallback for
listing files when it is not installed."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Literal

from etcode.util.ignore import SEARCH_EXCLUDES, IgnoreMatcher
from etcode.util.process_group import forget_if_gone, kill_group, start_process

RG_TIMEOUT_SECONDS = 60.0


def rg_path() -> str | None:
    """The ``rg`` executable: on PATH, or next to the Python running etcode (the
    ``ripgrep`` wheel installs it there). None when missing."""
    found = shutil.which("rg")
    if found:
        return found
    beside = Path(sys.executable).parent / "rg"
    return str(beside) if beside.is_file() else None


def exclude_args(excludes: tuple[str, ...] = SEARCH_EXCLUDES) -> list[str]:
    """``--glob !name`` arguments for folders ripgrep should never enter."""
    args: list[str] = []
    for pattern in excludes:
        args += ["--glob", "!" + pattern.rstrip("/")]
    return args


class RipgrepError(Exception):
    """ripgrep failed (bad regex, bad glob...); the message is ripgrep's own."""


async def run_rg(
    args: list[str], cwd: Path, abort: asyncio.Event | None = None, timeout: float = RG_TIMEOUT_SECONDS
) -> tuple[int, bytes]:
    """Run ``rg args`` in ``cwd``; return (exit code, stdout). Exit 2 raises :class:`RipgrepError`.
    Killed on ``abort`` or after ``timeout`` seconds."""
    exe = rg_path()
    if exe is None:
        raise FileNotFoundError("rg")
    proc = await start_process(  # a cancel during the start kills it too
        exe,
        *args,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    talk = asyncio.create_task(proc.communicate())
    waits: set[asyncio.Task[tuple[bytes, bytes]] | asyncio.Task[Literal[True]]] = {talk}
    stopper = asyncio.create_task(abort.wait()) if abort is not None else None
    if stopper is not None:
        waits.add(stopper)
    try:
        done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if talk not in done:
            kill_group(proc.pid)
            await talk
            raise RipgrepError("interrupted" if stopper in done else f"search timed out after {timeout:g} s")
    except asyncio.CancelledError:
        kill_group(proc.pid)
        raise
    finally:
        if stopper is not None:
            stopper.cancel()
    forget_if_gone(proc)
    stdout, stderr = talk.result()
    code = proc.returncode or 0
    if code == 2 and not stdout:
        message = stderr.decode("utf-8", errors="replace").strip()
        raise RipgrepError(message.splitlines()[-1] if message else "ripgrep failed")
    return code, stdout


async def list_files(
    base: Path, root: Path, abort: asyncio.Event | None = None, glob: str | None = None
) -> list[Path]:
    """Every file under ``base`` not ignored (.gitignore, :data:`SEARCH_EXCLUDES`), hidden
    files included. ``glob`` (gitignore/ripgrep syntax) narrows the listing. Uses rg when
    available, else walks with pathspec."""
    if rg_path() is not None:
        args = ["--files", "--hidden", "--no-require-git", "--no-messages", *exclude_args()]
        if glob:
            args += ["--glob", glob]
        _, out = await run_rg(args, base, abort)
        return [base / line for line in out.decode("utf-8", errors="surrogateescape").splitlines() if line]
    matcher = IgnoreMatcher(root, default_excludes=SEARCH_EXCLUDES)
    return await asyncio.to_thread(lambda: list(matcher.walk(base)))
