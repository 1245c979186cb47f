"""Maps the agent's events onto the widgets. This is the TUI's whole view of a run: it
reads the events' fields (``summary``, ``usage``, ``todos``...) and computes nothing."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from etcode.contract import events as ev
from etcode.ui.tui.widgets.conversation import Conversation
from etcode.ui.tui.widgets.status import StatusBar
from etcode.ui.tui.widgets.todo import TodoPanel
from etcode.ui.tui.widgets.tool import ToolMessage
from etcode.ui.tui.widgets.working import WorkingLine
from etcode.util.json_types import JsonObject


def context_of_usage(usage: dict[str, int]) -> int:
    """Tokens in the context after a step (used until a ``usage`` event says better)."""
    keys = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    return sum(int(usage.get(key) or 0) for key in keys)


class EventFeed:
    """``await feed.handle(event)`` for each event of ``agent.stream(task)``."""

    def __init__(self, conversation: Conversation, status: StatusBar, todos: TodoPanel) -> None:
        self.conversation = conversation
        self.status = status
        self.todos = todos
        self.last_result: JsonObject | None = None
        #: True once the core sends ``usage`` events (context %, cost): StepFinish is then ignored.
        self.has_usage_events = False
        #: ``✻ Working…`` above the input (set by the app); None: not shown.
        self.working: WorkingLine | None = None
        self._running: dict[str, ToolMessage] = {}  # tool calls not finished yet
        #: Calls whose permission question opened before their block was shown.
        self._awaiting: set[str] = set()
        self._show_bound: Callable[[ev.Event], Awaitable[None]] = self._show

    def tick(self, frame: int) -> None:
        """A spinner frame (the status bar's timer, only while busy): elapsed times."""
        if self.working is not None:
            self.working.tick(frame)
        for widget in list(self._running.values()):
            if widget.running:
                widget.tick()
            else:
                self._running.pop(widget.call_id, None)

    def busy_changed(self, busy: bool) -> None:
        """A turn started or ended: the working line (only with the spinner: a still
        screen, e.g. a snapshot, has no elapsed times)."""
        if self.working is None:
            return
        if busy and self.status.spinner:
            self.working.start()
        elif not busy:
            self.working.stop()
            self._running.clear()

    async def handle(self, event: ev.Event) -> None:
        """Show one event on its widget."""
        await self._show_bound(event)

    @functools.singledispatchmethod
    async def _show(self, event: ev.Event) -> None:
        """One method per event class below (registered by the type of its argument); events
        the TUI does not show end here. Bound once (``_show_bound``): on Python 3.11 each
        lookup of a ``singledispatchmethod`` builds its wrapper anew."""

    @_show.register
    async def _text(self, event: ev.TextDeltaEvent) -> None:
        self._count(event.text)
        await self.conversation.append_text(event.text)

    @_show.register
    async def _reasoning(self, event: ev.ReasoningDeltaEvent) -> None:
        self._count(event.text)
        await self.conversation.append_reasoning(event.text)

    @_show.register
    async def _tool_started(self, event: ev.ToolCallStart) -> None:
        self._count(event.params)
        widget = await self.conversation.tool_started(event.call_id, event.name, event.summary, event.params)
        self._running[event.call_id] = widget
        if event.call_id in self._awaiting:
            self._awaiting.discard(event.call_id)
            widget.await_approval()

    def approval_asked(self, call_id: str) -> None:
        """The permission question of ``call_id`` opened: its block waits (no clock)."""
        widget = self.conversation.tools.get(call_id)
        if widget is None:  # its start event is still on its way
            self._awaiting.add(call_id)
        else:
            widget.await_approval()

    def approval_answered(self, call_id: str, allowed: bool) -> None:
        """Answered: an allowed call's clock starts now; a denied one never runs."""
        self._awaiting.discard(call_id)
        widget = self.conversation.tools.get(call_id)
        if widget is not None:
            widget.approval_answered(allowed)

    @_show.register
    async def _tool_progress(self, event: ev.ToolProgress) -> None:
        running = self._running.get(event.call_id) or self.conversation.tools.get(event.call_id)
        if running is not None:
            running.add_output(event.text)

    @_show.register
    async def _tool_finished(self, event: ev.ToolResultEvent) -> None:
        await self.conversation.tool_finished(
            event.call_id, event.name, event.summary, event.output, is_error=event.is_error, data=event.data
        )

    @_show.register
    async def _todos(self, event: ev.TodoUpdate) -> None:
        self.todos.set_todos(event.todos)

    @_show.register
    async def _session_start(self, event: ev.SessionStart) -> None:
        self.status.update_info(model=event.model, agent=event.agent)

    @_show.register
    async def _step_finished(self, event: ev.StepFinish) -> None:
        if self.working is not None:
            self.working.step_finished(int(event.usage.get("output_tokens") or 0))
        if not self.has_usage_events:
            self.status.update_info(context_tokens=context_of_usage(event.usage))

    @_show.register
    async def _retry(self, event: ev.RetryEvent) -> None:
        await self.conversation.add_notice(
            f"⟳ retrying in {event.delay:.1f}s (attempt {event.attempt}): {event.reason}", "info"
        )

    @_show.register
    async def _warning(self, event: ev.WarningEvent) -> None:
        await self.conversation.add_notice(f"warning: {event.message}", "warning")

    @_show.register
    async def _error(self, event: ev.ErrorEvent) -> None:
        await self.conversation.add_notice(f"error: {event.message}", "error")

    @_show.register
    async def _soft_limit(self, event: ev.SoftLimitEvent) -> None:
        await self.conversation.add_notice(f"warning: {event.message}", "warning")

    @_show.register
    async def _stopped(self, event: ev.StoppedEvent) -> None:
        await self.conversation.add_notice(event.message, "stopped")

    @_show.register
    async def _done(self, event: ev.DoneEvent) -> None:
        self.last_result = event.result
        await self.conversation.end_blocks()

    @_show.register
    async def _usage(self, event: ev.UsageUpdate) -> None:
        self.has_usage_events = True
        changes: dict[str, object] = {"context_tokens": event.context_tokens, "cost": event.cost}
        if event.context_window:
            changes["context_limit"] = event.context_window
        self.status.update_info(**changes)

    @_show.register
    async def _compaction(self, event: ev.CompactionEvent) -> None:
        notice = self.conversation.add_notice
        if event.phase == "done" and event.tokens_before:
            why = f" ({event.message})" if event.message else ""
            await notice(
                f"⟳ context compacted ({event.reason}): ~{event.tokens_before:,} → ~{event.tokens_after:,} tokens{why}"
            )
        elif event.phase == "done" and event.message:
            await notice(event.message)
        elif event.phase == "failed":
            await notice(f"warning: context compaction failed: {event.message}", "warning")

    @_show.register
    async def _hook(self, event: ev.HookRun) -> None:
        """``● PostToolUse hook (ruff format)`` with ``└`` what came of it."""
        kind = "info" if event.outcome == "ok" else "warning"
        await self.conversation.add_notice(f"● {ev.hook_title(event)}\n  └ {ev.hook_result(event)}", kind)

    @_show.register
    async def _subagent(self, event: ev.SubagentEvent) -> None:
        """A subagent's tool call shows under its parent's ``Task`` block; its hooks and
        warnings as the parent's own."""
        notice = ev.subagent_notice(event)
        if notice is not None:
            await self._show_bound(notice)
            return
        child = event.event or {}
        widget = self.conversation.tools.get(event.call_id)
        if widget is not None and child.get("type") == "tool_call_start":
            name, summary = child.get("name", ""), child.get("summary", "")
            widget.set_progress(f"{name} ({summary})" if summary else name)

    @_show.register
    async def _workflow_phase(self, event: ev.WorkflowPhase) -> None:
        label = {"executing": f"Executing [{event.todo_id}]", "verified": "Verdict"}.get(
            event.phase, event.phase.capitalize()
        )
        await self.conversation.add_notice(f"◆ {label}: {event.message}" if event.message else f"◆ {label}")

    @_show.register
    async def _verification(self, event: ev.VerificationResult) -> None:
        verdict = "✔ verified" if event.all_completed and event.user_needs_satisfied else "✘ not yet"
        await self.conversation.add_notice(f"{verdict}: {event.overall_feedback}", "info")

    def _count(self, streamed: str | JsonObject) -> None:
        """Model output streamed (text, reasoning, a call's arguments): the working line's tokens."""
        if self.working is not None and self.working.active:
            self.working.add_chars(len(streamed) if isinstance(streamed, str) else len(str(streamed)))
