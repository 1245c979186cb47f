"""Persists one session while the loop runs.

The loop calls :meth:`SessionRecorder.checkpoint` whenever the history gained something
that must survive a crash — the prompt, each model answer before its tools run, each
tool-result message, the end of the run — and :meth:`step_finished` with each call's usage.
Only messages not yet stored are written, each call in one small transaction on the store's
writer thread. A new batch (clear, compaction) is stored whole by :meth:`batch_started`.
Without a store the recorder only keeps its counters (an in-memory agent).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec

from etcode.engine.compaction import NOTE_HEADER, is_summary
from etcode.provider.types import Message, Usage
from etcode.session.store import SessionStore
from etcode.util.json_types import JsonObject

log = logging.getLogger("etcode.recorder")

P = ParamSpec("P")


def _kind(message: Message) -> str:
    if is_summary(message):
        return "summary"
    if message.role == "user" and message.text.startswith(NOTE_HEADER):
        return "note"
    return "message"


class SessionRecorder:
    """Writes a session's messages, usage and todos to the store as they happen."""

    def __init__(
        self,
        store: SessionStore | None,
        session_id: str,
        *,
        stored: list[Message] | None = None,
        turn: int = 0,
        todos: Callable[[], list[JsonObject]] | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.turn = turn
        self.model = ""
        self._todos = todos
        self._saved_todos = json.dumps(todos() if todos else [], sort_keys=True)
        self._stored: list[Message] = list(stored or [])
        self._stored_ids = {id(m) for m in self._stored}
        #: Called with the session id before the first write (creates the session row).
        self.ensure: Callable[[], Awaitable[None]] | None = None

    async def _write(
        self, method: Callable[Concatenate[SessionStore, P], object], *args: P.args, **kwargs: P.kwargs
    ) -> None:
        """Run store method ``method`` on the writer thread (nothing without a store)."""
        store = self.store
        if store is None:
            return
        if self.ensure is not None:
            ensure, self.ensure = self.ensure, None
            await ensure()
        await store.call(method, store, *args, **kwargs)

    def _continues(self, messages: list[Message]) -> bool:
        """Whether ``messages`` extends what is stored (same objects, same order)."""
        n = len(self._stored)
        if len(messages) < n:
            return False
        return n == 0 or (messages[n - 1] is self._stored[-1] and messages[0] is self._stored[0])

    async def checkpoint(self, messages: list[Message]) -> None:
        """Store the messages not stored yet (and the todos when they changed)."""
        if not self._continues(messages):
            await self.batch_started(messages, "replace")
        else:
            new = messages[len(self._stored) :]
            if new:
                # The state moves first, so a concurrent checkpoint never writes twice; the
                # writer thread keeps the writes in submission order.
                self._stored.extend(new)
                self._stored_ids.update(id(m) for m in new)
                kinds = [_kind(m) for m in new]
                await self._write(
                    SessionStore.append_messages, self.session_id, list(new), turn=self.turn, kinds=kinds
                )
        await self._save_todos()

    async def batch_started(self, messages: list[Message], reason: str) -> None:
        """A new batch begins with ``messages`` (messages already stored are marked copies)."""
        kinds = ["copy" if id(m) in self._stored_ids else _kind(m) for m in messages]
        log.debug("new batch (%s) with %d messages", reason, len(messages))
        self._stored = list(messages)
        self._stored_ids = {id(m) for m in messages}
        await self._write(
            SessionStore.start_batch, self.session_id, list(messages), turn=self.turn, kinds=kinds
        )

    def assume_stored(self, messages: list[Message]) -> None:
        """Treat ``messages`` as the stored batch (nothing is written: used before the
        session has a row, e.g. a clear before the first turn)."""
        self._stored = list(messages)
        self._stored_ids = {id(m) for m in messages}

    async def step_finished(self, step: int, usage: Usage, cost: float | None) -> None:
        """One model call's usage and cost."""
        await self._write(
            SessionStore.record_usage,
            self.session_id,
            turn=self.turn,
            step=step,
            model=self.model,
            usage=usage,
            cost=cost,
        )

    async def usage_added(self, usage: Usage, cost: float | None, model: str) -> None:
        """Usage spent outside this conversation (a Task subagent's calls), stored as a
        step-0 row (like a compaction's: it does not describe this context's size)."""
        await self._write(
            SessionStore.record_usage,
            self.session_id,
            turn=self.turn,
            step=0,
            model=model or self.model,
            usage=usage,
            cost=cost,
        )

    async def _save_todos(self) -> None:
        if self._todos is None or self.store is None:
            return
        items = self._todos()
        encoded = json.dumps(items, sort_keys=True)
        if encoded != self._saved_todos:
            await self._write(SessionStore.save_todos, self.session_id, items)
            self._saved_todos = encoded
