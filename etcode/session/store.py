"""The session store: SQLite at ``$XDG_DATA_HOME/etcode/etcode.db`` (WAL mode).

Tables: ``sessions`` (one row per session, with denormalised totals for fast listing),
``messages`` (each message's parts as JSON, ordered by ``seq``, grouped in ``batch``es and
``turn``s), ``todos``, ``usage`` (one row per model call, with its cost) and ``snapshots``
(the before-image of every file WriteFile/Edit changed, per turn, for undo; large files are
copied beside the database, see :meth:`SessionStore.snapshot_dir`). The schema has a
version number (``PRAGMA user_version``) and a ``migrations`` table.

Every method is synchronous, short, and thread-safe; async code runs them on the store's
single writer thread with :meth:`SessionStore.call`, so writes stay in order and the event
loop never blocks. A database that is not readable raises :class:`StoreError` with one line
naming the file and how to start fresh — the file itself is never deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from etcode.provider.types import Message, Usage
from etcode.session import message_files
from etcode.util.errors import EtcodeError
from etcode.util.json_types import JsonObject
from etcode.util.private import private_dir, private_file, tighten
from etcode.util.text import clean_text

DB_NAME = "etcode.db"
#: An I/O error with less free space than this on the database's file system is a full disk.
_FULL_BELOW = 1024 * 1024
SCHEMA_VERSION = 2

P = ParamSpec("P")
T = TypeVar("T")

# Message kinds: an ordinary new ``message``; a ``copy`` of one from an earlier batch
# (compaction keeps the last turns); a compaction ``summary``; an etcode ``note``.

_MIGRATIONS: list[tuple[int, str, str]] = [
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


class StoreError(EtcodeError):
    """The session database cannot be used (damaged, locked, unreadable)."""


class SessionNotFoundError(EtcodeError):
    """No stored session has the given id."""


class AmbiguousSessionError(SessionNotFoundError):
    """A session id prefix that starts more than one stored session's id."""


@dataclass
class SessionInfo:
    """One stored session, as listed by ``etcode sessions list``."""

    id: str
    title: str
    directory: str
    agent: str
    model: str
    created: float
    updated: float
    message_count: int
    cost: float
    parent_id: str | None = None
    project_id: str = ""
    batch: int = 0
    turn: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> JsonObject:
        return asdict(self)


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


#: Where a snapshot's old bytes are: in the database, in a file outside it (named by
#: ``before_hash`` in :meth:`SessionStore.snapshot_dir`), or nowhere (over the size cap).
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


_SESSION_COLUMNS = (
    "id, title, directory, agent, model, created, updated, message_count, cost, parent_id, "
    "project_id, batch, turn, input_tokens, output_tokens"
)
_SHOWN_MATCHES = 5  # the ids an ambiguous session prefix's error lists


def default_path() -> Path:
    """``$XDG_DATA_HOME/etcode/etcode.db``."""
    from etcode.util.paths import data_dir

    return data_dir() / DB_NAME


def _encode(message: Message) -> str:
    # clean_text: a surrogate that slipped past the entry points must not make the
    # message unsavable (SQLite stores UTF-8); it is kept as U+FFFD
    return clean_text(json.dumps(message.to_dict()["parts"], ensure_ascii=False, separators=(",", ":")))


def _decode(role: str, parts: str, folder: Path) -> Message:
    if message_files.is_marker(parts):  # a large message, kept in a file beside the database
        parts = message_files.load(folder, parts)
    return Message.from_dict({"role": role, "parts": json.loads(parts)})


def _guarded(method: Callable[Concatenate[SessionStore, P], T]) -> Callable[Concatenate[SessionStore, P], T]:
    """Turn sqlite3 failures into one-line :class:`StoreError` messages."""

    @functools.wraps(method)
    def wrapper(store: SessionStore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(store, *args, **kwargs)
        except sqlite3.Error as err:
            raise store._error(err) from None
        except message_files.MessageFileError as err:
            raise StoreError(err.strerror or str(err)) from None

    return wrapper


class SessionStore:
    """Sessions, messages, todos, usage and file snapshots in one SQLite file."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.path = path
        self._conn = conn
        self._lock = threading.RLock()
        self._executor: ThreadPoolExecutor | None = None
        # The connection is closed by close(), else when the store is dropped, else as the
        # process exits: the last close folds the write-ahead log into the database. Left to
        # the interpreter, that waits on the garbage collector, which the CLI skips at exit.
        self._close_connection = weakref.finalize(self, conn.close)

    # ---- opening ----------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | None = None) -> SessionStore:
        """Open (creating and migrating when needed) the store at ``path``
        (default ``$XDG_DATA_HOME/etcode/etcode.db``)."""
        default = path is None
        path = Path(path) if path is not None else default_path()
        try:
            # The database holds whole transcripts: etcode's folder 0700, the files 0600
            # (SQLite gives -wal/-shm the database's mode); looser ones are tightened.
            private_dir(path.parent, tighten_existing=default)
            private_file(path)
        except OSError as err:
            raise StoreError(f"cannot create {path}: {err.strerror or err}") from None
        for suffix in ("-wal", "-shm", "-journal"):
            tighten(f"{path}{suffix}")
        try:
            conn = sqlite3.connect(path, timeout=10, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open session database {path}: {err}") from None
        store = cls(conn, path)
        try:
            store._setup()
        except sqlite3.Error as err:
            conn.close()
            raise store._error(err) from None
        return store

    def _setup(self) -> None:
        conn = self._conn
        conn.execute("PRAGMA busy_timeout = 10000")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"session database {self.path} was written by a newer etcode (schema {version}, this "
                f"version knows {SCHEMA_VERSION}); upgrade etcode or move the file aside"
            )
        with contextlib.suppress(sqlite3.OperationalError):  # e.g. no shared memory on this filesystem
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # durable across crashes in WAL mode
        conn.execute("PRAGMA foreign_keys = OFF")
        if version < SCHEMA_VERSION:
            self._migrate(version)

    def _migrate(self, current: int) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may have won
            conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
            )
            for version, name, sql in _MIGRATIONS:
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

    def _error(self, err: sqlite3.Error) -> StoreError:
        if isinstance(err, StoreError):
            return err
        text = str(err) or type(err).__name__
        if self._disk_full(err, text):
            return StoreError(
                f"no space left on device for the session database {self.path} ({text}); free some "
                "space and try again"
            )
        if getattr(err, "sqlite_errorcode", None) == sqlite3.SQLITE_TOOBIG or "too big" in text:
            return StoreError(
                f"a message is too big for the session database {self.path} ({text}); the session "
                "is saved up to the step before it"
            )
        if "locked" in text or "busy" in text:
            return StoreError(f"session database {self.path} is busy ({text}); try again in a moment")
        if isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.IntegrityError):
            return StoreError(
                f"session database {self.path} is unreadable ({text}). To start fresh, move it "
                f'aside (mv "{self.path}" "{self.path}.broken"); etcode never deletes it'
            )
        return StoreError(f"session database {self.path}: {text}")

    def _disk_full(self, err: sqlite3.Error, text: str) -> bool:
        """SQLITE_FULL, or an I/O error (SQLite reports a failed write to the WAL or its
        index as one) on a file system with less than :data:`_FULL_BELOW` bytes free."""
        code = getattr(err, "sqlite_errorcode", None)
        if code == sqlite3.SQLITE_FULL or "disk is full" in text:
            return True
        if code is None or code & 0xFF != sqlite3.SQLITE_IOERR:
            return False
        try:
            stats = os.statvfs(self.path.parent)
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < _FULL_BELOW

    def close(self) -> None:
        """Close the connection and stop the writer thread."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        with self._lock:
            self._close_connection()

    def release(self) -> None:
        """Let the writer thread end once its queued writes are done (it starts again on
        the next :meth:`call`); the connection stays open."""
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a store method on the store's single writer thread (keeps writes in order
        and the event loop free)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="etcode-store")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, tuple(args)).fetchall()

    # ---- sessions ---------------------------------------------------------------------
    @_guarded
    def create_session(
        self,
        session_id: str,
        *,
        project_id: str,
        directory: str,
        title: str = "",
        agent: str = "",
        model: str = "",
        parent_id: str | None = None,
    ) -> SessionInfo:
        """Insert a new, empty session."""
        now = time.time()
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO sessions (id, project_id, directory, title, agent, model, created, updated, "
                "parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, project_id, directory, title, agent, model, now, now, parent_id),
            )
        info = self.get_session(session_id)
        assert info is not None
        return info

    @_guarded
    def get_session(self, session_id: str) -> SessionInfo | None:
        rows = self._query(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
        return SessionInfo(*rows[0]) if rows else None

    @_guarded
    def find_session(self, prefix: str, *, flag: str = "session") -> SessionInfo | None:
        """The session whose id is ``prefix`` or uniquely starts with it (None if none does);
        a prefix of several raises ``AmbiguousSessionError`` naming them (``flag`` is what
        the message calls the prefix: ``--session`` or ``session``)."""
        exact = self.get_session(prefix)
        if exact is not None or not prefix:
            return exact
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where = "FROM sessions WHERE id LIKE ? ESCAPE '\\'"
        rows = self._query(
            f"SELECT {_SESSION_COLUMNS} {where} ORDER BY id LIMIT ?", (pattern, _SHOWN_MATCHES)
        )
        if len(rows) <= 1:
            return SessionInfo(*rows[0]) if rows else None
        count = int(self._query(f"SELECT COUNT(*) {where}", (pattern,))[0][0])
        ids = ", ".join(str(row[0]) for row in rows) + (", …" if count > len(rows) else "")
        raise AmbiguousSessionError(f"{flag} {prefix} matches {count} sessions: {ids} — give more of the id")

    def resolve_session(self, prefix: str, *, flag: str = "session") -> SessionInfo:
        """The session ``prefix`` names (its id or a unique prefix of it): the one place a
        user's session id is read; an unknown or ambiguous one raises ``SessionNotFoundError``."""
        found = self.find_session(prefix, flag=flag)
        if found is None:
            raise SessionNotFoundError(f"no session {prefix} (see: etcode sessions list)")
        return found

    @_guarded
    def list_sessions(self, project_id: str | None = None, limit: int = 50) -> list[SessionInfo]:
        """Sessions, most recently updated first (of one project, or all)."""
        if project_id is None:
            rows = self._query(
                f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY updated DESC LIMIT ?", (limit,)
            )
        else:
            rows = self._query(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE project_id = ? ORDER BY updated DESC LIMIT ?",
                (project_id, limit),
            )
        return [SessionInfo(*row) for row in rows]

    def latest_session(self, project_id: str) -> SessionInfo | None:
        """The most recently updated session of ``project_id``."""
        found = self.list_sessions(project_id, limit=1)
        return found[0] if found else None

    @_guarded
    def update_session(self, /, session_id: str, **fields: str | None) -> None:
        """Set ``title``, ``agent``, ``model`` or ``directory`` (and ``updated``)."""
        allowed = {k: v for k, v in fields.items() if k in ("title", "agent", "model", "directory")}
        if not allowed:
            return
        sets = ", ".join(f"{key} = ?" for key in allowed)
        with self._tx() as conn:
            conn.execute(
                f"UPDATE sessions SET {sets}, updated = ? WHERE id = ?",
                (*allowed.values(), time.time(), session_id),
            )

    @_guarded
    def delete_session(self, session_id: str) -> bool:
        """Delete a session and everything stored with it. False if there was none."""
        with self._tx() as conn:
            gone = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount
            for table in ("messages", "todos", "usage", "snapshots"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
        shutil.rmtree(self.snapshot_dir(session_id), ignore_errors=True)
        self._remove_unreferenced_message_files()
        return bool(gone)

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

    @_guarded
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

    # ---- messages ---------------------------------------------------------------------
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
        encoded = _encode(message)
        if len(encoded) <= message_files.FILE_LIMIT:
            return encoded
        return message_files.store(message_files.folder_of(self.path), encoded)

    @_guarded
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

    @_guarded
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

    @_guarded
    def load_messages(self, session_id: str, batch: int | None = None) -> list[Message]:
        """The messages of the current batch (or of ``batch``), in order."""
        if batch is None:
            rows = self._query("SELECT batch FROM sessions WHERE id = ?", (session_id,))
            if not rows:
                raise SessionNotFoundError(f"no session {session_id}")
            batch = rows[0][0]
        rows = self._query(
            "SELECT role, parts FROM messages WHERE session_id = ? AND batch = ? ORDER BY seq",
            (session_id, batch),
        )
        folder = message_files.folder_of(self.path)
        return [_decode(role, parts, folder) for role, parts in rows]

    @_guarded
    def transcript(self, session_id: str) -> list[StoredMessage]:
        """Every stored message of the session (all batches), in order."""
        rows = self._query(
            "SELECT seq, batch, turn, kind, created, role, parts FROM messages WHERE session_id = ? "
            "ORDER BY seq",
            (session_id,),
        )
        folder = message_files.folder_of(self.path)
        return [
            StoredMessage(s, b, t, k, c, _decode(role, parts, folder)) for s, b, t, k, c, role, parts in rows
        ]

    # ---- todos and usage --------------------------------------------------------------
    @_guarded
    def save_todos(self, session_id: str, items: list[JsonObject]) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO todos (session_id, items, updated) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET items = excluded.items, updated = excluded.updated",
                (session_id, json.dumps(items, ensure_ascii=False), time.time()),
            )

    @_guarded
    def load_todos(self, session_id: str) -> list[JsonObject]:
        rows = self._query("SELECT items FROM todos WHERE session_id = ?", (session_id,))
        return list(json.loads(rows[0][0])) if rows else []

    @_guarded
    def record_usage(
        self, session_id: str, *, turn: int, step: int, model: str, usage: Usage, cost: float | None
    ) -> None:
        """One model call's usage and cost; the session's totals are updated with it."""
        now = time.time()
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO usage (session_id, batch, turn, step, model, input_tokens, output_tokens, "
                "cache_read_tokens, cache_write_tokens, reasoning_tokens, cost, created) "
                "SELECT ?, batch, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM sessions WHERE id = ?",
                (
                    session_id,
                    turn,
                    step,
                    model,
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    usage.reasoning_tokens,
                    cost,
                    now,
                    session_id,
                ),
            )
            conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                "cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?, "
                "cost = cost + ?, updated = ? WHERE id = ?",
                (
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    cost or 0.0,
                    now,
                    session_id,
                ),
            )

    @_guarded
    def last_context(self, session_id: str) -> int | None:
        """The size the model reported for the current batch's last call (input, cached input
        and answer), or None when the batch has had no call yet."""
        rows = self._query(
            "SELECT u.input_tokens + u.cache_read_tokens + u.cache_write_tokens + u.output_tokens "
            "FROM usage u JOIN sessions s ON s.id = u.session_id AND s.batch = u.batch "
            "WHERE u.session_id = ? AND u.step > 0 ORDER BY u.id DESC LIMIT 1",
            (session_id,),
        )
        return rows[0][0] if rows and rows[0][0] else None

    @_guarded
    def usage_rows(self, session_id: str) -> list[JsonObject]:
        rows = self._query(
            "SELECT turn, step, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
            "reasoning_tokens, cost, created FROM usage WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        keys = (
            "turn",
            "step",
            "model",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
            "cost",
            "created",
        )
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # ---- file snapshots ---------------------------------------------------------------
    def snapshot_dir(self, session_id: str) -> Path:
        """The folder of the session's undo copies kept outside the database (large files):
        ``snapshots/<session id>/`` beside the database file."""
        name = session_id
        if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,100}", name):
            name = "id-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.path.parent / "snapshots" / name

    @_guarded
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

    @_guarded
    def record_after(self, session_id: str, turn: int, path: str, size: int, digest: str) -> None:
        """Record what ``path`` holds after etcode's latest write to it in ``turn``."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE snapshots SET after_size = ?, after_hash = ? "
                "WHERE session_id = ? AND turn = ? AND path = ?",
                (size, digest, session_id, turn, path),
            )

    @_guarded
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

    @_guarded
    def mark_undone(self, session_id: str, turn: int) -> None:
        with self._tx() as conn:
            conn.execute(
                "UPDATE snapshots SET undone = 1 WHERE session_id = ? AND turn = ?", (session_id, turn)
            )

    @_guarded
    def copies_in_use(self, session_id: str) -> set[str]:
        """Names (``before_hash``) of the outside copies that turns not yet undone need."""
        rows = self._query(
            "SELECT DISTINCT before_hash FROM snapshots WHERE session_id = ? AND copy = 'file' "
            "AND undone = 0",
            (session_id,),
        )
        return {row[0] for row in rows if row[0]}
