"""Stream chunks whose text can always be encoded (see :mod:`etcode.util.text`).

A service may split a character between two events (JSON escapes ``"\\ud83d"`` then
``"\\ude00"``) or send a lone surrogate; shown or stored as is, that text crashes the
first UTF-8 encoder it meets. Deltas hold back a trailing high surrogate until the next
delta; the final message has its pairs joined and lone halves replaced by U+FFFD.
"""

from __future__ import annotations

from dataclasses import replace

from etcode.provider.types import (
    Message,
    Part,
    ReasoningDelta,
    ReasoningPart,
    StreamChunk,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallPart,
)
from etcode.util.text import SurrogateJoiner, clean_text


class StreamCleaner:
    """Cleans one attempt's chunks, in order: ``clean(chunk)`` returns what to yield."""

    def __init__(self) -> None:
        self._text = SurrogateJoiner()
        self._reasoning = SurrogateJoiner()

    def clean(self, chunk: StreamChunk) -> list[StreamChunk]:
        if isinstance(chunk, TextDelta):
            text = self._text.feed(chunk.text)
            return [TextDelta(text)] if text else []
        if isinstance(chunk, ReasoningDelta):
            text = self._reasoning.feed(chunk.text)
            return [ReasoningDelta(text)] if text else []
        if isinstance(chunk, StreamEnd):
            tail: list[StreamChunk] = []
            if rest := self._reasoning.flush():
                tail.append(ReasoningDelta(rest))
            if rest := self._text.flush():
                tail.append(TextDelta(rest))
            return [*tail, replace(chunk, message=clean_message(chunk.message))]
        return [chunk]


def clean_message(message: Message) -> Message:
    """``message`` with every text field cleaned (the same object when nothing changed)."""
    parts = [_clean_part(part) for part in message.parts]
    if all(new is old for new, old in zip(parts, message.parts, strict=True)):
        return message
    return replace(message, parts=parts)


def _clean_part(part: Part) -> Part:
    if isinstance(part, TextPart | ReasoningPart):
        text = clean_text(part.text)
        return part if text is part.text else replace(part, text=text)
    if isinstance(part, ToolCallPart):
        arguments = clean_text(part.arguments)
        return part if arguments is part.arguments else replace(part, arguments=arguments)
    return part
