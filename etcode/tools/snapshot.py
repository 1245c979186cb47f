"""The hook WriteFile and Edit call before changing a file, so the change can be undone.

The session puts a recorder in ``ctx.state["snapshots"]`` (see
``etcode.session.snapshots.FileSnapshots``); without one (tools used on their own) the
hook does nothing. A recorder that cannot keep the before-image fails the write, so a
change is never made that could not be undone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from etcode.tools.base import ToolContext, ToolError

STATE_KEY = "snapshots"


@runtime_checkable
class SnapshotRecorder(Protocol):
    async def before_write(self, path: Path) -> None:
        """Keep ``path``'s current content (or that it does not exist) for undo."""
        ...


async def before_write(ctx: ToolContext, path: Path) -> None:
    """Record ``path``'s before-image with the session's recorder, if there is one."""
    recorder = ctx.state.get(STATE_KEY)
    if recorder is None:
        return
    try:
        await recorder.before_write(path)
    except ToolError:
        raise
    except Exception as err:
        raise ToolError(f"Not changed: could not save an undo copy of {path} first ({err}).") from None
