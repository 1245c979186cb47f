"""Conversation entries: the user's messages, streamed assistant Markdown, reasoning, notices."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Awaitable, Callable
from typing import ClassVar

from markdown_it.token import Token
from rich import box
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.markdown import CodeBlock, Heading, ListItem, MarkdownElement, TableElement
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownBlock, MarkdownFence
from textual.worker import Worker

from etcode.ui.tui.cells import narrow_emoji
from etcode.ui.tui.highlight import LEXERS, language_of
from etcode.ui.tui.theme import code_theme


class UserMessage(Static):
    """What the user sent, with the names of the files attached through ``@path`` (an
    image's label, ``[image: NAME W×H]``, as it is)."""

    def __init__(self, text: str, attached: list[str] | None = None) -> None:
        body = Text(text)
        if attached:
            names = [path if path.startswith("[image: ") else f"@{path}" for path in attached]
            body.append("\n" + "  ".join(names), style="dim")
        super().__init__(body, classes="user-message", markup=False)


Spill = Callable[[str, "AssistantMessage"], Awaitable[None]]


def block_starts(markdown: str) -> list[int]:
    """The first line of each top-level Markdown block."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("gfm-like").parse(markdown)
    return [token.map[0] for token in tokens if token.map is not None and token.level == 0]


class CodeFence(MarkdownFence):
    """A fenced code block highlighted only with a known, loaded lexer (see
    :mod:`etcode.ui.tui.highlight`); plain text until then, repainted when it is ready."""

    @classmethod
    def highlight(cls, code: str, language: str, ansi: bool = False, dark: bool = False) -> Content:
        known = language_of(language)
        if known is None or not LEXERS.ready(known):
            return Content(code.rstrip("\n"))
        return super().highlight(code, known, ansi=ansi, dark=dark)

    def rehighlight(self) -> None:
        """Highlight again (its lexer just became ready)."""
        app = self.app
        self._highlighted_code = self.highlight(
            self.code, self.lexer, app.native_ansi_color, app.current_theme.dark
        )
        self.set_content(self._highlighted_code)


class ChatTable(MarkdownBlock):
    """A table of the live Markdown drawn as a finished answer draws it (Rich's table, see
    :class:`_BorderedTable`): one rule under the header, not a grid line between every
    row, and the same cell widths (:func:`narrow_emoji`) whether streaming or finished.

    Rich takes milliseconds per row, so while the table streams it is drawn again in a
    worker thread (the rows shown so far stay meanwhile; only the newest text is drawn),
    and after each drawing the next waits four times as long as that one took: the thread
    holds the GIL, and drawing a big table without a pause starved the UI thread (a
    400-row table streamed in small chunks took minutes). :meth:`drawn` skips the pause."""

    _source = ""  # the newest Markdown of the table
    _drawing: Worker[None] | None = None
    _hurry: asyncio.Event | None = None  # set: draw the newest text now (the answer ended)
    PAUSE_FACTOR = 4

    def compose(self) -> ComposeResult:
        self._source = table_source(self)
        self.update(_TableLines(self._source))  # at once: a table shown whole (not streaming)
        self._blocks.clear()
        return iter(())

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        """The streamed table grew: draw it again in place."""
        if not isinstance(block, ChatTable):
            await super()._update_from_block(block)
            return
        self._source = table_source(block)
        if self._drawing is None or self._drawing.is_finished:
            self._drawing = self.run_worker(self._draw(), group="table", exit_on_error=False)

    async def _draw(self) -> None:
        """Draw the newest source off the UI thread and show it; again, after a pause,
        while the source grew meanwhile."""
        if self._hurry is None:
            self._hurry = asyncio.Event()
        while True:
            source = self._source
            start = time.monotonic()
            lines = _TableLines(source)
            await lines.prerender(self.app.console, render_options(self._markdown))
            self.update(lines)
            if source == self._source:
                return
            pause = self.PAUSE_FACTOR * (time.monotonic() - start)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hurry.wait(), pause)

    async def drawn(self) -> None:
        """Wait until the newest text is shown (drawn without a pause)."""
        if self._drawing is not None:
            if self._hurry is not None:
                self._hurry.set()
            await self._drawing.wait()


#: Textual's blocks of a table's rows and cells (not exported by ``textual.widgets.markdown``).
_ROW, _HEAD_CELL, _CELL = (Markdown.BLOCKS[name] for name in ("tr_open", "th_open", "td_open"))
_ALIGN = {"text-align:left": ":---", "text-align:right": "---:", "text-align:center": ":---:"}


def table_source(table: MarkdownBlock) -> str:
    """The Markdown of a parsed table, rebuilt from its cells (a table inside a list or a
    quote comes without their prefixes)."""
    rows: list[list[str]] = []
    aligns: list[str] = []

    def walk(block: MarkdownBlock) -> None:
        for child in block._blocks:
            if isinstance(child, _ROW):
                rows.append([])
            elif isinstance(child, (_HEAD_CELL, _CELL)) and rows:
                inline = child._inline_token
                rows[-1].append(re.sub(r"(?<!\\)\|", r"\\|", inline.content if inline else ""))
                if isinstance(child, _HEAD_CELL):
                    aligns.append(_ALIGN.get(str(child._token.attrs.get("style", "")), "---"))
            walk(child)

    walk(table)
    if not rows:
        return ""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join(aligns or ["---"] * len(rows[0])) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines) + "\n"


CODE_BLOCKS: dict[str, type[MarkdownBlock]] = {
    **Markdown.BLOCKS,
    "fence": CodeFence,
    "code_block": CodeFence,
    "table_open": ChatTable,
}


class AssistantMessage(Markdown):
    """Assistant text rendered as Markdown while it streams, appended in batches (at most
    one feed per ``FEED_INTERVAL``: each feed costs a parse, a layout and a repaint, so a
    fast stream never starves key handling).
    A feed's cost grows with its last block (a streaming table is parsed whole each time),
    so after a slow feed the next waits twice as long as it took: the UI thread stays
    free two thirds of the time and chunks arriving meanwhile are shown together.

    With a ``spill`` callback the widget stays small: when it would hold more than
    ``max_blocks`` top-level blocks, all but the last ``keep_blocks`` are handed to
    ``spill`` (which shows them in a lighter widget) instead of being mounted here.
    """

    FEED_INTERVAL = 0.08
    BLOCKS = CODE_BLOCKS

    def __init__(
        self,
        answer: int = 0,
        *,
        markdown: str = "",
        spill: Spill | None = None,
        max_blocks: int = 12,
        keep_blocks: int = 4,
    ) -> None:
        markdown = narrow_emoji(markdown)
        super().__init__(markdown, classes="assistant-message")
        self._pending: list[str] = []
        self._fed = markdown
        self._feed_timer: Timer | None = None
        self._feeding = asyncio.Lock()
        self._next_feed = 0.0  # monotonic time before which writes wait for the timer
        self.spill = spill
        self.max_blocks = max_blocks
        self.keep_blocks = keep_blocks
        #: All parts of one answer (this widget and what it spilled) share this number.
        self.answer = answer

    @property
    def text(self) -> str:
        """This widget's text, including what is not shown yet."""
        return self._fed + "".join(self._pending)

    @property
    def blocks(self) -> list[MarkdownBlock]:
        return [child for child in self.children if isinstance(child, MarkdownBlock)]

    async def write(self, fragment: str) -> None:
        """Append streamed text (shown within ``FEED_INTERVAL``; a one-shot timer runs
        only while text is pending)."""
        if not fragment:
            return
        fragment = narrow_emoji(fragment, before=self._pending[-1] if self._pending else self._fed)
        if not fragment:
            return
        self._pending.append(fragment)
        wait = self._next_feed - time.monotonic()
        if wait <= 0:
            await self._feed()
        elif self._feed_timer is None:
            self._feed_timer = self.set_timer(wait, self._feed)

    async def _feed(self) -> None:
        """Show the pending text. One feed at a time (the timer's and a write's may
        overlap, and a feed awaits): text written meanwhile waits for the next one."""
        if self._feed_timer is not None:
            self._feed_timer.stop()
            self._feed_timer = None
        async with self._feeding:
            if not self._pending:
                return
            new = "".join(self._pending)
            self._pending.clear()
            start = time.monotonic()
            try:
                await self._show(new)
            finally:
                end = time.monotonic()
                self._next_feed = max(start + self.FEED_INTERVAL, end + 2 * (end - start))

    async def _show(self, new: str) -> None:
        if self.spill is not None and await self._spill_head(self._fed + new):
            return
        self._fed += new
        await self.append(new)  # awaited here, not queued on a MarkdownStream: its cost paces the next feed

    async def _spill_head(self, text: str) -> bool:
        """Hand all but the last blocks of ``text`` to ``spill``; False if it is short."""
        starts = block_starts(text)
        if len(starts) <= self.max_blocks:
            return False
        lines = text.splitlines(keepends=True)
        cut = starts[-self.keep_blocks]
        head, tail = "".join(lines[:cut]), "".join(lines[cut:])
        assert self.spill is not None
        await self.spill(head, self)
        self._fed = tail
        await self.update(tail)
        return True

    async def finish(self) -> None:
        """Show what is pending (its tables drawn)."""
        await self._feed()
        for table in self.query(ChatTable):
            await table.drawn()


class RenderedMarkdown:
    """Rich Markdown rendered once per width and replayed: Textual asks a widget's
    renderable for its height and then for its lines, and Rich's Markdown is slow (tens of
    ms for a screenful with tables and code). :meth:`prerender` fills the cache from a
    worker thread, so the UI thread only replays lines."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.code_theme = code_theme()  # here, in the UI thread
        self._markdown: RichMarkdown | None = None
        self._lines: dict[int, list[list[Segment]]] = {}
        #: Languages of its code blocks whose lexers were not loaded yet (shown plain).
        self.waiting_for = {name for name in languages_in(source) if not LEXERS.ready(name)}

    @property
    def markdown(self) -> RichMarkdown:
        """Rich's Markdown of the source, parsed on first use (in the worker thread)."""
        if self._markdown is None:
            source = narrow_emoji(self.source)
            self._markdown = _ChatMarkdown(source, code_theme=self.code_theme, hyperlinks=False)
        return self._markdown

    def lines(self, console: Console, options: ConsoleOptions) -> list[list[Segment]]:
        width = options.max_width
        lines = self._lines.get(width)
        if lines is None:  # console.render, not render_lines: that one takes the console's lock
            segments = console.render(self.markdown, options)
            lines = list(Segment.split_and_crop_lines(segments, width, include_new_lines=False, pad=False))
            self._lines[width] = lines
        return lines

    async def prerender(self, console: Console, options: ConsoleOptions) -> None:
        if options.max_width not in self._lines:
            await asyncio.to_thread(self.lines, console, options)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self.lines(console, options):
            yield from line
            yield new_line


class _TableLines(RenderedMarkdown):
    """A table alone, without the blank lines Rich puts around a Markdown block (the
    block's margin is the gap)."""

    def lines(self, console: Console, options: ConsoleOptions) -> list[list[Segment]]:
        lines = super().lines(console, options)
        blank = [i for i, line in enumerate(lines) if not "".join(s.text for s in line).strip()]
        start = next((i for i in range(len(lines)) if i not in blank), len(lines))
        end = next((i + 1 for i in range(len(lines) - 1, -1, -1) if i not in blank), start)
        return lines[start:end]


def render_options(widget: Widget) -> ConsoleOptions:
    """Rich console options for rendering at ``widget``'s content width, as Textual does."""
    return widget.app.console_options.update_width(widget.content_region.width).update(highlight=False)


class FrozenMarkdown(Static):
    """Finished assistant text as one light widget (Rich's Markdown renderer): older text
    keeps its formatting without the many widgets of a live Markdown document. Segments of
    the same answer are merged into it up to ``MAX_CHARS``."""

    MAX_CHARS = 4_000

    def __init__(self, source: str, answer: int = 0) -> None:
        self.rendered = RenderedMarkdown(source)
        super().__init__(self.rendered, classes="assistant-message frozen", markup=False)
        self.source = source
        self.answer = answer

    async def prerender(self, console: Console, options: ConsoleOptions) -> None:
        """Render for ``options.max_width`` in a worker thread (before mounting)."""
        await self.rendered.prerender(console, options)

    async def repaint(self) -> None:
        """Render again, in a worker thread (a code block's lexer has become ready)."""
        await self._show(self.source, render_options(self))

    async def _show(self, source: str, options: ConsoleOptions) -> None:
        """Show ``source``, rendered in a worker thread first (the old text stays meanwhile)."""
        rendered = RenderedMarkdown(source)
        await rendered.prerender(self.app.console, options)
        self.source = source
        self.rendered = rendered
        self.update(rendered)

    @property
    def text(self) -> str:
        return self.source

    def can_take(self, source: str, answer: int) -> bool:
        return answer == self.answer and len(self.source) + len(source) <= self.MAX_CHARS

    async def extend(self, source: str, options: ConsoleOptions) -> None:
        """Append ``source``, rendering the merged text in a worker thread first."""
        await self._show(self.source + source, options)


_FENCE_INFO = re.compile(r"^ {0,3}(?:```|~~~)[`~]*[ \t]*([^\s`]*)", re.MULTILINE)


def languages_in(markdown: str) -> set[str]:
    """The known languages of the code blocks in ``markdown``."""
    return {name for name in map(language_of, _FENCE_INFO.findall(markdown)) if name}


class _CodeBlock(CodeBlock):
    """Rich's code block, with the same lexer rules as :class:`CodeFence`."""

    @classmethod
    def create(cls, markdown: RichMarkdown, token: Token) -> CodeBlock:
        known = language_of(token.info)
        return cls(known if known is not None and LEXERS.ready(known) else "text", markdown.code_theme)


class _BorderedTable(TableElement):
    """Rich's table with the borders the live Markdown widget draws (a table looks the
    same in a finished or resumed answer as while it streamed)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = Table(box=box.SQUARE, expand=True, style="markdown.table.border")  # a header rule only
        if self.header is not None and self.header.row is not None:
            for column in self.header.row.cells:
                heading = column.content.copy()
                heading.stylize("markdown.table.header")
                table.add_column(heading)
        if self.body is not None:
            for row in self.body.rows:
                table.add_row(*(cell.content for cell in row.cells))
        yield table


class _NumberedItem(ListItem):
    """An item of an ordered list numbered ``1.`` as the live Markdown widget numbers it
    (Rich's own renderer drops the dot)."""

    def render_number(
        self, console: Console, options: ConsoleOptions, number: int, last_number: int
    ) -> RenderResult:
        width = len(f"{max(number, last_number - 1)}.") + 2  # Rich's last_number is one past
        lines = console.render_lines(
            self.elements, options.update(width=options.max_width - width), style=self.style
        )
        number_style = console.get_style("markdown.item.number", default="none")
        numeral = Segment(f"{number}. ".rjust(width), number_style)
        padding = Segment(" " * width, number_style)
        for first, line in enumerate(lines):
            yield numeral if first == 0 else padding
            yield from line
            yield Segment.line()


class _LeftHeading(Heading):
    """Headings aligned left, as the live Markdown widget shows them."""

    LEVEL_ALIGN: ClassVar[dict[str, JustifyMethod]] = dict.fromkeys(
        ("h1", "h2", "h3", "h4", "h5", "h6"), "left"
    )


class _ChatMarkdown(RichMarkdown):
    """Rich's Markdown with left-aligned headings, etcode's code blocks and bordered tables."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **RichMarkdown.elements,
        "heading_open": _LeftHeading,
        "fence": _CodeBlock,
        "table_open": _BorderedTable,
        "list_item_open": _NumberedItem,
    }


class ReasoningMessage(Collapsible):
    """Model thinking: dimmed, expanded while it streams, collapsed when the answer starts."""

    def __init__(self) -> None:
        self._body = Static("", classes="reasoning-body", markup=False)
        super().__init__(self._body, title="Thinking…", collapsed=False, classes="reasoning")
        self.text = ""

    def write(self, fragment: str) -> None:
        self.text += fragment
        self._body.update(self.text)

    def finish(self) -> None:
        lines = self.text.strip().count("\n") + 1 if self.text.strip() else 0
        self.title = f"Thought ({lines} line{'s' if lines != 1 else ''})"
        self.collapsed = True


class Notice(Static):
    """A one-line notice: ``info``, ``warning``, ``error`` or ``stopped``."""

    def __init__(self, text: str, kind: str = "info") -> None:
        super().__init__(Text(text), classes=f"notice notice-{kind}", markup=False)


class HelpMessage(Markdown):
    """Static Markdown (``/help``, resumed-session summaries)."""

    BLOCKS = CODE_BLOCKS

    def __init__(self, markdown: str) -> None:
        super().__init__(markdown, classes="help-message")
