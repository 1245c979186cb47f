"""The environment block (working directory, platform, date) in a request.

It changes per folder and per day, so it is not part of the system text: it is joined to
the front of the first user message of each request, after the system prompt and the tools.
Those then form the same prefix in every folder and on every day, the part a server's prompt
cache serves (llama.cpp renders the system text, then the tools; Anthropic caches tools, then
system, then messages). Joined at request time, it is never stored, survives compaction (the
new history's first user message gets it) and adds no message: roles still alternate.
"""

from __future__ import annotations

from etcode.provider.types import Message, TextPart


def with_environment(messages: list[Message], environment: str | None) -> list[Message]:
    """``messages`` with ``environment`` joined to the front of the first user message (a
    user message of its own at the start when there is none); unchanged when it is None."""
    if not environment:
        return messages
    block = TextPart(environment.rstrip() + "\n\n")
    for index, message in enumerate(messages):
        if message.role == "user":
            joined = Message("user", [block, *message.parts])
            return [*messages[:index], joined, *messages[index + 1 :]]
    return [Message("user", [TextPart(environment.rstrip())]), *messages]


def counted_system(system: list[str], environment: str | None) -> list[str]:
    """The system texts with the environment, for the context estimates (it is sent, only
    in another place)."""
    return [*system, environment] if environment else system
