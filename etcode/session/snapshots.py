"""File before-images per turn, and undo that never eats later work.

Before WriteFile or Edit changes a file, :class:`FileSnapshots` keeps what the file held
(or that it did not exist) for the current turn — the first change of a turn wins — and
after each write it records the file's size and SHA-256 as etcode left it. Small copies
live in the database, larger ones (streamed) in the session's folder beside it, and files
over ``snapshot.maxFileBytes`` get no copy (a warning says so at the write).

Undo takes the latest turn with changes not yet undone and first checks every file: one
that no longer holds what etcode wrote (the user edited or deleted it since) makes undo
refuse, listing every such file, with nothing touched. ``force`` restores edited files
anyway (their later changes are overwritten) but never deletes a changed file the turn
created: it is kept, and the report says so. Files already back as they were before the
turn are left alone. Works the same with or without git, and in memory without a store.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from etcode.engine.compaction import NOTE_HEADER
from etcode.provider.types import Message
from etcode.session.snapshot_copies import (
    DEFAULT_MAX_FILE_BYTES,
    NOT_A_FILE,
    State,
    capture,
    restore_copy,
    sha256_file,
    state_of,
)
from etcode.session.store import SessionStore, Snapshot
from etcode.util.errors import EtcodeError
from etcode.util.fs import atomic_write_bytes, real_path

log = logging.getLogger("etcode.snapshots")

FORCE_HINT = (
    "to restore anyway, run `etcode undo --force` (edited files get their old content back, "
    "overwriting the later changes; a changed file the turn created is kept, never deleted)"
)


class UndoRefused(EtcodeError):
    """Files of the turn changed after etcode wrote them; nothing was undone."""

    def __init__(self, message: str, changed: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.changed = changed


@dataclass
class UndoItem:
    """What undo does (or did) with one file.

    ``action``: "restore" (old content back), "delete" (the turn created it), "same"
    (already as before the turn), "keep" (created by the turn and changed since: never
    deleted) or "lost" (no undo copy to restore from). ``changed``: why the file no longer
    holds what etcode wrote, or None."""

    path: str
    action: str
    changed: str | None = None
    detail: str = ""

    def line(self) -> str:
        """``path: what happened``, as ``etcode undo`` prints it."""
        text = {
            "restore": "restored",
            "delete": "deleted (it did not exist before)",
            "same": "already as before the turn",
            "keep": f"kept, not deleted: {self.changed} (the turn created it; delete it yourself if unwanted)",
            "lost": f"NOT restored: {self.detail}",
        }[self.action]
        if self.action == "restore" and self.changed:
            text += f" (--force: it had {self.changed}; those changes are overwritten)"
        return f"{self.path}: {text}"


@dataclass
class UndoReport:
    """The outcome of one undo: the turn and what happened to each of its files."""

    turn: int
    items: list[UndoItem] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        """Files put back as they were before the turn (restored, deleted, or already so)."""
        return [i.path for i in self.items if i.action in ("restore", "delete", "same")]

    @property
    def incomplete(self) -> bool:
        """Whether some file could not be put back (no undo copy)."""
        return any(i.action == "lost" for i in self.items)

    def lines(self) -> list[str]:
        return [i.line() for i in self.items]


# ---- planning and applying ----------------------------------------------------------------


def _copy_path(snap: Snapshot, folder: Path | None) -> Path | None:
    if snap.copy != "file" or folder is None or not snap.before_hash:
        return None
    return folder / snap.before_hash


def _before_hash(snap: Snapshot) -> str | None:
    if snap.before_hash:
        return snap.before_hash
    if snap.copy == "db" and snap.content is not None:
        return hashlib.sha256(snap.content).hexdigest()
    return None


def _matches(state: State, size: int | None, digest: str | None) -> bool:
    if size is None or digest is None or state is None or state == NOT_A_FILE:
        return False
    assert isinstance(state, tuple)
    return state[0] == size and state[1] == digest


def _plan_one(snap: Snapshot, folder: Path | None) -> UndoItem:
    path = Path(snap.path)
    before_hash = _before_hash(snap)
    before_size = (
        snap.size if snap.size is not None else (len(snap.content) if snap.content is not None else None)
    )
    sizes = {s for s in (snap.after_size, before_size) if s is not None}
    state = state_of(path, sizes)
    as_before = state is None if not snap.existed else _matches(state, before_size, before_hash)
    if as_before:
        return UndoItem(snap.path, "same")
    changed: str | None = None
    if not _matches(state, snap.after_size, snap.after_hash):
        if snap.after_hash is None:
            changed = "changes etcode has no record of (it cannot tell whether they were yours)"
        elif state is None:
            changed = "been deleted since etcode wrote it"
        elif state == NOT_A_FILE:
            changed = "been replaced by something that is not a regular file"
        else:
            changed = "changed since etcode wrote it"
    if not snap.existed:
        return UndoItem(snap.path, "keep" if changed else "delete", changed)
    if snap.copy == "none":
        size = f"{snap.size / 2**20:.1f} MB" if snap.size is not None else "too large"
        return UndoItem(
            snap.path,
            "lost",
            changed,
            f"no undo copy was kept (the file was {size}, over snapshot.maxFileBytes)",
        )
    copy = _copy_path(snap, folder)
    if snap.copy == "file" and (copy is None or not copy.is_file()):
        return UndoItem(snap.path, "lost", changed, f"its undo copy is missing ({copy or 'no folder'})")
    return UndoItem(snap.path, "restore", changed)


def plan(snapshots: list[Snapshot], folder: Path | None = None) -> list[UndoItem]:
    """What undoing these snapshots would do to each file (blocking: hashes files)."""
    return [_plan_one(snap, folder) for snap in snapshots]


def refusal(items: list[UndoItem]) -> UndoRefused | None:
    """The error that stops an undo without ``force``: every changed file, listed."""
    changed = [(i.path, i.changed) for i in items if i.changed and i.action != "same"]
    if not changed:
        return None
    listed = "; ".join(f"{path} has {why}" for path, why in changed)
    count = "1 file" if len(changed) == 1 else f"{len(changed)} files"
    return UndoRefused(
        f"nothing undone: {count} of the last changed turn no longer hold what etcode wrote: {listed}; "
        f"{FORCE_HINT}",
        [(p, w or "") for p, w in changed],
    )


def apply(items: list[UndoItem], snapshots: list[Snapshot], folder: Path | None = None) -> None:
    """Carry out a plan (blocking). "keep", "same" and "lost" items are left as they are."""
    by_path = {s.path: s for s in snapshots}
    for item in items:
        snap = by_path[item.path]
        path = Path(snap.path)
        if item.action == "delete":
            if path.is_file() or path.is_symlink():
                path.unlink()
        elif item.action == "restore":
            copy = _copy_path(snap, folder)
            if copy is not None:
                restore_copy(copy, path)
            else:
                atomic_write_bytes(path, snap.content or b"")


def restore(snapshots: list[Snapshot], *, force: bool = False, folder: Path | None = None) -> UndoReport:
    """Check, then put each snapshot's content back (deleting files the turn created).
    Raises :class:`UndoRefused` when files changed since etcode wrote them (unless
    ``force``); nothing is touched then."""
    items = plan(snapshots, folder)
    if not force and (error := refusal(items)) is not None:
        raise error
    apply(items, snapshots, folder)
    return UndoReport(snapshots[0].turn if snapshots else 0, items)


#: How the note telling the model about an undo begins (the chat's replay shows it as a notice).
UNDO_HEADER = f"{NOTE_HEADER} The user undid your file changes"


def undo_note(lines: list[str]) -> Message:
    """The message that tells the model its changes were undone (one line per file)."""
    listed = "\n".join(f"- {p}" for p in lines)
    return Message.user(
        f"{UNDO_HEADER} from an earlier turn (the latest one that "
        f"changed files). Each file and what undo did with it (restored: back to its content before "
        f"that turn; deleted: that turn created it):\n{listed}"
    )


def undo_last_turn(
    store: SessionStore, session_id: str, *, note: bool = False, force: bool = False
) -> UndoReport | None:
    """Undo the latest turn with changes not yet undone (blocking; the CLI's ``etcode
    undo``). None when there is nothing to undo. Raises :class:`UndoRefused` (see
    :func:`restore`). With ``note``, a message telling the model is appended to the session."""
    snapshots = store.last_snapshots(session_id)
    if not snapshots:
        return None
    folder = store.snapshot_dir(session_id)
    report = restore(snapshots, force=force, folder=folder)
    store.mark_undone(session_id, report.turn)
    _drop_unused_copies(store, session_id, snapshots, folder)
    if note:
        info = store.get_session(session_id)
        store.append_messages(
            session_id, [undo_note(report.lines())], turn=info.turn if info else 0, kinds=["note"]
        )
    return report


def _drop_unused_copies(
    store: SessionStore, session_id: str, snapshots: list[Snapshot], folder: Path
) -> None:
    names = {s.before_hash for s in snapshots if s.copy == "file" and s.before_hash}
    if not names:
        return
    for name in names - store.copies_in_use(session_id):
        with contextlib.suppress(OSError):
            (folder / name).unlink()


# ---- recording ------------------------------------------------------------------------------


class FileSnapshots:
    """The session's recorder of before-images (``ctx.state["snapshots"]``)."""

    def __init__(
        self,
        store: SessionStore | None,
        session_id: str,
        turn: int = 0,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.turn = turn
        self.max_file_bytes = max_file_bytes
        self._seen: set[tuple[int, str]] = set()
        self._memory: dict[int, dict[str, Snapshot]] = {}
        self._undone: set[int] = set()

    async def before_write(self, path: Path) -> str | None:
        """Keep ``path``'s content as it is before this turn's first change to it. A file
        is kept under its real path (symlinks resolved): changed by two names in one turn,
        it still has one before-image, and undo writes it back through any link. Returns a
        warning for the user when no copy could be kept (the file is over the cap)."""
        path = real_path(path)
        key = (self.turn, str(path))
        if key in self._seen:
            return None
        folder = self.store.snapshot_dir(self.session_id) if self.store is not None else None
        kept = await asyncio.to_thread(capture, path, folder, self.max_file_bytes)
        if self.store is not None:
            await self.store.call(
                self.store.save_snapshot,
                self.session_id,
                self.turn,
                str(path),
                kept.content,
                copy=kept.copy,
                size=kept.size,
                before_hash=kept.digest,
            )
        else:
            snap = Snapshot(
                self.turn, str(path), kept.content, kept.existed, kept.copy, kept.size, kept.digest
            )
            self._memory.setdefault(self.turn, {}).setdefault(str(path), snap)
        self._seen.add(key)
        if kept.copy == "none":
            size = f"{(kept.size or 0) / 2**20:.1f} MB"
            return (
                f"no undo copy of {path} ({size}, over snapshot.maxFileBytes = {self.max_file_bytes} "
                "bytes): `etcode undo` cannot restore it"
            )
        return None

    async def after_write(self, path: Path) -> None:
        """Record what ``path`` holds now that etcode wrote it (size and SHA-256), so undo
        can tell later changes from etcode's own."""
        path = real_path(path)
        size, digest = await asyncio.to_thread(sha256_file, path)
        if self.store is not None:
            await self.store.call(
                self.store.record_after, self.session_id, self.turn, str(path), size, digest
            )
            return
        snap = self._memory.get(self.turn, {}).get(str(path))
        if snap is not None:
            snap.after_size, snap.after_hash = size, digest

    async def undo(self, *, force: bool = False) -> UndoReport | None:
        """Undo the latest turn's changed files (see :func:`restore`); None when there is
        nothing to undo."""
        if self.store is not None:
            return await self.store.call(undo_last_turn, self.store, self.session_id, force=force)
        turns = [t for t in self._memory if t not in self._undone]
        if not turns:
            return None
        turn = max(turns)
        report = await asyncio.to_thread(restore, list(self._memory[turn].values()), force=force)
        self._undone.add(turn)
        return report
