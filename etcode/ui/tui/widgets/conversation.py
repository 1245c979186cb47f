"""The scrolling conversation: maps the agent's events onto message widgets.

Layout cost grows with the number of widgets on screen, and a live Markdown document is
many widgets (one per paragraph, list item, table cell...). So the cost stays flat however
long the session: while an answer streams, only its last few blocks are live Markdown, the
blocks before them move into one :class:`FrozenMarkdown` (Rich's renderer, one widget,
rendered in a worker thread);
only the newest ``LIVE_ANSWERS`` answers stay live once finished; and only the newest
``max_widgets`` entries stay mounted at all (the transcript stays complete in the agent's
history and ``/export``).
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from etcode.ui.tui.highlight import LEXERS, language_of
from etcode.ui.tui.widgets.messages import (
    AssistantMessage,
    CodeFence,
    FrozenMarkdown,
    Notice,
    ReasoningMessage,
    UserMessage,
    render_options,
)
from etcode.ui.tui.widgets.tool import ToolMessage
from etcode.util.json_types import JsonObject

MAX_WIDGETS = 200
PRUNE_BATCH = 40
#: Top-level blocks the live Markdown of a streaming answer may hold before its older
#: blocks move into a light widget; ``KEEP_LIVE_BLOCKS`` stay live.
SEGMENT_BLOCKS = 12
KEEP_LIVE_BLOCKS = 4
#: Answers kept as live Markdown once finished; older ones become light widgets.
LIVE_ANSWERS = 2
LIVE_ANSWER_CHARS = 4000


class Conversation(VerticalScroll, can_focus=False):
    """Messages, tool calls and notices, newest at the bottom (anchored while streaming).
    Not focusable itself (Tab would leave the input for no visible place): the input's
    PageUp/PageDown scroll it, and Tab reaches its tool blocks."""

    def __init__(self, *, max_widgets: int = MAX_WIDGETS, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_widgets = max_widgets
        self.pruned = 0
        self.tools: dict[str, ToolMessage] = {}
        self._text: AssistantMessage | None = None
        self._answers = 0
        self._reasoning: ReasoningMessage | None = None
        self._banner: Static | None = None
        #: Entries kept back while a block streams (see :meth:`add_aside`).
        self._pending: list[Widget] = []

    def on_mount(self) -> None:
        self.anchor()

    def lexer_ready(self, language: str) -> None:
        """Repaint the code blocks of ``language`` that are shown plain (its lexer was loading)."""
        for fence in self.query(CodeFence):
            if language_of(fence.lexer) == language:
                fence.rehighlight()
        for frozen in self.query(FrozenMarkdown):
            if language in frozen.rendered.waiting_for:
                self.run_worker(frozen.repaint(), group="repaint")

    # ---- entries ---------------------------------------------------------------------
    async def add(self, widget: Widget) -> Widget:
        """Mount an entry at the bottom, pruning the oldest when over the limit."""
        await self.mount(widget)
        await self._prune()
        return widget

    async def add_user(self, text: str, attached: list[str] | None = None) -> None:
        await self.end_blocks()
        await self.add(UserMessage(text, attached))
        self.anchor()

    async def add_notice(self, text: str, kind: str = "info") -> None:
        await self.end_blocks()
        await self.add(Notice(text, kind))

    async def add_aside(self, widget: Widget) -> Widget:
        """Add an entry that is no part of the turn (a slash command's output) and bring the
        bottom into view. While an answer or reasoning streams it is kept back and added
        after that block ends, so it never splits the block."""
        if self._text is not None or self._reasoning is not None:
            self._pending.append(widget)
        else:
            await self.add(widget)
        self.anchor()
        return widget

    async def append_text(self, fragment: str) -> None:
        if not fragment:
            return
        await self._end_reasoning()
        if self._text is None:
            self._answers += 1
            self._text = AssistantMessage(
                self._answers, spill=self._spill, max_blocks=SEGMENT_BLOCKS, keep_blocks=KEEP_LIVE_BLOCKS
            )
            await self.add(self._text)
        await self._text.write(fragment)

    async def _spill(self, head: str, live: AssistantMessage) -> None:
        """The streaming answer's older blocks go into a light widget above it."""
        await self._freeze_text(head, live.answer, before=live)

    async def _freeze_old(self) -> None:
        """Older answers' live widgets become light ones (the newest stay live)."""
        finished = [w for w in self.children if isinstance(w, AssistantMessage) and w is not self._text]
        for widget in finished[: max(0, len(finished) - LIVE_ANSWERS)]:
            await self._freeze_text(widget.text, widget.answer, before=widget)
            await widget.remove()

    async def _freeze_text(self, source: str, answer: int, *, before: Widget) -> None:
        """Add ``source`` to the light widget just above ``before`` (or a new one there).
        The Markdown is rendered in a worker thread first (``before`` shows it meanwhile),
        so the UI thread only replays lines."""
        options = render_options(before)
        index = self.children.index(before)
        above = self.children[index - 1] if index else None
        if isinstance(above, FrozenMarkdown) and above.can_take(source, answer):
            frozen = above
            await frozen.extend(source, options)
        else:
            frozen = FrozenMarkdown(source, answer)
            await frozen.prerender(self.app.console, options)
            await self.mount(frozen, before=before if before.parent is self else None)
        if any(LEXERS.ready(language) for language in frozen.rendered.waiting_for):
            self.run_worker(frozen.repaint(), group="repaint")  # a lexer came while it rendered

    def answer_widget(self, markdown: str, *, live: bool = False) -> Widget:
        """A finished answer (a resumed session): light unless ``live`` and short."""
        self._answers += 1
        if live and len(markdown) <= LIVE_ANSWER_CHARS:
            return AssistantMessage(self._answers, markdown=markdown)
        return FrozenMarkdown(markdown, self._answers)

    async def add_many(self, widgets: list[Widget]) -> None:
        """Mount finished entries in one go (only the newest ``max_widgets`` of them)."""
        await self.end_blocks()
        keep = widgets[-self.max_widgets :]
        for widget in keep:
            if isinstance(widget, ToolMessage):
                self.tools[widget.call_id] = widget
        self.pruned += len(widgets) - len(keep)
        await self.mount_all(keep)
        await self._prune()
        await self._update_banner()
        self.anchor()

    async def append_reasoning(self, fragment: str) -> None:
        if not fragment:
            return
        await self._end_text()
        if self._reasoning is None:
            self._reasoning = ReasoningMessage()
            await self.add(self._reasoning)
        self._reasoning.write(fragment)

    async def tool_started(self, call_id: str, name: str, summary: str, params: JsonObject) -> ToolMessage:
        await self.end_blocks()
        widget = ToolMessage(call_id, name, summary, params)
        self.tools[call_id] = widget
        await self.add(widget)
        return widget

    async def tool_finished(
        self,
        call_id: str,
        name: str,
        summary: str,
        output: str,
        *,
        is_error: bool,
        data: JsonObject | None = None,
    ) -> ToolMessage:
        widget = self.tools.get(call_id)
        if widget is None:  # a result without a start (e.g. arguments that were not JSON)
            widget = await self.tool_started(call_id, name, "", {})
        widget.set_result(summary, output, is_error=is_error, data=data)
        return widget

    async def end_blocks(self) -> None:
        """Close the streaming text and reasoning blocks (a tool call or a turn's end)."""
        await self._end_text()
        await self._end_reasoning()
        while self._pending:
            await self.add(self._pending.pop(0))

    async def _end_text(self) -> None:
        if self._text is not None:
            text, self._text = self._text, None
            await text.finish()
            await self._freeze_old()

    async def _end_reasoning(self) -> None:
        if self._reasoning is not None:
            reasoning, self._reasoning = self._reasoning, None
            reasoning.finish()

    async def clear(self) -> None:
        """Remove every entry."""
        await self.end_blocks()
        self.tools.clear()
        self.pruned = 0
        self._banner = None
        self._pending.clear()
        await self.remove_children()

    @property
    def entries(self) -> list[Widget]:
        return [child for child in self.children if child is not self._banner]

    async def _prune(self) -> None:
        entries = self.entries
        excess = len(entries) - self.max_widgets
        if excess <= 0:
            return
        drop = [
            w for w in entries[: max(excess, PRUNE_BATCH)] if w is not self._text and w is not self._reasoning
        ]
        for widget in drop:
            if isinstance(widget, ToolMessage):
                self.tools.pop(widget.call_id, None)
        self.pruned += len(drop)
        await self.remove_children(drop)
        await self._update_banner()

    async def _update_banner(self) -> None:
        if not self.pruned:
            return
        label = f"… {self.pruned} earlier entries hidden (/export writes the full transcript)"
        if self._banner is None:
            self._banner = Static(label, classes="pruned-banner", markup=False)
            await self.mount(self._banner, before=0)
        else:
            self._banner.update(label)
