"""The agent behind the TUI: creating, resuming and reconfiguring it. No Textual here.

Everything the slash commands do to the agent goes through this class, so the app only
maps events to widgets. Sessions (``-c``, ``--session``, ``/sessions``, ``/compact``,
``/undo``) live in the session store, opened with the first agent.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.contract.events import Event
from etcode.ui.tui.options import TuiOptions
from etcode.util.errors import UsageError

if TYPE_CHECKING:
    from etcode.api import Agent
    from etcode.config.schema import Config
    from etcode.extensions.commands import CustomCommand
    from etcode.extensions.skills import Skill
    from etcode.permission.service import Asker
    from etcode.session.store import SessionInfo, SessionStore
    from etcode.ui.command_prompts import TurnChoice


class AgentHost:
    """Owns the :class:`~etcode.api.Agent` the TUI drives."""

    def __init__(
        self,
        options: TuiOptions,
        config: Config,
        directory: Path,
        asker: Asker,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.options = options
        self.config = config
        self.directory = directory
        self.asker = asker
        self.on_event = on_event
        self.model = options.model
        self.agent_name = options.agent
        self.store: SessionStore | None = None
        self._model_choices: list[str] | None = None
        #: Called with each new agent (``/new``, ``/sessions``, a model or agent switch).
        self.agent_listeners: list[Callable[[Agent], None]] = []
        self.agent = self.make_agent(
            session_id=self.find_session(options.session_id) if options.session_id else None,
            continue_last=options.continue_last,
            fork=options.fork,
        )

    # ---- building --------------------------------------------------------------------
    def make_agent(
        self, *, session_id: str | None = None, continue_last: bool = False, fork: bool = False
    ) -> Agent:
        """A new Agent with the TUI's settings, kept in the session store."""
        from etcode.api import Agent

        agent = Agent(
            model=self.model,
            agent=self.agent_name,
            config=self.config,
            asker=self.asker,
            directory=self.directory,
            trust=None,  # the chat and ACP ask about the project's config themselves
            commands=False,  # they expand custom commands themselves (with agent and model)
            continue_last=continue_last,
            fork=fork,
            session_id=session_id,
            store=self.open_store(),
            on_event=self.on_event,
        )
        agent.limit_defaults = "cli"  # the front ends' step limit (etcode.wiring.run_limits)
        return agent

    def open_store(self) -> SessionStore:
        """The session store, opened on first use."""
        if self.store is None:
            from etcode.session.store import SessionStore

            self.store = SessionStore.open()
        return self.store

    def find_session(self, prefix: str) -> str:
        """The full id of a stored session (a unique prefix is enough)."""
        from etcode.session.store import SessionNotFoundError

        try:
            return self.open_store().resolve_session(prefix, flag="--session").id
        except SessionNotFoundError as err:
            raise UsageError(str(err)) from None

    async def prepare(self) -> None:
        """Build the agent's runtime now (config errors show at once; the first turn is faster)."""
        await self.agent.prepare()

    # ---- what the status bar shows before the first event ----------------------------
    def resolved_model(self) -> tuple[str, int | None]:
        """``(provider/model, context window or None)`` as configured."""
        from etcode.config.resolve import resolve_model

        spec = resolve_model(self.config, self.model)
        limit = (spec.model_info.get("limit") or {}).get("context")
        return spec.full_id, limit if isinstance(limit, int) else None

    def resolved_agent(self) -> str:
        return self.agent_name or self.config.default_agent or "build"

    # ---- slash commands --------------------------------------------------------------
    async def new_session(self) -> None:
        await self._replace(self.make_agent())

    async def resume(self, session_id: str) -> None:
        await self._replace(self.make_agent(session_id=session_id))

    async def _replace(self, agent: Agent) -> None:
        old, self.agent = self.agent, agent
        self._adopted()
        await old.aclose()  # another session: the old one's background processes end with it

    async def _reconfigure(self) -> None:
        """Apply a new model or agent from the next turn on, in the same session."""
        old = self.agent
        await old.aclose(end_session=False)  # flushes the session; the runtime is rebuilt on the next turn
        self.agent = self.make_agent(session_id=old.session_id)  # reloads the stored session
        # The same session: no SessionEnd, no SessionStart (resume); its background processes go on.
        self.agent.carry_hooks(old)
        self._adopted()

    def _adopted(self) -> None:
        for listener in list(self.agent_listeners):
            listener(self.agent)

    async def switch_model(self, model: str) -> str:
        """Use ``model`` (provider/model) from the next turn on; returns its full id."""
        from etcode.config.resolve import resolve_model

        if "/" not in model:
            raise UsageError(f'model "{model}" must be written as provider/model')
        spec = resolve_model(self.config, model)
        self.model = model
        await self._reconfigure()
        return spec.full_id

    async def switch_agent(self, name: str) -> str:
        """Use agent ``name`` from the next turn on."""
        names = self.agent_names()
        if name not in names:
            raise UsageError(f'unknown agent "{name}"; agents: {", ".join(names)}')
        self.agent_name = name
        await self._reconfigure()
        return name

    def command_choice(self, command: CustomCommand) -> TurnChoice:
        """The agent and model a custom command's turn runs with: the user's choice (``--agent``,
        ``/agent``, Ctrl+N, the editor's mode, ``default_agent``; ``--model``, ``/model``)
        wins (``ui/command_prompts.turn_choice``). Blocking: a worker thread."""
        from etcode.ui.command_prompts import turn_choice

        return turn_choice(
            command,
            self.config,
            self.directory,
            current_agent=self.resolved_agent(),
            agent_chosen=self.agent_name is not None or bool(self.config.default_agent),
            model_chosen=self.model is not None,
        )

    @contextlib.asynccontextmanager
    async def turn_settings(self, agent: str | None, model: str | None) -> AsyncIterator[None]:
        """One turn with a custom command's ``agent`` and ``model`` (None: the session's),
        in the same session; the session's own come back after it."""
        if (agent is None or agent == self.resolved_agent()) and (model is None or model == self.model):
            yield
            return
        saved = self.agent_name, self.model
        self.agent_name, self.model = agent or self.agent_name, model or self.model
        await self._reconfigure()
        try:
            yield
        finally:
            self.agent_name, self.model = saved
            await self._reconfigure()

    def model_names(self) -> list[str]:
        """Configured and known models (``/model`` completion), read once."""
        if self._model_choices is None:
            from etcode.ui.tui.model_choices import model_choices

            try:
                current: str | None = self.resolved_model()[0]
            except Exception:  # no model configured: the catalog's models all the same
                current = None
            try:
                self._model_choices = model_choices(self.config, current)
            except Exception:  # completion is a convenience: never break the input
                self._model_choices = [current] if current else []
        return self._model_choices

    async def cycle_agent(self) -> str:
        """Switch to the agent after the current one (build → plan → … → build)."""
        names = self.agent_names()
        if not names:
            raise UsageError("no agents to switch to")
        current = self.resolved_agent()
        following = names[(names.index(current) + 1) % len(names)] if current in names else names[0]
        return await self.switch_agent(following)

    def agent_names(self) -> list[str]:
        """Agents a user can switch to (primary or all; not sub-agents)."""
        return list(self.agent_descriptions())

    def agent_descriptions(self) -> dict[str, str]:
        """The agents a user can switch to, each with its own description (its config's
        ``description``, a markdown agent's front matter, a built-in's; "" when it has none)."""
        from etcode.agent.registry import load_agents
        from etcode.instance import describe

        info = describe(self.directory)
        agents = load_agents(self.config.agent or {}, info.directory, info.worktree)
        return {name: agent.description or "" for name, agent in agents.items() if agent.mode != "subagent"}

    def list_sessions(self, limit: int = 50) -> list[SessionInfo]:
        from etcode.instance import describe

        return self.open_store().list_sessions(describe(self.directory).project_id, limit)

    async def skills(self) -> list[Skill]:
        """The skills the agent offers (``/skills``)."""
        return await self.agent.available_skills()

    async def clear(self) -> None:
        self.agent.clear()

    async def compact(self) -> None:
        await self.agent.compact()

    async def undo(self, force: bool = False) -> list[str]:
        """``path: what happened`` per file of the undone turn (empty: nothing to undo).
        Raises ``UndoRefused`` when files changed since etcode wrote them, unless ``force``."""
        report = await self.agent.undo_report(force=force)
        return report.lines() if report is not None else []

    async def close(self) -> None:
        try:
            await self.agent.aclose()
        finally:
            if self.store is not None:
                self.store.close()


__all__ = ["AgentHost"]
