"""What each model call of a session used and cost: one ``usage`` row per call, summed into
the session's totals as it is recorded."""

from __future__ import annotations

import time

from etcode.provider.types import Usage
from etcode.session.database import Database, guarded
from etcode.util.json_types import JsonObject

_USAGE_COLUMNS = (
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


class UsageRows(Database):
    """The ``usage`` table."""

    @guarded
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

    @guarded
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

    @guarded
    def usage_rows(self, session_id: str) -> list[JsonObject]:
        rows = self._query(
            "SELECT turn, step, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
            "reasoning_tokens, cost, created FROM usage WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        return [dict(zip(_USAGE_COLUMNS, row, strict=True)) for row in rows]
