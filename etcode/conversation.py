"""``Conversation``: one multi-turn exchange with an ``Agent``'s settings (the agent-loop
design's ``agent.conversation()``).

Each conversation runs on an agent of its own (``Agent.conversation`` makes it: the same
settings, a new session), so its history, todos and stored session are apart from the
agent's own ``run``s and from its other conversations; two of them may run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Protocol, TypeAlias

from etcode.contract.results import OutputT
from etcode.util.sync_bridge import STOP_GRACE, iterate_blocking, loop_running, run_blocking
from etcode.util.turns import Turn

if TYPE_CHECKING:
    from etcode.contract.events import LoopEvent
    from etcode.contract.results import AgentResult
    from etcode.prompt.image_inputs import ImageInput
    from etcode.provider.types import Message
    from etcode.util.json_types import JsonObject

__all__ = ["Conversation"]

#: Images sent with a message: paths, ``bytes`` or ``ImagePart`` s (``Agent.stream``).
Images: TypeAlias = "ImageInput | Iterable[ImageInput] | None"


class ConversationAgent(Protocol[OutputT]):
    """What a conversation needs of the agent it runs on (``etcode.Agent``)."""

    history: list[Message]
    state: dict[str, object]
    session_id: str

    def arun_stream(self, task: str, *, images: Images = None) -> AsyncIterator[LoopEvent]: ...

    async def arun(self, task: str, *, images: Images = None) -> AgentResult[OutputT]: ...

    def reset(self) -> None: ...

    def interrupt(self) -> None: ...

    async def aclose(self) -> None: ...


class Conversation(Generic[OutputT]):
    """A multi-turn conversation: each ``send`` continues from the answers before it.

    Made by ``agent.conversation()``. ``send(text)`` returns the :class:`AgentResult` from
    ordinary code and an awaitable inside ``async`` code (``await conv.send(text)``, as the
    design has it); ``send_sync``/``asend`` are the explicit forms, ``send_stream`` /
    ``send_stream_sync`` yield the step-level events. One send at a time: a send made
    while another is running waits for it to end (a stream left early is interrupted).
    """

    def __init__(self, agent: ConversationAgent[OutputT]) -> None:
        self._agent = agent
        #: Held while a send runs (sends come from any thread and event loop).
        self._sending = Turn()

    # ---- what it holds -----------------------------------------------------------------
    @property
    def session_id(self) -> str:
        """Its session's id (``etcode run --session ID`` resumes it when it is stored)."""
        return self._agent.session_id

    @property
    def messages(self) -> list[JsonObject]:
        """The conversation so far as OpenAI Chat message dicts (a copy)."""
        from etcode.provider.openai_format import messages_to_openai

        return messages_to_openai(list(self._agent.history))

    @property
    def history(self) -> list[Message]:
        """The conversation so far as etcode ``Message`` s (a copy)."""
        return list(self._agent.history)

    @property
    def todos(self) -> list[JsonObject]:
        """Its task list (``TodoWrite``): ``{"content", "status", "activeForm"}`` dicts, a copy."""
        store = self._agent.state.get("todos")
        return [dict(item) for item in getattr(store, "items", None) or []]

    def reset(self) -> None:
        """Forget the history and the todos: the next send starts afresh (a stored
        conversation goes on in the same session, as the chat's ``/clear``)."""
        self._agent.reset()

    def interrupt(self) -> None:
        """Stop the running send as soon as possible (its result says ``interrupted``)."""
        self._agent.interrupt()

    async def aclose(self) -> None:
        """Close its session and what its runs opened (the sync forms close after each
        send; the conversation is kept either way)."""
        await self._agent.aclose()

    async def __aenter__(self) -> Conversation[OutputT]:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()

    # ---- sending -----------------------------------------------------------------------
    def send_stream(self, text: str, *, images: Images = None) -> AsyncIterator[LoopEvent]:
        """Send ``text``, yielding the step-level events (``LOOP_START`` … ``LOOP_END``,
        whose ``messages`` is the whole conversation)."""
        return self._stream(text, images, close=False)

    async def asend(self, text: str, *, images: Images = None) -> AgentResult[OutputT]:
        """Send ``text`` and return the answer's :class:`AgentResult`. ``images`` go with it
        (paths, ``bytes`` or ``ImagePart`` s, as ``Agent.run(images=...)``)."""
        return await self._send(text, images, close=False)

    def send(
        self, text: str, *, images: Images = None
    ) -> AgentResult[OutputT] | Awaitable[AgentResult[OutputT]]:
        """Send ``text``: the result from ordinary code (:meth:`send_sync`), an awaitable
        inside ``async`` code (:meth:`asend`)."""
        if loop_running():
            return self.asend(text, images=images)
        return self.send_sync(text, images=images)

    def send_sync(self, text: str, *, images: Images = None) -> AgentResult[OutputT]:
        """:meth:`asend` for code that is not async (inside a running loop too: the send
        then goes on a worker thread). Each call has its own event loop, so what the send
        opened is closed at its end; the conversation is kept."""
        return run_blocking(lambda: self._send(text, images, close=True))

    def send_stream_sync(self, text: str, *, images: Images = None) -> Iterator[LoopEvent]:
        """:meth:`send_stream` for code that is not async: events as they happen (leaving
        the loop early interrupts the send)."""
        return iterate_blocking(lambda: self._stream(text, images, close=True), self.interrupt)

    async def _send(self, text: str, images: Images, *, close: bool) -> AgentResult[OutputT]:
        async with self._sending.hold():
            try:
                return await self._agent.arun(text, images=images)
            finally:
                if close:
                    await self._agent.aclose()

    async def _stream(self, text: str, images: Images, *, close: bool) -> AsyncIterator[LoopEvent]:
        async with self._sending.hold():
            events = self._agent.arun_stream(text, images=images)
            try:
                async for event in events:
                    yield event
            except GeneratorExit:  # left early: the run stops rather than going on unseen,
                self._agent.interrupt()  # and ends as an interrupted run (kept in the history)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(STOP_GRACE):
                        async for _ in events:
                            pass
                raise
            finally:
                closing = getattr(events, "aclose", None)
                if closing is not None:  # the agent's own stream ends within this turn
                    await closing()
                if close:
                    await self._agent.aclose()
