"""``Provider``: etcode's one model abstraction, the protocol every model adapter implements.

The engine asks a model only through a :class:`Provider` (``stream(request)``). There are
two kinds of them, both made in one place each:

- the HTTP adapters, one per wire format (``openai.py``, ``anthropic.py`` on
  ``http_provider.RetryingHTTPProvider``), built from a ``ProviderSpec`` by
  :func:`etcode.provider.factory.make_provider`;
- :class:`etcode.provider.chat_client.ChatClientProvider`, the adapter onto this protocol of
  a user's own client (``Agent(llm=...)``). ``BaseLLMClient`` is the public convenience
  shape of such a client (OpenAI Chat dicts in, one ``LLMResponse`` out), not a second
  abstraction: nothing past that adapter sees it.
"""

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
