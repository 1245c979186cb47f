"""Undo's rows: the before-image of every file WriteFile/Edit changed, per turn, in the
``snapshots`` table (large copies beside the database, in :meth:`SnapshotRows.snapshot_dir`;
the undo itself: ``snapshots.py``)."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

from etcode.session.database import Database, guarded

#: Where a snapshot's old bytes are: in the database, in a file outside it (named by
#: ``before_hash`` in :meth:`SnapshotRows.snapshot_dir`), or nowhere (over the size cap).
SNAPSHOT_COPIES = ("db", "file", "none")


@dataclass
class Snapshot:
    """A file before a turn changed it, and as etcode's last write in the turn left it.

    ``existed`` False: the turn created the file. The old bytes are ``content`` (``copy``
    "db"), a file outside the database ("file") or not kept ("none": larger than the cap).
    ``after_size``/``after_hash`` (SHA-256): None when not recorded (the write failed, or
    the snapshot was taken by an older etcode)."""

    turn: int
    path: str
    content: bytes | None
    existed: bool = True
    copy: str = "db"
    size: int | None = None
    before_hash: str | None = None
    after_size: int | None = None
    after_hash: str | None = None


class SnapshotRows(Database):
    """The ``snapshots`` table."""

    def snapshot_dir(self, session_id: str) -> Path:
        """The folder of the session's undo copies kept outside the database (large files):
        ``snapshots/<session id>/`` beside the database file."""
        name = session_id
        if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,100}", name):
            name = "id-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.path.parent / "snapshots" / name

    @guarded
    def save_snapshot(
        self,
        session_id: str,
        turn: int,
        path: str,
        content: bytes | None,
        *,
        copy: str = "db",
        size: int | None = None,
        before_hash: str | None = None,
    ) -> bool:
        """Keep the before-image of ``path`` for ``turn`` (only the first one per turn
        counts). ``content`` None with ``copy`` "db": the file did not exist; see
        :class:`Snapshot` for ``copy``. Returns whether it was new."""
        if copy not in SNAPSHOT_COPIES:
            raise ValueError(f"copy must be one of {SNAPSHOT_COPIES}, not {copy!r}")
        existed = content is not None or copy != "db"
        if size is None and content is not None:
            size = len(content)
        with self._tx() as conn:
            added = conn.execute(
                "INSERT OR IGNORE INTO snapshots (session_id, turn, path, existed, content, created, "
                "copy, size, before_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, turn, path, existed, content, time.time(), copy, size, before_hash),
            ).rowcount
        return bool(added)

    @guarded
    def record_after(self, session_id: str, turn: int, path: str, size: int, digest: str) -> None:
        """Record what ``path`` holds after etcode's latest write to it in ``turn``."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE snapshots SET after_size = ?, after_hash = ? "
                "WHERE session_id = ? AND turn = ? AND path = ?",
                (size, digest, session_id, turn, path),
            )

    @guarded
    def last_snapshots(self, session_id: str) -> list[Snapshot]:
        """The before-images of the latest turn that has changes not yet undone."""
        rows = self._query(
            "SELECT MAX(turn) FROM snapshots WHERE session_id = ? AND undone = 0", (session_id,)
        )
        turn = rows[0][0] if rows else None
        if turn is None:
            return []
        found = self._query(
            "SELECT turn, path, existed, content, copy, size, before_hash, after_size, after_hash "
            "FROM snapshots WHERE session_id = ? AND turn = ? AND undone = 0 ORDER BY created, path",
            (session_id, turn),
        )
        return [
            Snapshot(
                t,
                p,
                bytes(c) if existed and c is not None else None,
                existed=bool(existed),
                copy=copy,
                size=size,
                before_hash=before,
                after_size=after_size,
                after_hash=after,
            )
            for t, p, existed, c, copy, size, before, after_size, after in found
        ]

    @guarded
    def mark_undone(self, session_id: str, turn: int) -> None:
        with self._tx() as conn:
            conn.execute(
                "UPDATE snapshots SET undone = 1 WHERE session_id = ? AND turn = ?", (session_id, turn)
            )

    @guarded
    def copies_in_use(self, session_id: str) -> set[str]:
        """Names (``before_hash``) of the outside copies that turns not yet undone need."""
        rows = self._query(
            "SELECT DISTINCT before_hash FROM snapshots WHERE session_id = ? AND copy = 'file' "
            "AND undone = 0",
            (session_id,),
        )
        return {row[0] for row in rows if row[0]}
