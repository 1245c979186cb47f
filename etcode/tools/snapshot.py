"""The hook WriteFile and Edit call before changing a file, so the change can be undone.

The session puts a recorder in ``ctx.state["snapshots"]`` (see
``etcode.session.snapshots.FileSnapshots``); without one (tools used on their own) the
hook does nothing. A recorder that cannot keep the before-image fails the write, so a
change is never made that could not be undone — except a file over the recorder's size cap,
which is changed without a copy and a warning event says so. After the write,
:func:`after_write` lets the recorder note what etcode left, so undo can tell later changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from etcode.tools.base import ToolContext, ToolError

STATE_KEY = "snapshots"


@runtime_checkable
class SnapshotRecorder(Protocol):
    async def before_write(self, path: Path) -> str | None:
        """Keep ``path``'s current content (or that it does not exist) for undo. Returns a
        warning for the user when the change will not be undoable."""
        ...


@runtime_checkable
class WriteFollower(Protocol):
    async def after_write(self, path: Path) -> None:
        """Note what etcode left in ``path`` (undo refuses files changed since)."""
        ...


async def before_write(ctx: ToolContext, path: Path) -> None:
    """Record ``path``'s before-image with the session's recorder, if there is one."""
    recorder = ctx.state.get(STATE_KEY)
    if not isinstance(recorder, SnapshotRecorder):
        return
    try:
        warning = await recorder.before_write(path)
    except ToolError:
        raise
    except Exception as err:
        detail = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise ToolError(f"Not changed: could not save an undo copy of {path} first ({detail}).") from None
    if warning:
        from etcode.contract.events import WarningEvent

        ctx.emit(WarningEvent(warning))


async def after_write(ctx: ToolContext, path: Path) -> None:
    """Tell the recorder what ``path`` holds now that the tool wrote it. A failure here
    only costs undo its check: the file is written, so the tool does not fail."""
    recorder = ctx.state.get(STATE_KEY)
    if not isinstance(recorder, WriteFollower):
        return
    try:
        await recorder.after_write(path)
    except Exception as err:
        from etcode.contract.events import WarningEvent

        ctx.emit(WarningEvent(f"could not record what etcode wrote to {path} for undo ({err})"))
