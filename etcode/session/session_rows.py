"""A session's own rows: its entry in ``sessions`` (created, found by an id or a prefix of
it, listed, renamed) and its todo list."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from etcode.session.database import Database, guarded
from etcode.util.errors import EtcodeError
from etcode.util.json_types import JsonObject

_SESSION_COLUMNS = (
    "id, title, directory, agent, model, created, updated, message_count, cost, parent_id, "
    "project_id, batch, turn, input_tokens, output_tokens"
)
_SHOWN_MATCHES = 5  # the ids an ambiguous session prefix's error lists


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


class SessionRows(Database):
    """The ``sessions`` and ``todos`` tables."""

    @guarded
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

    @guarded
    def get_session(self, session_id: str) -> SessionInfo | None:
        rows = self._query(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
        return SessionInfo(*rows[0]) if rows else None

    @guarded
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

    @guarded
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

    @guarded
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

    # ---- todos ------------------------------------------------------------------------
    @guarded
    def save_todos(self, session_id: str, items: list[JsonObject]) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO todos (session_id, items, updated) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET items = excluded.items, updated = excluded.updated",
                (session_id, json.dumps(items, ensure_ascii=False), time.time()),
            )

    @guarded
    def load_todos(self, session_id: str) -> list[JsonObject]:
        rows = self._query("SELECT items FROM todos WHERE session_id = ?", (session_id,))
        return list(json.loads(rows[0][0])) if rows else []
