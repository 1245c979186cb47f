"""The protocol every provider adapter implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from etcode.provider.types import ModelRequest, StreamChunk


@runtime_checkable
class Provider(Protocol):
    """Streams one model answer.

    ``stream`` yields text/reasoning/tool-call deltas and :class:`RetryNotice` while it
    retries, and ends with exactly one :class:`StreamEnd` holding the assembled assistant
    message and its usage. Failures raise :class:`etcode.provider.errors.ProviderError`
    (after retries are exhausted).
    """

    id: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]: ...

    async def aclose(self) -> None: ...
