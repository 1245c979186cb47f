"""The session store: sessions, messages, todos, usage and file snapshots in one SQLite file.

:class:`SessionStore` is the rows of each table together (``session_rows.py``,
``message_rows.py``, ``usage_rows.py``, ``snapshot_rows.py``, on the connection of
``database.py``; the tables: ``schema.py``) and what spans them all: forking and deleting a
session. Every method is synchronous and thread-safe; async code runs them on the store's
writer thread with :meth:`SessionStore.call`.
"""

from __future__ import annotations

import shutil
import time

from etcode.session.database import guarded
from etcode.session.message_rows import MessageRows, StoredMessage
from etcode.session.session_rows import SessionInfo, SessionNotFoundError, SessionRows
from etcode.session.snapshot_rows import Snapshot, SnapshotRows
from etcode.session.usage_rows import UsageRows

__all__ = ["SessionInfo", "SessionNotFoundError", "SessionStore", "Snapshot", "StoredMessage"]


class SessionStore(SessionRows, MessageRows, UsageRows, SnapshotRows):
    """Sessions, messages, todos, usage and file snapshots in one SQLite file."""

    @guarded
    def delete_session(self, session_id: str) -> bool:
        """Delete a session and everything stored with it. False if there was none."""
        with self._tx() as conn:
            gone = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount
            for table in ("messages", "todos", "usage", "snapshots"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
        shutil.rmtree(self.snapshot_dir(session_id), ignore_errors=True)
        self._remove_unreferenced_message_files()
        self._remove_unreferenced_image_files()
        return bool(gone)

    @guarded
    def fork_session(self, source_id: str, new_id: str) -> SessionInfo:
        """Copy a session (messages of every batch and todos) under ``new_id``; the copy's
        ``parent_id`` is the source. Usage, cost and undo snapshots stay with the source."""
        now = time.time()
        with self._tx() as conn:
            copied = conn.execute(
                "INSERT INTO sessions (id, project_id, directory, title, agent, model, created, updated, "
                "parent_id, batch, turn, message_count) SELECT ?, project_id, directory, title, agent, "
                "model, ?, ?, id, batch, turn, message_count FROM sessions WHERE id = ?",
                (new_id, now, now, source_id),
            ).rowcount
            if not copied:
                raise SessionNotFoundError(f"no session {source_id} to fork")
            conn.execute(
                "INSERT INTO messages (session_id, seq, batch, turn, role, kind, parts, created) "
                "SELECT ?, seq, batch, turn, role, kind, parts, created FROM messages WHERE session_id = ?",
                (new_id, source_id),
            )
            conn.execute(
                "INSERT INTO todos (session_id, items, updated) SELECT ?, items, ? FROM todos "
                "WHERE session_id = ?",
                (new_id, now, source_id),
            )
        info = self.get_session(new_id)
        assert info is not None
        return info
