"""The session database's tables and the migrations that build them.

Tables: ``sessions`` (one row per session, with denormalised totals for fast listing),
``messages`` (each message's parts as JSON, ordered by ``seq``, grouped in ``batch``es and
``turn``s; a message's ``kind`` is an ordinary new ``message``, a ``copy`` of one from an
earlier batch (compaction keeps the last turns), a compaction ``summary`` or an etcode
``note``), ``todos``, ``usage`` (one row per model call, with its cost) and ``snapshots``
(the before-image of every file WriteFile/Edit changed, per turn, for undo). The schema has
a version number (``PRAGMA user_version``) and a ``migrations`` table.
"""

from __future__ import annotations

import sqlite3
import time

SCHEMA_VERSION = 2

#: ``(version, name, SQL)``, oldest first: a database at version N gets the ones above N.
MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial",
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            project_id TEXT NOT NULL,
            directory TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            agent TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            updated REAL NOT NULL,
            parent_id TEXT,
            batch INTEGER NOT NULL DEFAULT 0,
            turn INTEGER NOT NULL DEFAULT 0,
            message_count INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL NOT NULL DEFAULT 0
        );
        CREATE INDEX sessions_by_project ON sessions (project_id, updated DESC);
        CREATE INDEX sessions_by_updated ON sessions (updated DESC);
        CREATE TABLE messages (
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            batch INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            role TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'message',
            parts TEXT NOT NULL,
            created REAL NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID;
        CREATE INDEX messages_by_batch ON messages (session_id, batch, seq);
        CREATE TABLE todos (
            session_id TEXT PRIMARY KEY,
            items TEXT NOT NULL,
            updated REAL NOT NULL
        );
        CREATE TABLE usage (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            batch INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            step INTEGER NOT NULL,
            model TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cache_read_tokens INTEGER NOT NULL,
            cache_write_tokens INTEGER NOT NULL,
            reasoning_tokens INTEGER NOT NULL,
            cost REAL,
            created REAL NOT NULL
        );
        CREATE INDEX usage_by_session ON usage (session_id, id);
        CREATE TABLE snapshots (
            session_id TEXT NOT NULL,
            turn INTEGER NOT NULL,
            path TEXT NOT NULL,
            existed INTEGER NOT NULL,
            content BLOB,
            undone INTEGER NOT NULL DEFAULT 0,
            created REAL NOT NULL,
            PRIMARY KEY (session_id, turn, path)
        );
        """,
    ),
    (
        2,
        "snapshot copies outside the database, and what etcode left",
        """
        ALTER TABLE snapshots ADD COLUMN copy TEXT NOT NULL DEFAULT 'db';
        ALTER TABLE snapshots ADD COLUMN size INTEGER;
        ALTER TABLE snapshots ADD COLUMN before_hash TEXT;
        ALTER TABLE snapshots ADD COLUMN after_size INTEGER;
        ALTER TABLE snapshots ADD COLUMN after_hash TEXT;
        """,
    ),
]


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the database up to :data:`SCHEMA_VERSION` in one transaction (another process
    may have migrated it meanwhile: the version is read again inside it)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
        )
        for version, name, sql in MIGRATIONS:
            if version <= current:
                continue
            for statement in (s.strip() for s in sql.split(";")):
                if statement:
                    conn.execute(statement)
            conn.execute("INSERT INTO migrations VALUES (?, ?, ?)", (version, name, time.time()))
            conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
