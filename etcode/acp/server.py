"""The ACP agent: sessions, prompts, modes and cancellation on top of :class:`etcode.api.Agent`.

An ACP session is an etcode session (same id, same store): ``etcode sessions`` lists it and
``etcode -c`` resumes it. Each session loads the config of its ``cwd`` as the CLI does, with
the MCP servers the client passes added. A turn streams etcode's events as ``session/update``s
(``updates.py``); ``ask`` rules become ``session/request_permission`` (``permission.py``).
A folder whose ``etcode.json`` has risky settings not approved starts nothing until its
first prompt has asked the editor (``trust.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    StopReason,
)

from etcode import __version__
from etcode.acp.background import BackgroundCalls, background_id, started_update
from etcode.acp.errors import invalid_params
from etcode.acp.live import LiveCalls
from etcode.acp.mcp_servers import McpServer
from etcode.acp.permission import AcpAsker
from etcode.acp.prompt_text import PromptBlock, prompt_parts
from etcode.acp.startup import stop_warming
from etcode.acp.trust import PendingTrust
from etcode.contract import events as ev
from etcode.util.errors import EtcodeError
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.acp.config_options import ConfigOption
    from etcode.api import Agent
    from etcode.contract.results import AgentResult
    from etcode.provider.types import ImagePart
    from etcode.session.store import SessionStore
    from etcode.ui.tui.controller import AgentHost
    from etcode.ui.tui.mentions import Attachment

log = logging.getLogger("etcode.acp")

#: JSON-RPC error code of a request the session cannot take now (a prompt while one runs).
SESSION_BUSY = -32000
#: How long ``session/cancel`` waits for the turn to stop before the prompt answers anyway.
CANCEL_GRACE_SECONDS = 15.0

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "max_steps": "max_turn_requests",
    "token_limit": "max_tokens",  # the run's budget of output tokens (LoopLimits.max_tokens)
    "max_tool_calls": "max_turn_requests",
    "interrupted": "cancelled",
    "blocked": "refusal",  # a hook refused the prompt or stopped the run
}


@dataclass
class AcpOptions:
    """``etcode acp`` flags: defaults for every session."""

    model: str | None = None
    agent: str | None = None
    sandbox: str | None = None
    trust: bool = False


@dataclass
class SessionHandle:
    """One open ACP session."""

    id: str
    directory: Path
    host: AgentHost  # builds and reconfigures the Agent
    asker: AcpAsker
    turn: asyncio.Task[object] | None = None
    cancelled: bool = False
    pending_mode: str | None = None
    pending_model: str | None = None  # set while a turn ran: applies from the next one
    #: Held while the agent is switched (mode, model): it closes the agent a turn would run on.
    switching: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: The folder's unapproved project settings: asked at the first prompt, None once settled.
    trust: PendingTrust | None = None
    equip: Callable[[Agent], None] = field(default=lambda agent: None)
    #: Work started for the session (the commands offered after session/new).
    tasks: set[asyncio.Future[None]] = field(default_factory=set)
    #: The commands last offered to the editor (name, description, hint), None before.
    offered: list[tuple[str, str, str]] | None = None
    #: Background Bash calls, whose status follows their process (``background.py``).
    background: BackgroundCalls | None = None
    #: Running calls: their output so far, the cards the editor was sent (``live.py``).
    live: LiveCalls = field(default_factory=LiveCalls)

    @property
    def agent(self) -> Agent:
        agent: Agent = self.host.agent
        return agent


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _errors_as_rpc(err: BaseException) -> RequestError:
    """etcode's one-line errors (config, model, trust, session lock) as JSON-RPC errors."""
    if isinstance(err, RequestError):
        return err
    from etcode.security.redact import redact

    return RequestError(-32603, redact(_one_line(err)))


class EtcodeAcpAgent:
    """Implements the ACP SDK's ``Agent`` interface."""

    def __init__(self, options: AcpOptions | None = None) -> None:
        self.options = options or AcpOptions()
        self._conn: Client | None = None
        self.client: ClientCapabilities = ClientCapabilities()
        self.sessions: dict[str, SessionHandle] = {}
        self._store: SessionStore | None = None

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        """The client (the SDK connects it before the first request)."""
        if self._conn is None:
            raise RequestError(-32603, "no client is connected")
        return self._conn

    # ---- set-up --------------------------------------------------------------------------
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: object,
    ) -> InitializeResponse:
        self.client = client_capabilities or ClientCapabilities()
        log.debug("client %s, protocol %s", client_info, protocol_version)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="etcode", title="etcode", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: object) -> None:
        return None  # providers' keys come from etcode's config and environment

    def store(self) -> SessionStore:
        if self._store is None:
            from etcode.session.store import SessionStore

            self._store = SessionStore.open()
        return self._store

    # ---- sessions ------------------------------------------------------------------------
    async def new_session(
        self, cwd: str, mcp_servers: list[McpServer] | None = None, **kwargs: object
    ) -> NewSessionResponse:
        stop_warming()  # the start's warm-up thread: this session imports the rest itself
        handle = await self._open(cwd, mcp_servers, None)
        # After the response: the library queues the response (one FIFO of messages) in the
        # step this method returns in, before this task's first step runs.
        self._later(handle, self._offer_commands(handle))
        modes = self._modes(handle)
        return NewSessionResponse(
            session_id=handle.id, modes=modes, config_options=await self._config_options(handle, modes)
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[McpServer] | None = None, **kwargs: object
    ) -> LoadSessionResponse:
        stop_warming()
        if session_id in self.sessions:
            await self._close(self.sessions.pop(session_id))
        from etcode.session.session_rows import AmbiguousSessionError

        try:
            found = await asyncio.to_thread(self.store().find_session, session_id)
        except AmbiguousSessionError as err:
            raise invalid_params("sessionId", str(err)) from None
        if found is None:
            raise invalid_params("sessionId", f"unknown session {session_id}: no stored session has this id")
        handle = await self._open(cwd, mcp_servers, found.id)
        from etcode.acp.replay import replay_updates

        stored = await handle.agent.transcript()
        messages = [item.message for item in stored if item.kind != "copy"]
        todos = _todos(handle.agent)
        for update in replay_updates(messages, handle.directory, todos):
            await self.conn.session_update(handle.id, update)
        await self._offer_commands(handle)
        modes = self._modes(handle)
        return LoadSessionResponse(modes=modes, config_options=await self._config_options(handle, modes))

    def _later(self, handle: SessionHandle, work: Coroutine[object, object, None]) -> None:
        task = asyncio.ensure_future(work)
        handle.tasks.add(task)
        task.add_done_callback(handle.tasks.discard)

    async def _offer_commands(self, handle: SessionHandle, *, if_changed: bool = False) -> None:
        """The folder's custom commands to the editor (``available_commands_update``);
        ``if_changed``: only when they differ from the last offer (after the trust)."""
        from etcode.acp.commands import command_updates, load

        config = handle.host.config
        try:
            commands = await load(handle.directory, config is not None and config.trusted)
            offered = [(c.name, c.description, c.argument_hint) for c in commands.all()]
            if if_changed and offered == handle.offered:
                return
            handle.offered = offered
            for update in command_updates(commands, handle.directory):
                await self.conn.session_update(handle.id, update)
        except Exception as err:  # an offer is a convenience: never a failed session
            log.warning("custom commands not offered: %s", err)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: object
    ) -> ListSessionsResponse:
        from datetime import UTC, datetime

        from etcode.instance import describe

        store = self.store()
        project = describe(Path(cwd)).project_id if cwd else None
        found = await asyncio.to_thread(store.list_sessions, project, 200)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=info.id,
                    cwd=info.directory,
                    title=info.title,
                    updated_at=datetime.fromtimestamp(info.updated, UTC).isoformat(),
                )
                for info in found
                if info.parent_id is None
            ]
        )

    async def _open(
        self, cwd: str, mcp_servers: list[McpServer] | None, session_id: str | None
    ) -> SessionHandle:
        directory = Path(cwd)
        if not directory.is_absolute() or not directory.is_dir():
            raise invalid_params("cwd", f"{cwd} is not an absolute path of a folder")
        try:
            return await self._build(directory.resolve(), mcp_servers or [], session_id)
        except EtcodeError as err:
            raise _errors_as_rpc(err) from None

    async def _build(
        self, directory: Path, mcp_servers: list[McpServer], session_id: str | None
    ) -> SessionHandle:
        from etcode.acp.mcp_servers import with_client_servers
        from etcode.acp.trust import pending_of
        from etcode.config.loader import load_config
        from etcode.instance import Instance
        from etcode.security.redact import register_config
        from etcode.trust.project import require_trust, untrusted
        from etcode.ui.tui.controller import AgentHost
        from etcode.ui.tui.options import TuiOptions

        options = self.options
        with Instance.provide(directory) as instance:
            flags = {"model": options.model, "agent": options.agent, "sandbox": options.sandbox}
            config = await asyncio.to_thread(load_config, instance.directory, instance.worktree, flags=flags)
            if options.trust:  # `etcode acp --trust`: every folder's, approved and remembered
                await asyncio.to_thread(require_trust, config, trust=True)
            findings = [] if options.trust else await asyncio.to_thread(untrusted, config)
            register_config(config)
            config = with_client_servers(config, mcp_servers)  # a copy when the editor adds servers
            pending = pending_of(config, findings)  # the copy the session uses is the one trusted
            live = LiveCalls()
            asker = AcpAsker(self.conn, session_id or "", instance.directory, live)
            tui_options = TuiOptions(
                directory=instance.directory,
                model=options.model,
                agent=options.agent,
                session_id=session_id,
                sandbox=options.sandbox,
            )
            host = AgentHost(tui_options, config, instance.directory, asker)
            sid = str(host.agent.session_id)
            asker.session_id = sid
            handle = SessionHandle(
                sid,
                instance.directory,
                host,
                asker,
                trust=pending,
                equip=self._equipment(sid, live),
                live=live,
            )
            handle.background = BackgroundCalls(lambda update: self.conn.session_update(sid, update))
            handle.equip(host.agent)
            if pending is None:  # else nothing is built (no MCP server, no model) before the editor's answer
                await host.prepare()
        self.sessions[handle.id] = handle
        return handle

    def _equipment(self, session_id: str, live: LiveCalls) -> Callable[[Agent], None]:
        """Puts the editor's files and terminal where the tools find them (when offered)."""
        fs = self.client.fs
        read, write = bool(fs and fs.read_text_file), bool(fs and fs.write_text_file)
        terminal = bool(self.client.terminal)

        def equip(agent: Agent) -> None:
            if not (read or write or terminal):
                return
            from etcode.acp.editor_requests import EditorFiles, EditorTerminal
            from etcode.tools.client_io import FILES_KEY, TERMINAL_KEY

            if read or write:
                agent.state[FILES_KEY] = EditorFiles(self.conn, session_id, read=read, write=write)
            if terminal:
                agent.state[TERMINAL_KEY] = EditorTerminal(self.conn, session_id, live.terminal_cut)

        return equip

    def _modes(self, handle: SessionHandle) -> SessionModeState:
        from etcode.agent.registry import load_agents
        from etcode.instance import describe

        info = describe(handle.directory)
        config = handle.host.config
        agents = load_agents(config.agent if config else {}, info.directory, info.worktree)
        modes = [
            SessionMode(id=name, name=name, description=(agent.description or None))
            for name, agent in agents.items()
            if agent.mode != "subagent"
        ]
        return SessionModeState(current_mode_id=handle.host.resolved_agent(), available_modes=modes)

    def _session(self, session_id: str) -> SessionHandle:
        handle = self.sessions.get(session_id)
        if handle is None:
            raise invalid_params(
                "sessionId",
                f"unknown session {session_id}: not open here (session/new or session/load it first)",
            )
        return handle

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: object
    ) -> SetSessionModeResponse:
        handle = self._session(session_id)
        names = handle.host.agent_names()
        if mode_id not in names:
            raise invalid_params("modeId", f"unknown mode {mode_id}; modes: {', '.join(names)}")
        if handle.turn is not None:
            handle.pending_mode = mode_id  # the running turn finishes with the agent it began with
        else:
            async with handle.switching:
                await self._switch(handle, mode_id)
        return SetSessionModeResponse()

    async def _config_options(
        self, handle: SessionHandle, modes: SessionModeState | None = None
    ) -> list[ConfigOption]:
        from etcode.acp.config_options import config_options

        models = await asyncio.to_thread(handle.host.model_names)  # the catalog's files: read once
        modes = modes or self._modes(handle)
        if handle.pending_mode is not None:  # chosen during a turn: the next turn's
            modes = modes.model_copy(update={"current_mode_id": handle.pending_mode})
        return config_options(modes, models, _current_model(handle, models))

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: object
    ) -> SetSessionConfigOptionResponse:
        """``mode`` as ``session/set_mode``; ``model`` (one of those offered) from the next turn."""
        from etcode.acp.config_options import MODE, MODEL, OPTIONS, unknown_model

        handle = self._session(session_id)
        if config_id not in OPTIONS:
            raise invalid_params(
                "configId", f"unknown config option {config_id}; options: {', '.join(OPTIONS)}"
            )
        if not isinstance(value, str):
            raise invalid_params("value", f"config option {config_id} takes a {config_id} id, not {value}")
        if config_id == MODE:
            await self.set_session_mode(value, session_id)
        elif config_id == MODEL:
            models = await asyncio.to_thread(handle.host.model_names)
            if value not in models:
                raise invalid_params("value", unknown_model(value, models))
            if handle.turn is not None:
                handle.pending_model = value  # the running turn finishes with the model it began with
            else:
                async with handle.switching:
                    await self._switch_model(handle, value)
        return SetSessionConfigOptionResponse(config_options=await self._config_options(handle))

    async def _switch_model(self, handle: SessionHandle, model: str) -> None:
        handle.pending_model = None
        try:
            await handle.host.switch_model(model)
        except EtcodeError as err:
            raise _errors_as_rpc(err) from None
        handle.equip(handle.agent)

    async def _switch(self, handle: SessionHandle, mode_id: str) -> None:
        try:
            await handle.host.switch_agent(mode_id)
        except EtcodeError as err:
            raise _errors_as_rpc(err) from None
        handle.equip(handle.agent)

    # ---- turns -----------------------------------------------------------------------------
    async def prompt(self, prompt: list[PromptBlock], session_id: str, **kwargs: object) -> PromptResponse:
        handle = self._session(session_id)
        if handle.turn is not None:
            raise RequestError(
                SESSION_BUSY, f"a prompt is already running in session {session_id}; cancel it first"
            )
        text, attachments = await _prompt_parts(prompt)
        if not text.strip() and not attachments:
            raise invalid_params("prompt", "the prompt has no text")
        handle.turn = asyncio.current_task()
        handle.cancelled = False
        handle.asker.cancelled.clear()
        try:
            if handle.trust is not None and not await self._settle_trust(handle):
                return PromptResponse(stop_reason="cancelled")
            async with handle.switching:  # a switch in flight ends first: it closes the agent
                if handle.pending_mode is not None:
                    mode, handle.pending_mode = handle.pending_mode, None
                    await self._switch(handle, mode)
                if handle.pending_model is not None:
                    await self._switch_model(handle, handle.pending_model)
            error, result = await self._turn(handle, text, attachments)
        finally:
            handle.turn = None
        stop = result.stop_reason if result is not None else "error"
        if handle.cancelled or stop == "interrupted":
            return PromptResponse(stop_reason="cancelled")
        if stop in STOP_REASONS:
            return PromptResponse(stop_reason=STOP_REASONS[stop])
        raise RequestError(-32603, error or f"the turn ended: {stop}")

    async def _settle_trust(self, handle: SessionHandle) -> bool:
        """Ask the editor about the folder's project settings; True: approved and the
        session built, False: cancelled meanwhile. A refusal is the prompt's error (the next
        prompt asks again)."""
        from etcode.acp.trust import settle
        from etcode.trust.project import untrusted

        pending = handle.trust
        assert pending is not None
        approved = not await asyncio.to_thread(untrusted, pending.config)  # meanwhile, in another session
        if not approved and not await settle(self.conn, handle.id, pending, handle.asker.cancelled):
            return False
        handle.trust = None
        try:
            await handle.host.prepare()
        except EtcodeError as err:
            raise _errors_as_rpc(err) from None
        await self._offer_commands(handle, if_changed=True)  # a trusted project's linked files count now
        return True

    async def _turn(
        self, handle: SessionHandle, text: str, attachments: list[Attachment]
    ) -> tuple[str | None, AgentResult | None]:
        """One turn: ``/name args`` runs a custom command (with its agent and model); the
        editor's attached files follow the text (a command's prompt). Returns the error it
        ended with, if any, and its result."""
        from etcode.prompt.mentions import images_of

        settings: tuple[str | None, str | None] = (None, None)
        images = images_of(attachments)
        if text.lstrip().startswith("/"):
            from etcode.acp.commands import expand, notices

            config = handle.host.config
            try:
                found = await expand(text, handle.directory, config is not None and config.trusted)
                choice = await asyncio.to_thread(handle.host.command_choice, found.command) if found else None
            except EtcodeError as err:
                raise _errors_as_rpc(err) from None
            if found is not None and choice is not None:
                text, settings = found.prompt, (choice.agent, choice.model)
                images = [*found.images, *images]
                for update in notices([*found.warnings, *choice.warnings], choice.notes, handle.directory):
                    await self.conn.session_update(handle.id, update)
        if attachments:
            from etcode.ui.tui.mentions import attach

            text = attach(text, attachments)
        if settings == (None, None):
            return await self._stream(handle, text, images), handle.agent.last_result
        async with handle.host.turn_settings(*settings):
            handle.equip(handle.agent)
            error = await self._stream(handle, text, images)
            result = handle.agent.last_result
        handle.equip(handle.agent)
        return error, result

    async def _stream(self, handle: SessionHandle, text: str, images: list[ImagePart]) -> str | None:
        """Run one turn, sending its events; returns the error it ended with, if any."""
        error: str | None = None
        async for event in handle.agent.stream(text, images):
            if isinstance(event, ev.ErrorEvent):
                error = event.message
            started = event if isinstance(event, ev.ToolResultEvent) and background_id(event) else None
            updates = (
                [started_update(started)]
                if started is not None
                else handle.live.updates_of(event, handle.directory)
            )
            for update in updates:
                try:
                    await self.conn.session_update(handle.id, update)
                except ConnectionError:  # the client went away: stop the turn, keep what is done
                    handle.agent.interrupt()
            handle.live.shown(event)
            if started is not None and handle.background is not None:  # its process runs on
                await handle.background.started(started, handle.agent.background)
        return error

    async def cancel(self, session_id: str, **kwargs: object) -> None:
        handle = self.sessions.get(session_id)
        if handle is None or handle.turn is None:
            return
        handle.cancelled = True
        handle.asker.cancelled.set()
        handle.agent.interrupt()

    # ---- shutting down ---------------------------------------------------------------------
    async def _close(self, handle: SessionHandle) -> None:
        for task in list(handle.tasks):
            task.cancel()
        if handle.background is not None:  # the ends below are not told (the editor closed)
            handle.background.close()
        if handle.turn is not None:
            handle.asker.cancelled.set()
            handle.agent.interrupt()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(handle.turn), CANCEL_GRACE_SECONDS)
        with contextlib.suppress(Exception):
            await handle.agent.aclose()

    async def aclose(self) -> None:
        """Stop running turns (finished steps are saved) and release every session."""
        handles, self.sessions = list(self.sessions.values()), {}
        for handle in handles:
            await self._close(handle)
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.release()


async def _prompt_parts(prompt: list[PromptBlock]) -> tuple[str, list[Attachment]]:
    """``prompt_parts`` off the event loop; an image block that is no image is the request's
    error (invalid params), naming it."""
    from etcode.provider.images import ImageError

    try:
        return await asyncio.to_thread(prompt_parts, prompt)
    except ImageError as err:
        raise invalid_params("prompt", str(err)) from None


def _current_model(handle: SessionHandle, models: list[str]) -> str:
    """The model of the session's next turn (``provider/model``)."""
    if handle.pending_model is not None:
        return handle.pending_model
    try:
        return handle.host.resolved_model()[0]
    except EtcodeError:  # no model configured: the first offered (a prompt will say what is missing)
        return models[0] if models else ""


def _todos(agent: Agent) -> list[JsonObject]:
    from etcode.tools.todo import TodoStore

    return [dict(item) for item in TodoStore.of(agent.state).items or []]
