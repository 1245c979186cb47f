"""A session's messages: each one's parts as JSON in a ``messages`` row (or, when too large
for a row, in a file beside the database: ``message_files.py``; images always in files of
their own: ``image_files.py``), in ``seq`` order, grouped in batches (a clear or a
compaction starts a new one) and turns."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from etcode.provider.types import Message
from etcode.session import image_files, message_files
from etcode.session.database import Database, guarded
from etcode.session.session_rows import SessionNotFoundError
from etcode.util.json_types import JsonObject
from etcode.util.text import clean_text


@dataclass
class StoredMessage:
    """A message with its place in the session."""

    seq: int
    batch: int
    turn: int
    kind: str
    created: float
    message: Message

    def to_dict(self) -> JsonObject:
        return {
            "seq": self.seq,
            "batch": self.batch,
            "turn": self.turn,
            "kind": self.kind,
            "created": self.created,
            **self.message.to_dict(),
        }


def encode(message: Message) -> str:
    """The JSON of ``message``'s parts, as a row holds it."""
    # clean_text: a surrogate that slipped past the entry points must not make the
    # message unsavable (SQLite stores UTF-8); it is kept as U+FFFD
    return clean_text(json.dumps(message.to_dict()["parts"], ensure_ascii=False, separators=(",", ":")))


def _decode(
    role: str, parts: str, folder: Path, images: Path | None, warnings: list[str] | None = None
) -> Message:
    """A row's message; its images' bytes read back from ``images`` (None: left empty)."""
    if message_files.is_marker(parts):  # a large message, kept in a file beside the database
        parts = message_files.load(folder, parts)
    message = Message.from_dict({"role": role, "parts": json.loads(parts)})
    return image_files.restore(message, images, warnings) if images is not None else message


class MessageRows(Database):
    """The ``messages`` table (and the files of its large messages)."""

    def _next_seq(self, conn: sqlite3.Connection, session_id: str) -> int:
        row = conn.execute("SELECT MAX(seq) FROM messages WHERE session_id = ?", (session_id,)).fetchone()
        return (row[0] or 0) + 1

    def _insert(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        messages: list[Message],
        kinds: list[str],
        *,
        batch: int,
        turn: int,
        now: float,
    ) -> int:
        """Insert ``messages`` after the session's last one; how many are new (not copies)."""
        seq = self._next_seq(conn, session_id)
        conn.executemany(
            "INSERT INTO messages (session_id, seq, batch, turn, role, kind, parts, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (session_id, seq + i, batch, turn, m.role, kind, self._row_parts(m), now)
                for i, (m, kind) in enumerate(zip(messages, kinds, strict=True))
            ],
        )
        return sum(1 for kind in kinds if kind != "copy")

    def _row_parts(self, message: Message) -> str:
        """The ``parts`` column of ``message``: its JSON, or the marker of the file that
        holds it when it is too large for a row."""
        encoded = encode(image_files.externalize(message, image_files.folder_of(self.path)))
        if len(encoded) <= message_files.FILE_LIMIT:
            return encoded
        return message_files.store(message_files.folder_of(self.path), encoded)

    def _remove_unreferenced_message_files(self) -> None:
        folder = message_files.folder_of(self.path)
        if not folder.is_dir():
            return
        rows = self._query(
            "SELECT parts FROM messages WHERE substr(parts, 1, ?) = ?",
            (len(message_files.MARKER_START), message_files.MARKER_START),
        )
        referenced = {name for (parts,) in rows if (name := message_files.name_in(parts))}
        message_files.remove_unreferenced(folder, referenced)

    def _remove_unreferenced_image_files(self) -> None:
        """Delete the images no message refers to any more (those of large messages too)."""
        folder = image_files.folder_of(self.path)
        if not folder.is_dir():
            return
        rows = self._query(
            "SELECT parts FROM messages WHERE instr(parts, '\"image\"') > 0 OR substr(parts, 1, ?) = ?",
            (len(message_files.MARKER_START), message_files.MARKER_START),
        )
        referenced: set[str] = set()
        files = message_files.folder_of(self.path)
        for (parts,) in rows:
            if message_files.is_marker(parts):
                try:
                    parts = message_files.load(files, parts)
                except message_files.MessageFileError:
                    continue
            referenced |= image_files.hashes_in(parts)
        image_files.remove_unreferenced(folder, referenced)

    @guarded
    def append_messages(
        self,
        session_id: str,
        messages: list[Message],
        *,
        turn: int,
        batch: int | None = None,
        kinds: list[str] | None = None,
    ) -> None:
        """Append messages to the session's current batch (or ``batch``) in one transaction."""
        if not messages:
            return
        now = time.time()
        kinds = kinds or ["message"] * len(messages)
        with self._tx() as conn:
            if batch is None:
                row = conn.execute("SELECT batch FROM sessions WHERE id = ?", (session_id,)).fetchone()
                batch = row[0] if row else 0
            new = self._insert(conn, session_id, messages, kinds, batch=batch, turn=turn, now=now)
            conn.execute(
                "UPDATE sessions SET message_count = message_count + ?, updated = ?, turn = MAX(turn, ?) "
                "WHERE id = ?",
                (new, now, turn, session_id),
            )

    @guarded
    def start_batch(
        self, session_id: str, messages: list[Message], *, turn: int, kinds: list[str] | None = None
    ) -> int:
        """Begin a new batch holding ``messages`` (a clear: none; a compaction: the summary
        and the kept turns). Returns the new batch number."""
        now = time.time()
        kinds = kinds or ["copy"] * len(messages)
        with self._tx() as conn:
            row = conn.execute("SELECT batch FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise SessionNotFoundError(f"no session {session_id}")
            batch = int(row[0]) + 1
            new = self._insert(conn, session_id, messages, kinds, batch=batch, turn=turn, now=now)
            conn.execute(
                "UPDATE sessions SET batch = ?, message_count = message_count + ?, updated = ? WHERE id = ?",
                (batch, new, now, session_id),
            )
        return batch

    @guarded
    def load_messages(
        self, session_id: str, batch: int | None = None, *, warnings: list[str] | None = None
    ) -> list[Message]:
        """The messages of the current batch (or of ``batch``), in order, with their images;
        an image whose file is gone is its label text and a line in ``warnings``."""
        if batch is None:
            rows = self._query("SELECT batch FROM sessions WHERE id = ?", (session_id,))
            if not rows:
                raise SessionNotFoundError(f"no session {session_id}")
            batch = rows[0][0]
        rows = self._query(
            "SELECT role, parts FROM messages WHERE session_id = ? AND batch = ? ORDER BY seq",
            (session_id, batch),
        )
        folder, images = message_files.folder_of(self.path), image_files.folder_of(self.path)
        return [_decode(role, parts, folder, images, warnings) for role, parts in rows]

    @guarded
    def transcript(self, session_id: str, *, images: bool = True) -> list[StoredMessage]:
        """Every stored message of the session (all batches), in order; ``images=False``
        leaves the images' bytes unread (``data`` empty: a replay shows their labels)."""
        rows = self._query(
            "SELECT seq, batch, turn, kind, created, role, parts FROM messages WHERE session_id = ? "
            "ORDER BY seq",
            (session_id,),
        )
        folder = message_files.folder_of(self.path)
        kept = image_files.folder_of(self.path) if images else None
        return [
            StoredMessage(s, b, t, k, c, _decode(role, parts, folder, kept))
            for s, b, t, k, c, role, parts in rows
        ]
