"""``EtcodeApp``: the interactive chat.

A turn runs as a Textual worker (``async for event in agent.stream(task)``) in the app's
event loop; events are mapped onto widgets by :class:`~etcode.ui.tui.feed.EventFeed`.
Esc calls ``agent.interrupt()``; Ctrl+C twice quits after the turn has wound down, so
everything already finished is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Input, Static, TextArea
from textual.worker import Worker

from etcode.contract.events import Event, StepStart
from etcode.ui.command_prompts import CommandIndex
from etcode.ui.tui import commands as slash
from etcode.ui.tui import warmup
from etcode.ui.tui.asker import TuiAsker
from etcode.ui.tui.background import BackgroundWatch
from etcode.ui.tui.collector import CollectorPolicy
from etcode.ui.tui.controller import AgentHost
from etcode.ui.tui.feed import EventFeed
from etcode.ui.tui.goodbye import ExitState, ToolLines, exit_state_of
from etcode.ui.tui.hangup import detach_from_terminal
from etcode.ui.tui.highlight import LEXERS, PRELOAD
from etcode.ui.tui.history import PromptHistory
from etcode.ui.tui.mentions import Attachment, FileIndex, attach, images_of, resolve_mentions
from etcode.ui.tui.options import TuiOptions
from etcode.ui.tui.widgets.conversation import Conversation
from etcode.ui.tui.widgets.prompt import PromptBox, PromptInput
from etcode.ui.tui.widgets.status import StatusBar
from etcode.ui.tui.widgets.todo import TodoPanel
from etcode.ui.tui.widgets.working import WorkingLine
from etcode.util.errors import EtcodeError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from etcode.api import Agent
    from etcode.config.raw import Loc
    from etcode.config.schema import Config
    from etcode.config.trust import Finding
    from etcode.provider.types import ImagePart

#: A custom command's agent and model for its turn (None: a message, the session's).
TurnSettings = tuple[str | None, str | None] | None
QUIT_WINDOW = 2.0  # seconds between the two Ctrl+C presses
REQUEST_HEADSTART = 0.02  # seconds a turn's request gets to go out before the heap is tidied
SHUTDOWN_WAIT = 10.0  # seconds a finishing turn may take when quitting
NARROW = 100  # columns: a narrower terminal puts the todo panel under the conversation


class EtcodeApp(App[int]):
    """The chat. ``host`` is built on mount unless one is given (tests pass their own)."""

    CSS_PATH = "etcode.tcss"
    TITLE = "etcode"
    ENABLE_COMMAND_PALETTE = True
    #: Below ``NARROW`` columns the screen has the class ``-narrow`` (the todo panel moves
    #: under the conversation, which keeps the whole width).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
    BINDINGS = [
        Binding("escape", "interrupt", "Interrupt", show=False),
        Binding("ctrl+c", "ctrl_c", "Quit", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("ctrl+t", "toggle_todos", "Todos", show=False),
        Binding("ctrl+o", "toggle_tools", "Expand all", show=False),
        Binding("ctrl+l", "focus_input", "Input", show=False),
        Binding("ctrl+n", "cycle_agent", "Next agent", show=False),
    ]

    def __init__(
        self,
        options: TuiOptions | None = None,
        *,
        config: Config | None = None,
        history: PromptHistory | None = None,
        max_widgets: int | None = None,
    ) -> None:
        import os

        from etcode.ui.tui.theme import no_color

        # NO_COLOR: native ANSI colours, so Textual strips every colour (its grey filter
        # otherwise paints a dark background)
        super().__init__(ansi_color=True if no_color(os.environ) else None)
        self._theme_problem = self._pick_theme()
        self.options = options or TuiOptions()
        self.directory = (self.options.directory or Path.cwd()).resolve()
        self.config = config
        self.asker = TuiAsker(self)
        self.host: AgentHost | None = None
        self.history = history if history is not None else PromptHistory()
        self.files = FileIndex(self.directory)
        self.custom = CommandIndex(self.directory, lambda: self.config is not None and self.config.trusted)
        self.conversation = Conversation(
            id="conversation", **({"max_widgets": max_widgets} if max_widgets else {})
        )
        self.status_bar = StatusBar(id="status")
        self.todos = TodoPanel(id="todos")
        self.prompt = PromptBox(self.history, self.files, self.custom)
        self.feed = EventFeed(self.conversation, self.status_bar, self.todos)
        self.working = WorkingLine(id="working")  # ✻ Working… 12s · ↓ 340 tokens
        self.feed.working = self.working
        self.asker.listener = self.feed  # a call's block waits for approval, its clock starts after
        self.status_bar.tick_listeners.append(self.feed.tick)
        self.status_bar.busy_listeners.append(self.feed.busy_changed)
        self.turn: Worker[None] | None = None
        self.queued: list[tuple[str, str, list[str], TurnSettings, list[ImagePart]]] = []
        self.exit_code = 0
        self._ctrl_c_at = 0.0
        self._quitting = False
        self._turn_active = False
        self._agent_failed = False
        self._quit_done = False
        self._lexer_listener: Callable[[str], None] = lambda language: None
        self.collector = CollectorPolicy()
        #: The session's background processes: the status bar's count, ``/bashes``.
        self.background = BackgroundWatch(lambda count: self.status_bar.update_info(background=count))
        #: The session and its messages when the app quit (printed by ``launch`` afterwards).
        self.exit_state: ExitState | None = None
        self.tool_lines = ToolLines()  # what the live run showed for each call (the transcript)
        #: Warnings of the agent's close when quitting (background processes it stopped).
        self.quit_warnings: list[str] = []
        #: Keys and pastes that came before the input was mounted (see :meth:`on_event`).
        self._typeahead: list[events.Key | events.Paste] = []
        #: What was typed while etcode started, read from the terminal before the app ran
        #: (``launch``): the input's first text, a final line end is Enter.
        self.typed_at_start = ""
        self.prompt.input.scroll_target = self.conversation
        self.prompt.input.directory = self.directory

    def _pick_theme(self) -> str:
        """Light or dark as the terminal is (``ETCODE_THEME``, ``COLORFGBG``, see
        :mod:`etcode.ui.tui.theme`); the problem to report when the name is unknown."""
        import os

        from etcode.ui.tui.theme import DARK, no_color, no_color_theme, pick_theme

        name = pick_theme(os.environ)
        problem = ""
        if name not in self.available_themes:
            known = ", ".join(["light", "dark", *sorted(self.available_themes)])
            name, problem = DARK, f"ETCODE_THEME: unknown theme {name!r} (known: {known})"
        if no_color(os.environ):  # the terminal's own background and colours
            chosen = self.get_theme(name)
            theme = no_color_theme(light=chosen is not None and not chosen.dark)
            self.register_theme(theme)
            name = theme.name
        self.theme = name
        return problem

    # ---- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield self.conversation
            yield self.todos
        yield self.working
        yield self.prompt
        yield self.status_bar

    async def on_mount(self) -> None:
        if self.is_inline:  # inline: the chat takes most of the terminal, under the prompt
            self.screen.styles.height = "70vh"
            self.screen.styles.min_height = 16
        self.prompt.input.focus()
        self._replay_typeahead()
        if self._theme_problem:
            self.notify(self._theme_problem, severity="warning", timeout=8)
        await self.conversation.add(
            Static(
                f"etcode · {self.directory.name or self.directory} · /help for commands",
                classes="welcome",
                markup=False,
            )
        )
        self.call_after_refresh(self._start_agent)  # first paint first
        self._quit_on_hangup()
        self._watch_lexers()
        self.collector.start()
        if self.is_inline and self._driver is not None:  # a resize keeps the scrollback clean
            from etcode.ui.tui.inline_frame import clear_from_frame_top

            clear_from_frame_top(self._driver)

    def _replay_typeahead(self) -> None:
        """What was typed before the input was up goes to it, in order: the text read from
        the terminal at launch (its final line end is Enter), then the keys the app received
        before the input was mounted."""
        from etcode.ui.tui.early_input import typed_message

        text, enter = typed_message(self.typed_at_start)
        self.typed_at_start = ""
        early: list[events.Key | events.Paste] = [events.Paste(text)] if text else []
        early += [events.Key("enter", "\r")] if enter else []
        early += self._typeahead
        self._typeahead.clear()
        for event in early:
            self.prompt.input._forward_event(event)

    def _quit_on_hangup(self) -> None:
        """SIGTERM quits as Ctrl+C twice does: the turn winds down, its running commands
        are ended and what finished is saved. SIGHUP (the terminal was closed) does the same
        with the output sent to /dev/null first: writing to the dead terminal would make
        the renderer fail and block the app's shutdown forever."""
        loop = asyncio.get_running_loop()

        def quit_app() -> None:
            self.run_worker(self.action_quit(), exclusive=False)

        def on_hangup(_signum: int, _frame: object) -> None:
            detach_from_terminal()
            loop.call_soon_threadsafe(quit_app)

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
            loop.add_signal_handler(signal.SIGTERM, quit_app)
        with contextlib.suppress(ValueError, AttributeError):  # not the main thread (tests)
            signal.signal(signal.SIGHUP, on_hangup)

    def _watch_lexers(self) -> None:
        """Load the common lexers in their thread, and repaint code blocks shown plain
        while a lexer was loading (see :mod:`etcode.ui.tui.highlight`)."""
        loop = asyncio.get_running_loop()

        def ready(language: str) -> None:  # the lexer thread
            with contextlib.suppress(RuntimeError):  # the app has closed its loop
                loop.call_soon_threadsafe(self.conversation.lexer_ready, language)

        self._lexer_listener = ready
        LEXERS.add_listener(ready)

    def on_unmount(self) -> None:
        LEXERS.remove_listener(self._lexer_listener)
        self.collector.stop()
        self.background.close()

    async def _start_agent(self) -> None:
        """Build the agent (config, session store), then warm it up in a worker. A project
        config with risky settings the user has not trusted asks first (``TrustScreen``)."""
        if self.config is None:
            self.config = self._load_config()
        if self.config is None:
            self._agent_failed = True
            return
        from etcode.trust.project import untrusted

        found = await asyncio.to_thread(untrusted, self.config)  # the loosening check is no instant
        if found:
            from etcode.ui.tui.widgets.trust import TrustScreen

            def answered(answer: str | None) -> None:
                self.call_later(self._trust_answered, answer or "quit", found)

            self.push_screen(TrustScreen(found), callback=answered)
            return
        await self._build_agent()

    async def _trust_answered(self, answer: str, found: list[Finding]) -> None:
        """Trust the file(s), or leave their risky settings out of this session, or quit."""
        from etcode.trust.project import exclusions, trust_files

        if self.config is None:  # asked only about a loaded config
            return
        if answer == "quit":
            self.exit_code = 1
            self.exit(
                1, return_code=1, message="etcode: not started: the project's etcode.json is not trusted"
            )
            return
        if answer == "trust":
            try:
                trust_files(self.config, found)
            except EtcodeError as err:  # trusted for this session all the same
                await self.conversation.add_notice(f"warning: could not remember the trust: {err}", "warning")
        else:
            self.config = self._load_config(without=exclusions(found))
            if self.config is None:
                self._agent_failed = True
                return
            from etcode.trust.project import untrusted

            if await asyncio.to_thread(untrusted, self.config):  # changed while the dialog waited
                self.config = None
                await self._start_agent()  # asks again about what the files hold now
                return
            left_out = ", ".join(dict.fromkeys(f.key for f in found))
            await self.conversation.add_notice(
                f"warning: not trusted, left out for this session: {left_out}", "warning"
            )
        await self._build_agent()

    async def _build_agent(self) -> None:
        if self.config is None:  # not loaded: the error is shown already
            return
        try:
            self.host = AgentHost(
                self.options, self.config, self.directory, self.asker, on_event=self._on_agent_event
            )
        except EtcodeError as err:
            self._agent_failed = True
            await self.conversation.add_notice(f"error: {err}", "error")
            return
        self.prompt.arguments.update(model=self.host.model_names, agent=self.host.agent_names)
        self.host.agent_listeners.append(self._follow_background)
        self._follow_background(self.host.agent)
        self._show_model()
        self.warm_up()
        LEXERS.request(*PRELOAD)  # after the first paint: start-up has the CPU to itself
        warmup.start()
        await self._report_commands()
        if self.queued:  # sent before the agent was ready
            await self._start_queued()

    def _load_config(self, without: Mapping[Path, Sequence[Loc]] | None = None) -> Config | None:
        from etcode.config.loader import load_config
        from etcode.instance import describe

        info = describe(self.directory)
        flags = {"model": self.options.model, "agent": self.options.agent, "sandbox": self.options.sandbox}
        try:
            return load_config(info.directory, info.worktree, flags=flags, without=without)
        except EtcodeError as err:
            self.call_later(self.conversation.add_notice, f"error: {err}", "error")
            return None

    def _show_model(self) -> None:
        if self.host is None:
            return
        try:
            model, limit = self.host.resolved_model()
        except EtcodeError as err:
            model, limit = "no model", None
            self.call_later(self.conversation.add_notice, f"error: {err}", "error")
        self.status_bar.update_info(agent=self.host.resolved_agent(), model=model, context_limit=limit)

    def _follow_background(self, agent: Agent) -> None:
        """Count the background processes of ``agent`` (the host's new one)."""
        self.background.follow(agent.background)

    def _on_agent_event(self, event: Event) -> None:
        """Events the agent produces outside a turn (``/compact``'s progress, usage, the
        background processes a closed session stopped). Once quitting, the conversation is
        going away: its warnings are printed after the chat (``quit_warnings``)."""
        if self._quit_done:
            from etcode.contract.events import WarningEvent

            if isinstance(event, WarningEvent):
                self.quit_warnings.append(event.message)
            return
        self.call_later(self._show_agent_event, event)

    async def _show_agent_event(self, event: Event) -> None:
        if self.conversation.is_mounted and not self._quit_done:
            await self.feed.handle(event)

    @work(group="warm-up", exit_on_error=False)
    async def warm_up(self) -> None:
        """Prepare the runtime in the background and show a resumed session's history."""
        if self.host is None:
            return
        try:
            await self.host.prepare()
        except EtcodeError:
            return  # reported by _show_model or by the first turn
        await self.show_history()
        self.collector.turn_started()  # start-up state out of the collector's walk, before any turn

    async def show_history(self) -> None:
        """Render the agent's existing conversation (a resumed session)."""
        from etcode.ui.tui.replay import replay_history

        if self.host is None:
            return
        from etcode.contract.events import UsageUpdate
        from etcode.tools.todo import TodoStore

        agent = self.host.agent
        if agent.history:
            stored = await agent.transcript()  # every batch, with what was shown
            await replay_history(self.conversation, agent.history, stored)
        usage = agent.usage_now()
        if isinstance(usage, UsageUpdate) and (agent.history or usage.cost):  # the stored totals, at once
            await self.feed.handle(usage)
        todos = agent.state.get("todos")
        if isinstance(todos, TodoStore) and todos.items:
            self.todos.set_todos(list(todos.items))

    # ---- input -----------------------------------------------------------------------
    async def on_event(self, event: events.Event) -> None:
        """Typing is never lost: a printable key or a paste that no text field would take
        (the focus on a tool block after Tab, or not yet on the input at launch) goes to
        the input, in the order typed. The focus moves to the input at once, so the rest
        of a burst (an input method's commit, dictation: the next keys are already queued)
        goes there too, Enter included."""
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded and self._stray(event):
            if not self.prompt.input.is_mounted:
                self._typeahead.append(event)
                return
            self.screen.set_focus(self.prompt.input)
            self.prompt.input._forward_event(event)
            return
        await super().on_event(event)

    def _stray(self, event: events.Key | events.Paste) -> bool:
        field = self.prompt.input
        if not field.is_mounted:
            return not self._screen_stack or len(self._screen_stack) == 1
        focused = self.focused
        if focused is field or len(self.screen_stack) > 1 or isinstance(focused, (TextArea, Input)):
            return False
        if isinstance(event, events.Paste):
            return True
        return event.is_printable and bool(event.character)  # a block's own keys are not printable

    async def _report_commands(self) -> list[slash.SlashCommand]:
        """The custom commands (read again when stale), each new warning shown once."""
        try:
            await self.custom.load()
        except EtcodeError as err:
            await self.conversation.add_notice(f"warning: custom commands not read: {err}", "warning")
        for warning in self.custom.new_warnings():
            await self.conversation.add_notice(f"warning: {warning}", "warning")
        return self.custom.slash

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text  # as shown: a large paste is a label
        custom = await self._report_commands() if text.lstrip().startswith("/") else []
        parsed = slash.parse_command(text, custom)
        if parsed is not None and parsed.command is not None and parsed.command.custom:
            await self._send_command(message.full, message.images)
            return
        if parsed is not None:
            await self.run_command(parsed)
            return
        trusted = self.config is not None and self.config.trusted

        def read_mentions() -> list[Attachment]:
            from etcode.instance import describe

            return resolve_mentions(text, self.directory, trusted, describe(self.directory).worktree)

        from etcode.provider.types import image_label

        attachments = await asyncio.to_thread(read_mentions)
        task = attach(message.full, attachments) if attachments else message.full
        shown = [image_label(a.image) if a.image else a.path for a in attachments]
        await self._send(text, task, shown, None, [*message.images, *images_of(attachments)])

    async def _send(
        self,
        text: str,
        task: str,
        shown: list[str],
        settings: TurnSettings,
        images: list[ImagePart] | None = None,
    ) -> None:
        if self.busy or (self.host is None and not self._agent_failed):
            self.queued.append((text, task, shown, settings, images or []))
            when = "the current turn ends" if self.busy else "the agent is ready"
            self.notify(f"Queued: it will be sent when {when}.", timeout=3)
            return
        self.queued.insert(0, (text, task, shown, settings, images or []))
        await self._start_queued()

    async def _start_queued(self) -> None:
        text, task, shown, settings, images = self.queued.pop(0)
        if settings is None and not images:
            await self.start_turn(text, task, shown)
        else:
            await self.start_turn(text, task, shown, settings, images)

    async def _send_command(self, full: str, images: list[ImagePart] | None = None) -> None:
        """A custom command: its prompt is sent; ``/name args`` and the files are shown."""
        from etcode.ui.command_prompts import expand_text

        assert self.custom.commands is not None
        trusted = self.config is not None and self.config.trusted
        try:
            found = await asyncio.to_thread(expand_text, full, self.custom.commands, self.directory, trusted)
            choice = None
            if found is not None and self.host is not None:
                choice = await asyncio.to_thread(self.host.command_choice, found.command)
        except EtcodeError as err:
            await self.conversation.add_notice(f"error: {err}", "error")
            return
        if found is None:
            return
        for warning in [*found.warnings, *(choice.warnings if choice else [])]:
            await self.conversation.add_notice(f"warning: {warning}", "warning")
        for note in choice.notes if choice else []:
            await self.conversation.add_notice(note)
        settings = (choice.agent, choice.model) if choice else (None, None)
        await self._send(found.shown, found.prompt, found.files, settings, [*found.images, *(images or [])])

    @property
    def busy(self) -> bool:
        """True from a turn's start until its worker has finished with the widgets."""
        return self._turn_active

    async def start_turn(
        self,
        text: str,
        task: str,
        attached: list[str] | None = None,
        settings: TurnSettings = None,
        images: list[ImagePart] | None = None,
    ) -> None:
        """Show the user's message and run the turn in a worker (with a custom command's
        agent and model: ``settings``; ``images`` go with the task)."""
        await self.conversation.add_user(text, attached)
        if self.host is None:
            await self.conversation.add_notice("error: no agent (see the error above)", "error")
            return
        images = images or []
        self.run_busy(
            self._command_turn(task, settings, images) if settings else self._stream_turn(task, images)
        )

    async def _command_turn(
        self, task: str, settings: tuple[str | None, str | None], images: list[ImagePart]
    ) -> None:
        assert self.host is not None
        try:
            async with self.host.turn_settings(*settings):
                await self._stream_turn(task, images)
        finally:
            self._show_model()

    def run_busy(self, work: Awaitable[None]) -> None:
        """Run agent work (a turn, a compaction) in a worker so the app stays responsive;
        input sent meanwhile is queued."""
        self.status_bar.set_busy(True)
        self._turn_active = True
        self.turn = self.run_worker(self._busy(work), group="turn", exit_on_error=False)

    async def _stream_turn(self, task: str, images: list[ImagePart] | None = None) -> None:
        assert self.host is not None
        waiting = True
        async for event in self.host.agent.stream(task, images):
            if waiting and isinstance(event, StepStart):  # the request is on its way:
                waiting = False  # tidy the heap while the model thinks
                self.set_timer(REQUEST_HEADSTART, self.collector.turn_started)
            self.tool_lines.note(event)
            await self.feed.handle(event)

    async def _busy(self, work: Awaitable[None]) -> None:
        try:
            await work
        except EtcodeError as err:
            await self.conversation.add_notice(f"error: {err}", "error")
        except Exception as err:  # never let a bug kill the chat
            await self.conversation.add_notice(f"error: internal error: {type(err).__name__}: {err}", "error")
        finally:
            try:
                await self.conversation.end_blocks()
            finally:
                self.status_bar.set_busy(False)
                self._turn_active = False
                self.files.invalidate()  # the turn may have made files: offer them to @
        if self._quitting:
            self.call_later(self._finish_quit)
        elif self.queued:
            self.call_later(self._start_queued)

    # ---- actions ---------------------------------------------------------------------
    def action_interrupt(self) -> None:
        """Esc: stop the running turn now (partial answer kept, every tool call answered)."""
        if self.busy and self.host is not None:
            self.queued.clear()
            self.host.agent.interrupt()

    async def action_ctrl_c(self) -> None:
        """First press interrupts (or clears the input); a second within 2 s quits."""
        now = time.monotonic()
        if now - self._ctrl_c_at < QUIT_WINDOW:
            await self.action_quit()
            return
        self._ctrl_c_at = now
        if self.busy:
            self.action_interrupt()
        elif self.prompt.input.text:
            self.prompt.input.load_text("")
        self.notify("Press Ctrl+C again to quit", timeout=QUIT_WINDOW)

    async def action_quit(self) -> None:
        """Quit, letting a running turn wind down first so nothing finished is lost.

        The turn's worker needs this loop to finish, so the wait is not awaited here: the
        worker calls :meth:`_finish_quit` when it ends (a timer forces it if it hangs).
        """
        if self._quitting:
            return
        self._quitting = True
        self.queued.clear()
        if self.busy and self.host is not None:
            self.host.agent.interrupt()
            self.set_timer(SHUTDOWN_WAIT, self._finish_quit)
            return
        await self._finish_quit()

    async def _finish_quit(self) -> None:
        if self._quit_done:
            return
        self._quit_done = True
        try:
            if self.host is not None:
                self.exit_state = exit_state_of(self.host, self.tool_lines)
                with contextlib.suppress(Exception):  # closing must never keep the user in the app
                    await self.host.close()
        finally:
            self.exit(self.exit_code)

    def action_toggle_todos(self) -> None:
        if self.todos.todos:
            self.todos.display = not self.todos.display

    def action_toggle_tools(self) -> None:
        """Ctrl+O: every tool block expanded, or all collapsed when all are expanded."""
        from etcode.ui.tui.widgets.tool import ToolMessage

        blocks = list(self.conversation.query(ToolMessage))
        expand = not all(block.expanded for block in blocks)
        for block in blocks:
            block.set_expanded(expand)

    def action_focus_input(self) -> None:
        self.prompt.input.focus()

    async def action_cycle_agent(self) -> None:
        """Ctrl+N: the next agent (build → plan → …) from the next turn on."""
        from etcode.ui.tui.slash_actions import cycle_agent

        await cycle_agent(self)

    # ---- slash commands --------------------------------------------------------------
    async def run_command(self, parsed: slash.ParsedCommand) -> None:
        from etcode.ui.tui.slash_actions import run_slash

        await run_slash(self, parsed)
