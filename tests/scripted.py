"""An in-process provider that plays scripted answers (for loop tests without HTTP)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from etcode.provider.errors import ProviderError
from etcode.provider.types import (
    Message,
    ModelRequest,
    StreamChunk,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallPart,
    ToolCallStarted,
    Usage,
)

_ids = itertools.count(1)


@dataclass
class Answer:
    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)  # (name, dict or raw str)
    delay: float = 0.0  # seconds before each chunk
    error: ProviderError | None = None


class ScriptedProvider:
    id = "scripted"

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self.requests.append(request)
        # Snapshot the list: the loop keeps appending to it (messages are never mutated).
        request.messages = list(request.messages)
        if not self.answers:
            raise ProviderError("scripted provider: no answer left", kind="bad_request")
        answer = self.answers.pop(0)
        if answer.error is not None:
            raise answer.error
        parts: list[Any] = []
        if answer.text:
            for word in answer.text.split(" "):
                if answer.delay:
                    await asyncio.sleep(answer.delay)
                yield TextDelta(word + " ")
            parts.append(TextPart(answer.text))
        for index, (name, args) in enumerate(answer.calls):
            call_id = f"call_{next(_ids)}"
            yield ToolCallStarted(index, call_id, name)
            raw = args if isinstance(args, str) else json.dumps(args)
            parts.append(ToolCallPart(call_id, name, raw))
        usage = Usage(input_tokens=10, output_tokens=5)
        yield StreamEnd(Message("assistant", parts), usage, "tool_use" if answer.calls else "end_turn")

    async def aclose(self) -> None:
        return None
