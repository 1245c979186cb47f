"""The stored side of an ``Agent``: which session it is, its history, and the operations
on it — resume, fork, clear, compact, undo, titles, announcing tools added later.

``Agent`` (``etcode/api.py``) delegates here so the public class stays small.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.contract import events as ev
from etcode.engine.compaction import announcement, is_announcement
from etcode.engine.history import repair_dangling
from etcode.engine.title import generate_title, title_from_text
from etcode.provider.types import Message, Usage
from etcode.session.lock import SessionLock
from etcode.session.recorder import SessionRecorder
from etcode.session.snapshots import FileSnapshots, UndoReport, undo_note
from etcode.session.store import SessionInfo, SessionNotFoundError, SessionStore
from etcode.tools.snapshot import STATE_KEY
from etcode.util.errors import EtcodeError
from etcode.util.ids import new_id
from etcode.util.json_types import JsonObject
from etcode.util.tokens import preload

if TYPE_CHECKING:
    from etcode.engine.compaction import CompactionResult
    from etcode.engine.window import ContextWindow
    from etcode.provider.spec import ProviderSpec
    from etcode.tools.base import Tool
    from etcode.wiring.runtime import Runtime
    from etcode.wiring.settings import AgentSettings

log = logging.getLogger("etcode.session")

TITLE_WAIT = 5.0
EventSink = Callable[[ev.Event], None]


def _todos_of(state: dict[str, object]) -> list[JsonObject]:
    return [dict(item) for item in getattr(state.get("todos"), "items", []) or []]


def _project(directory: Path | None) -> tuple[str, Path]:
    from etcode.instance import Instance, describe

    current = Instance.maybe()
    if current is not None and (directory is None or current.directory == directory):
        return current.project_id, current.directory
    info = describe(directory or Path.cwd())
    return info.project_id, info.directory


def _unique(messages: Iterable[Message]) -> list[Message]:
    seen: set[str] = set()
    out = []
    for message in messages:
        if message.text not in seen:
            seen.add(message.text)
            out.append(message)
    return out


def _configured_max_tokens(spec: ProviderSpec) -> int | None:
    """The provider's ``options.max_tokens`` (sent as it is), so the budget keeps room for it."""
    options = spec.options or {}
    for key in ("max_tokens", "max_completion_tokens"):
        value = options.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _chosen_store(
    store: SessionStore | None | bool, session_id: str | None, *, continue_last: bool, fork: bool
) -> SessionStore | None:
    """The store the session lives in: ``True`` the default one, ``None`` the default one
    when a session is asked for (an id, ``continue_last`` or ``fork``), ``False`` none
    (then ``continue_last`` and ``fork`` are a ``ValueError``)."""
    if store is False:
        if continue_last or fork:
            raise ValueError("continue_last and fork need a session store (store=False was given)")
        return None
    if store is True or (store is None and (continue_last or fork or session_id)):
        store = SessionStore.open()
    return store if isinstance(store, SessionStore) else None


@dataclass(frozen=True)
class _Target:
    """The stored session asked for (None: a new one), the project ``continue_last`` looked
    in, and what the user is told."""

    target: str | None
    project: tuple[str, Path] | None
    warnings: list[str]


def _stored_target(
    store: SessionStore, session_id: str | None, *, continue_last: bool, fork: bool, directory: Path | None
) -> _Target:
    """The session ``session_id`` names (a prefix), else with ``continue_last`` the project's
    latest; forking needs one of them to exist."""
    warnings: list[str] = []
    target: str | None = None
    project: tuple[str, Path] | None = None
    if session_id:
        found = store.find_session(session_id)
        target = found.id if found else None
        if found is None and fork:
            raise SessionNotFoundError(f"no session {session_id} to fork (see: etcode sessions list)")
    elif continue_last:
        project = _project(directory)
        latest = store.latest_session(project[0])
        target = latest.id if latest else None
        if latest is None:
            warnings.append("no earlier session in this project; starting a new one")
    if fork and target is None:
        raise SessionNotFoundError("nothing to fork: give --session ID or use --continue with --fork")
    return _Target(target, project, warnings)


class AgentSession:
    """One agent's session: store (or none), id, recorder, snapshots and context window."""

    def __init__(
        self,
        store: SessionStore | None,
        session_id: str,
        *,
        fork_from: str | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.fork_from = fork_from
        self.info: SessionInfo | None = None
        self.recorder = SessionRecorder(store, session_id)
        self.snapshots = FileSnapshots(store, session_id)
        self.window: ContextWindow | None = None
        self.warnings = list(warnings or [])
        self._pending_tools: list[Message] = []
        self._pending_batch: tuple[list[Message], str] | None = None
        self._created = False
        self._creating: asyncio.Future[None] | None = None
        self._title_task: asyncio.Task[None] | None = None
        self._first_task = ""
        #: A new session whose title waits for its hooks to pass the prompt (``title_turn``).
        self._title_due = False
        self._meta: dict[str, str] = {}
        self._project: tuple[str, Path] | None = None
        #: The session that started this one (a Task subagent's parent), stored as parent_id.
        self.parent_id: str | None = None
        #: Held while the session is open: another process may not write it meanwhile.
        self._lock: SessionLock | None = None
        #: This session counts as a user of the store's writer thread (``store.acquire``).
        self._holds_store = False
        #: Opened once (:meth:`open`): a later hold takes the session's lock again.
        self._opened = False

    # ---- choosing the session ----------------------------------------------------------
    @classmethod
    def resolve(
        cls,
        store: SessionStore | None | bool,
        session_id: str | None,
        *,
        continue_last: bool = False,
        fork: bool = False,
        directory: Path | None = None,
    ) -> AgentSession:
        """Pick the store and the session id (see ``Agent`` for the rules)."""
        chosen = _chosen_store(store, session_id, continue_last=continue_last, fork=fork)
        if chosen is None:
            return cls(None, session_id or new_id("ses"))
        found = _stored_target(
            chosen, session_id, continue_last=continue_last, fork=fork, directory=directory
        )
        if fork:
            session = cls(chosen, new_id("ses"), fork_from=found.target, warnings=found.warnings)
        else:
            session = cls(chosen, found.target or session_id or new_id("ses"), warnings=found.warnings)
        session._project = found.project
        return session

    # ---- opening -----------------------------------------------------------------------
    async def open(self, runtime: Runtime, agent: AgentSettings) -> list[Message]:
        """Load the stored history (after forking), restore todos, set up the recorder,
        the snapshots and the context window. Returns the history of the current batch."""
        store = self.store
        info: SessionInfo | None = None
        history: list[Message] = []
        stored: list[Message] = []
        how = "none"
        if store is not None:
            self._lock = SessionLock.acquire(store.path.parent / "locks", self.session_id)
            self._opened = True
            self.hold_store()
            if self.fork_from is not None:
                await store.call(store.fork_session, self.fork_from, self.session_id)
            info = await store.call(store.get_session, self.session_id)
            if info is not None:
                stored = await store.call(store.load_messages, self.session_id, warnings=self.warnings)
                history, how = repair_dangling(stored)
                todos = await store.call(store.load_todos, self.session_id)
                if todos:
                    from etcode.tools.todo import TodoStore

                    TodoStore.of(agent.state).items = todos
        self.info = info
        self._created = info is not None
        turn = info.turn if info else 0
        self.recorder = SessionRecorder(
            store,
            self.session_id,
            stored=stored,
            turn=turn,
            todos=lambda: _todos_of(agent.state),
        )
        self.recorder.ensure = self._ensure_created
        if how == "rewrite":
            await self.recorder.batch_started(history, "repair")
        self.snapshots = FileSnapshots(
            store, self.session_id, turn, max_file_bytes=runtime.config.snapshot.max_file_bytes
        )
        self.install(agent.state)
        from etcode.engine.window import ContextWindow
        from etcode.provider.catalog import ModelCatalog

        self.window = ContextWindow.build(
            runtime.spec,
            runtime.config.compaction,
            catalog=runtime.catalog or ModelCatalog.load(runtime.config),
            max_tokens=agent.max_tokens or _configured_max_tokens(runtime.spec),
            session_cost=info.cost if info else 0.0,
            totals=Usage(info.input_tokens, info.output_tokens) if info else None,
        )
        if store is not None and info is not None and history:
            reported = await store.call(store.last_context, self.session_id)
            if reported:
                self.window.meter.restore(reported, history)
            else:  # a batch with no call yet (compacted, or cleared and written): count it
                await self._count_context(runtime, history)
        if self.window.budget.limit is not None:  # load the tokenizer off the event loop (the
            # executor holds the work until it is done; nobody waits for it)
            asyncio.get_running_loop().run_in_executor(None, preload, runtime.spec.model)
        self._meta = {"agent": runtime.agent_name, "model": runtime.spec.full_id}
        return history

    async def _count_context(self, runtime: Runtime, history: list[Message]) -> None:
        """The context of a resumed batch no model call has reported yet (a compacted
        session: its summary and the kept messages), counted as the next request will send
        it, so a front end shows its real size rather than 0."""
        from etcode.engine.environment import counted_system

        window = self.window
        if window is None:
            return
        system, tools = counted_system(runtime.system, runtime.environment), runtime.tools.schemas()
        try:  # the tokenizer may load: off the event loop
            tokens = await asyncio.to_thread(window.estimate, system, tools, history)
        except Exception:  # a figure for the status bar is never worth failing the resume over
            log.debug("could not count the resumed context", exc_info=True)
            return
        window.meter.reset(tokens)

    def hold_store(self) -> None:
        """Count this session as a user of its store's writer thread until :meth:`aclose`
        (the thread stays while any user holds it: an agent's conversations share a store),
        and hold its lock again when it was opened before and closed since (``run_sync``
        closes after each run: the next must keep other processes out as the first did)."""
        if self.store is not None and self._lock is None and self._opened:
            self._lock = SessionLock.acquire(self.store.path.parent / "locks", self.session_id)
        if self.store is not None and not self._holds_store:
            self.store.acquire()
            self._holds_store = True

    def install(self, state: dict[str, object]) -> None:
        """Put the snapshot recorder where WriteFile/Edit find it."""
        state[STATE_KEY] = self.snapshots

    async def _ensure_created(self) -> None:
        """Insert the session's row before its first write (once, even when the title task
        and the loop get there together)."""
        if self._created or self.store is None:
            return
        if self._creating is None:
            self._creating = asyncio.ensure_future(self._create())
        try:
            await asyncio.shield(self._creating)
        except BaseException:
            if self._creating.done():
                self._creating = None
            raise

    async def _create(self) -> None:
        assert self.store is not None
        project_id, directory = self._project or _project(None)
        store = self.store
        title = title_from_text(self._first_task) if self._first_task else "New session"
        self.info = await store.call(
            store.create_session,
            self.session_id,
            project_id=project_id,
            directory=str(directory),
            title=title,
            agent=self._meta.get("agent", ""),
            model=self._meta.get("model", ""),
            parent_id=self.parent_id,
        )
        self._created = True

    # ---- turns -------------------------------------------------------------------------
    async def begin_turn(
        self, task: str, runtime: Runtime, history: list[Message], *, title: bool = True
    ) -> list[Message]:
        """Start a turn: number it, title a new session, add pending tool announcements.
        Returns the history to run with. ``title=False`` (a run whose hooks may still refuse
        the prompt) leaves the title to :meth:`title_turn`, called once the prompt passed."""
        await self.flush()
        if self._project is None:
            self._project = (runtime.instance.project_id, runtime.instance.directory)
        self.recorder.turn += 1
        self.recorder.model = runtime.spec.full_id
        self.snapshots.turn = self.recorder.turn
        meta = {"agent": runtime.agent_name, "model": runtime.spec.full_id}
        if not self._created:
            self._meta = meta
            self._title_due = not title
            if title:
                self._first_task = task
                self._start_title(runtime, task)
        elif self.info is not None and (self.info.agent, self.info.model) != (meta["agent"], meta["model"]):
            store = self.store
            if store is not None:
                await store.call(store.update_session, self.session_id, **meta)
                self.info.agent, self.info.model = meta["agent"], meta["model"]
        if self._pending_tools:
            history = [*history, *self._pending_tools]
            self._pending_tools = []
        return history

    async def title_turn(self, task: str, runtime: Runtime) -> None:
        """Title a new session from ``task`` now that its hooks let it run (``begin_turn``
        with ``title=False``): neither the small model nor the session's row saw it before."""
        if not self._title_due:
            return
        self._title_due = False
        self._first_task = task
        if self._created and self.store is not None and not runtime.config.small_model:
            title = title_from_text(task)
            await self.store.call(self.store.update_session, self.session_id, title=title)
            if self.info is not None:
                self.info.title = title
        self._start_title(runtime, task)

    async def end_turn(self) -> None:
        """Let a title still being made finish (briefly)."""
        task, self._title_task = self._title_task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(task, TITLE_WAIT)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
        except Exception as err:  # pragma: no cover - generate_title never raises
            log.debug("title task failed: %s", err)

    def _start_title(self, runtime: Runtime, task: str) -> None:
        small = runtime.config.small_model
        if not small or self.store is None:
            return
        self._title_task = asyncio.create_task(self._model_title(runtime, small, task))

    async def _model_title(self, runtime: Runtime, small_model: str, task: str) -> None:
        try:
            from etcode.config.resolve import resolve_model
            from etcode.provider.factory import make_provider

            spec = resolve_model(runtime.config, small_model)
            provider = make_provider(spec)
        except Exception as err:
            log.debug("no small model for titles: %s", err)
            return
        try:
            title = await generate_title(provider, spec.model, task)
        finally:
            with contextlib.suppress(Exception):
                await provider.aclose()
        if title and self.store is not None:
            await self._ensure_created()
            await self.store.call(self.store.update_session, self.session_id, title=title)
            if self.info is not None:
                self.info.title = title

    async def save(self, history: list[Message]) -> None:
        """Store what a run left unstored (a no-op after an ordinary loop run)."""
        with contextlib.suppress(EtcodeError):
            await self.recorder.checkpoint(history)

    def take_warnings(self) -> list[ev.Event]:
        items: list[ev.Event] = [ev.WarningEvent(w) for w in self.warnings]
        self.warnings = []
        return items

    # ---- batches -----------------------------------------------------------------------
    def clear(self, history: list[Message], keep_system: bool = True) -> list[Message]:
        """A new, empty batch (keeping the announcements of tools added mid-session when
        ``keep_system``). Stored at once when an event loop runs, else on the next call."""
        carried = _unique(m for m in history if is_announcement(m)) if keep_system else []
        self._pending_batch = (carried, "clear")
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(self.flush())
        return list(carried)

    async def flush(self) -> None:
        """Store a pending clear."""
        pending, self._pending_batch = self._pending_batch, None
        if pending is None:
            return
        messages, reason = pending
        if self._created:
            await self.recorder.batch_started(messages, reason)
        else:
            self.recorder.assume_stored(messages)

    def announce(self, tools: list[Tool]) -> None:
        """Tools added mid-session: tell the model in an ordinary message at the next turn."""
        schemas = [t.schema() for t in tools]
        if schemas:
            self._pending_tools.append(announcement(schemas))

    async def compact(
        self, history: list[Message], runtime: Runtime, emit: EventSink, reason: str = "manual"
    ) -> list[Message]:
        """Compact now; returns the new batch. Emits compaction and usage events."""
        await self.flush()
        if not history or self.window is None:
            emit(ev.CompactionEvent(reason, "done", message="nothing to compact"))
            return history
        from etcode.engine.environment import EnvironmentJoined, counted_system
        from etcode.engine.window import compact_with_events

        system, tools = counted_system(runtime.system, runtime.environment), runtime.tools.schemas()

        async def store(result: CompactionResult) -> None:
            if self._created:
                await self.recorder.batch_started(result.messages, reason)
                if result.usage.input_tokens or result.usage.output_tokens:
                    await self.recorder.step_finished(0, result.usage, result.cost)
            else:
                self.recorder.assume_stored(result.messages)

        result = await compact_with_events(
            self.window,
            history,
            reason=reason,
            provider=EnvironmentJoined(runtime.provider, runtime.environment),  # sent as every request
            model=runtime.spec.model,
            system=system,  # counted with the environment: the room, tokens_after
            tools=tools,
            emit=emit,
            store=store,
            tokens_before=self.window.estimate(system, tools, history),
        )
        return result.messages if result is not None else history

    async def undo(
        self, history: list[Message], *, force: bool = False
    ) -> tuple[UndoReport | None, list[Message]]:
        """Undo the last turn's changed files (raises ``UndoRefused`` when some changed
        since etcode wrote them, unless ``force``); a note tells the model at the next turn."""
        await self.flush()
        report = await self.snapshots.undo(force=force)
        if report is None:
            return None, history
        updated = [*history, undo_note(report.lines())]
        if self._created:
            await self.recorder.checkpoint(updated)
        return report, updated

    async def aclose(self) -> None:
        await self.flush()
        if self._title_task is not None:
            self._title_task.cancel()
            with contextlib.suppress(BaseException):
                await self._title_task
            self._title_task = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if self.store is not None and self._holds_store:
            self._holds_store = False
            self.store.release()
