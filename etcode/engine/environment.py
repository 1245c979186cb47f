"""The environment block (working directory, platform, date) in a request.

It changes per folder and per day, so it is not part of the system text: it is joined to
the front of the first user message of each request, after the system prompt and the tools.
Those then form the same prefix in every folder and on every day, the part a server's prompt
cache serves (llama.cpp renders the system text, then the tools; Anthropic caches tools, then
system, then messages). Joined at request time, it is never stored, survives compaction (the
new history's first user message gets it) and adds no message: roles still alternate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

from etcode.provider.base import Provider
from etcode.provider.types import Message, ModelRequest, StreamChunk, TextPart


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


class EnvironmentJoined:
    """``provider`` for a request built with :func:`counted_system` (a summary's: its room
    and size counted with the environment), sent as every request carries the environment:
    joined to the first user message, after the system text and tools a prompt cache serves."""

    def __init__(self, provider: Provider, environment: str | None) -> None:
        self.provider = provider
        self.environment = environment
        self.id = provider.id

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        env = self.environment
        if env and request.system and request.system[-1] == env:
            request = replace(
                request, system=request.system[:-1], messages=with_environment(request.messages, env)
            )
        return self.provider.stream(request)

    async def aclose(self) -> None:
        """Nothing of its own: the provider is closed by its owner."""
