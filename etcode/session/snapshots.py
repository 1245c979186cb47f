"""File before-images per turn, and undo.

Before WriteFile or Edit changes a file, :class:`FileSnapshots` keeps what the file held
(or that it did not exist) for the current turn — the first change of a turn wins. Undo
restores the latest turn that has changes not yet undone: files get their old bytes back,
files the turn created are deleted. Works the same with or without git, and in memory when
the session has no store.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from etcode.provider.types import Message
from etcode.session.compaction import NOTE_HEADER
from etcode.session.store import SessionStore, Snapshot
from etcode.util.fs import atomic_write_bytes, real_path

log = logging.getLogger("etcode.snapshots")


def _read_before(path: Path) -> bytes | None:
    if not path.exists():
        return None
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    return path.read_bytes()


def restore(snapshots: list[Snapshot]) -> list[str]:
    """Put each snapshot's content back (deleting files that did not exist). Returns the
    paths handled, in order."""
    done: list[str] = []
    for snap in snapshots:
        path = Path(snap.path)
        if snap.content is None:
            if path.is_file() or path.is_symlink():
                path.unlink()
        else:
            atomic_write_bytes(path, snap.content)
        done.append(snap.path)
    return done


def undo_note(paths: list[str]) -> Message:
    """The message that tells the model its changes were undone."""
    listed = "\n".join(f"- {p}" for p in paths)
    return Message.user(
        f"{NOTE_HEADER} The user undid your file changes from an earlier turn (the latest one that "
        f"changed files). These files are back to their content before that turn (files it created "
        f"are deleted):\n{listed}"
    )


def undo_last_turn(store: SessionStore, session_id: str, *, note: bool = False) -> list[str]:
    """Restore the files of the latest turn with changes not yet undone (blocking; the
    CLI's ``etcode undo``). With ``note``, a message telling the model is appended to the
    session. Returns the restored paths; empty when there is nothing to undo."""
    snapshots = store.last_snapshots(session_id)
    if not snapshots:
        return []
    paths = restore(snapshots)
    store.mark_undone(session_id, snapshots[0].turn)
    if note:
        info = store.get_session(session_id)
        store.append_messages(session_id, [undo_note(paths)], turn=info.turn if info else 0, kinds=["note"])
    return paths


class FileSnapshots:
    """The session's recorder of before-images (``ctx.state["snapshots"]``)."""

    def __init__(self, store: SessionStore | None, session_id: str, turn: int = 0) -> None:
        self.store = store
        self.session_id = session_id
        self.turn = turn
        self._seen: set[tuple[int, str]] = set()
        self._memory: dict[int, dict[str, bytes | None]] = {}
        self._undone: set[int] = set()

    async def before_write(self, path: Path) -> None:
        """Keep ``path``'s content as it is before this turn's first change to it. A file
        is kept under its real path (symlinks resolved): changed by two names in one turn,
        it still has one before-image, and undo writes it back through any link."""
        path = real_path(path)
        key = (self.turn, str(path))
        if key in self._seen:
            return
        content = await asyncio.to_thread(_read_before, path)
        if self.store is not None:
            await self.store.call(self.store.save_snapshot, self.session_id, self.turn, str(path), content)
        else:
            self._memory.setdefault(self.turn, {}).setdefault(str(path), content)
        self._seen.add(key)

    async def undo(self) -> list[str]:
        """Restore the latest turn's changed files; returns their paths."""
        if self.store is not None:
            return await self.store.call(undo_last_turn, self.store, self.session_id)
        turns = [t for t in self._memory if t not in self._undone]
        if not turns:
            return []
        turn = max(turns)
        snaps = [Snapshot(turn, p, c) for p, c in self._memory[turn].items()]
        paths = await asyncio.to_thread(restore, snaps)
        self._undone.add(turn)
        return paths
