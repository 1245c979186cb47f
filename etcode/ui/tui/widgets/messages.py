"""Conversation entries: the user's messages, streamed assistant Markdown, reasoning, notices."""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from rich.text import Text
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownBlock, MarkdownStream


class UserMessage(Static):
    """What the user sent, with the names of the files attached through ``@path``."""

    def __init__(self, text: str, attached: list[str] | None = None) -> None:
        body = Text(text)
        if attached:
            body.append("\n" + "  ".join(f"@{path}" for path in attached), style="dim")
        super().__init__(body, classes="user-message", markup=False)


class AssistantMessage(Markdown):
    """Assistant text rendered as Markdown while it streams (fed through a
    :class:`MarkdownStream`, which batches fragments so a fast stream never starves input).

    A long answer is split into several of these segments (see ``Conversation``), so each
    one stays small; ``source`` is this segment's text.
    """

    def __init__(self) -> None:
        super().__init__("", classes="assistant-message")
        self._stream: MarkdownStream | None = None

    @property
    def text(self) -> str:
        return self.source

    @property
    def blocks(self) -> list[MarkdownBlock]:
        return [child for child in self.children if isinstance(child, MarkdownBlock)]

    async def write(self, fragment: str) -> None:
        """Append streamed text."""
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(fragment)

    async def finish(self) -> None:
        """Flush what is pending and stop the stream."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()

    async def split_last_block(self) -> str:
        """Finish, keep every block but the last (which may still grow) and return the
        text from the last block on, for the next segment. ``""`` when there is one block."""
        await self.finish()
        blocks = self.blocks
        if len(blocks) < 2 or blocks[-1].source_range is None:
            return ""
        start = blocks[-1].source_range[0]
        lines = self.source.splitlines(keepends=True)
        head, tail = "".join(lines[:start]), "".join(lines[start:])
        if not head.strip():
            return ""
        await self.update(head)
        return tail


class FrozenMarkdown(Static):
    """A finished assistant segment as one light widget (Rich's Markdown renderer): older
    text keeps its formatting without the many widgets a live Markdown document has."""

    def __init__(self, source: str) -> None:
        super().__init__(
            RichMarkdown(source, code_theme="ansi_dark", hyperlinks=False),
            classes="assistant-message frozen",
            markup=False,
        )
        self.source = source

    @property
    def text(self) -> str:
        return self.source


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

    def __init__(self, markdown: str) -> None:
        super().__init__(markdown, classes="help-message")
