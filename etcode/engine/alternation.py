"""User and assistant turns alternate in every request sent.

A compacted history holds user messages in a row (the summary, then the newest message, or
the other way round when the newest turn was split; a note before a request), and some chat
templates refuse that (Gemma's: "Conversation roles must alternate"; llama.cpp then rejects
every request). The stored history keeps them apart; at request time consecutive user
messages are joined into one, their parts in order (images included), a blank line between.
"""

from __future__ import annotations

from etcode.provider.types import Message, Part, TextPart

SEPARATOR = "\n\n"


def alternating(messages: list[Message]) -> list[Message]:
    """``messages`` with each run of consecutive user messages joined into one."""
    out: list[Message] = []
    for message in messages:
        if message.role == "user" and out and out[-1].role == "user":
            parts: list[Part] = [*out[-1].parts, TextPart(SEPARATOR), *message.parts]
            out[-1] = Message("user", parts)
        else:
            out.append(message)
    return out
