"""The session database's connection: opening, transactions, one-line errors, the writer thread.

SQLite at ``$XDG_DATA_HOME/etcode/etcode.db`` (WAL mode; the tables: ``schema.py``). Every
method of the store is synchronous, short, and thread-safe; async code runs them on the
store's single writer thread with :meth:`Database.call`, so writes stay in order and the
event loop never blocks. A database that is not readable raises :class:`StoreError` with one
line naming the file and how to start fresh — the file itself is never deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Self, TypeAlias, TypeVar

from etcode.session import message_files
from etcode.session.schema import SCHEMA_VERSION, migrate
from etcode.util.errors import EtcodeError
from etcode.util.private import private_dir, private_file, tighten

DB_NAME = "etcode.db"
#: An I/O error with less free space than this on the database's file system is a full disk.
_FULL_BELOW = 1024 * 1024

#: A value bound to a ``?`` of a query.
SqlValue: TypeAlias = str | int | float | bytes | None
#: A row a query returns: its columns' types are the SQL's (and the schema's) to decide, as
#: JSON's are the other side's, so each query's caller reads them as that query declares.
SqlRow: TypeAlias = tuple[Any, ...]

P = ParamSpec("P")
T = TypeVar("T")
D = TypeVar("D", bound="Database")


class StoreError(EtcodeError):
    """The session database cannot be used (damaged, locked, unreadable)."""


def default_path() -> Path:
    """``$XDG_DATA_HOME/etcode/etcode.db``."""
    from etcode.util.paths import data_dir

    return data_dir() / DB_NAME


def guarded(method: Callable[Concatenate[D, P], T]) -> Callable[Concatenate[D, P], T]:
    """Turn sqlite3 failures into one-line :class:`StoreError` messages."""

    @functools.wraps(method)
    def wrapper(store: D, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(store, *args, **kwargs)
        except sqlite3.Error as err:
            raise store._error(err) from None
        except message_files.MessageFileError as err:
            raise StoreError(err.strerror or str(err)) from None

    return wrapper


class Database:
    """One SQLite connection, its transactions and its writer thread; the store's rows
    (``*_rows.py``) are read and written through it."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.path = path
        self._conn = conn
        self._lock = threading.RLock()
        self._executor: ThreadPoolExecutor | None = None
        # Guards _executor and _users: callers on several threads share one store.
        self._executor_lock = threading.Lock()
        self._users = 0
        # The connection is closed by close(), else when the store is dropped, else as the
        # process exits: the last close folds the write-ahead log into the database. Left to
        # the interpreter, that waits on the garbage collector, which the CLI skips at exit.
        self._close_connection = weakref.finalize(self, conn.close)

    @classmethod
    def open(cls, path: Path | None = None) -> Self:
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
            migrate(conn)

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
        with self._executor_lock:
            executor, self._executor = self._executor, None
            self._users = 0
        if executor is not None:
            executor.shutdown(wait=True)
        with self._lock:
            self._close_connection()

    def acquire(self) -> None:
        """Count one more user of the writer thread (each one later calls :meth:`release`):
        while any user holds it, another's :meth:`release` leaves the thread running."""
        with self._executor_lock:
            self._users += 1

    def release(self) -> None:
        """One user is done: the last one (or a caller that never acquired) lets the writer
        thread end once its queued writes are done (it starts again on the next :meth:`call`);
        the connection stays open."""
        with self._executor_lock:
            if self._users > 0:
                self._users -= 1
            if self._users > 0 or self._executor is None:
                return
            executor, self._executor = self._executor, None
        executor.shutdown(wait=False)

    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a store method on the store's single writer thread (keeps writes in order
        and the event loop free)."""
        loop = asyncio.get_running_loop()
        call = functools.partial(fn, *args, **kwargs)
        with self._executor_lock:  # a release on another thread cannot come between
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="etcode-store")
            future = loop.run_in_executor(self._executor, call)
        return await future

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

    def _query(self, sql: str, args: Iterable[SqlValue] = ()) -> list[SqlRow]:
        with self._lock:
            return self._conn.execute(sql, tuple(args)).fetchall()
