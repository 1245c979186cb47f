"""The two seams a loop run keeps its session through: a :class:`Recorder` that stores
what happens (``SessionRecorder``; the workflow's role turns have their own) and a
:class:`LoopWindow` that counts usage and compacts (``ContextWindow``; a role turn's
counts but never compacts). :class:`SafeRecorder` is how both loops call the recorder.

This module imports no other engine module at run time (types only): the loop, the window
and the settings import it, never the reverse."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from etcode.contract.events import Event, UsageUpdate, WarningEvent
from etcode.util.errors import EtcodeError

if TYPE_CHECKING:
    from etcode.engine.compaction import CompactionResult
    from etcode.engine.context import ContextBudget
    from etcode.provider.base import Provider
    from etcode.provider.errors import ContextOverflowError
    from etcode.provider.types import Message, ToolSchema, Usage


class Recorder(Protocol):
    """Stores a session as its loop runs (see ``etcode.session.recorder``)."""

    async def checkpoint(self, messages: list[Message]) -> None: ...
    async def batch_started(self, messages: list[Message], reason: str) -> None: ...
    async def step_finished(self, step: int, usage: Usage, cost: float | None) -> None: ...
    async def usage_added(self, usage: Usage, cost: float | None, model: str) -> None: ...


class LoopWindow(Protocol):
    """The context window as a loop run uses it (see ``etcode.engine.window``). The
    compaction members are used only when ``auto`` is true."""

    @property
    def auto(self) -> bool: ...
    @property
    def max_output(self) -> int: ...
    @property
    def budget(self) -> ContextBudget: ...

    def record(self, usage: Usage, messages: list[Message]) -> tuple[float | None, UsageUpdate]: ...
    def calibrate(
        self, usage: Usage, system: list[str], tools: list[ToolSchema], messages: list[Message]
    ) -> None: ...
    def add_usage(self, usage: Usage, cost: float | None) -> UsageUpdate: ...
    def update(self) -> UsageUpdate: ...
    def needs_compaction(
        self, system: list[str], tools: list[ToolSchema], messages: list[Message]
    ) -> int | None: ...
    def check_newest(
        self,
        system: list[str],
        tools: list[ToolSchema],
        messages: list[Message],
        overflow: ContextOverflowError | None = None,
    ) -> None: ...
    def learn_window(self, context: int, source: str = "overflow error") -> bool: ...
    async def compact(
        self,
        messages: list[Message],
        *,
        reason: str,
        provider: Provider,
        model: str,
        system: list[str],
        tools: list[ToolSchema],
        tokens_before: int | None = None,
    ) -> CompactionResult: ...


class SafeRecorder:
    """A run's way to its recorder (if it has one). A store failure becomes one warning
    and ends recording for the run (the run itself goes on)."""

    def __init__(self, recorder: Recorder | None, emit: Callable[[Event], None]) -> None:
        self.recorder = recorder
        self._emit = emit

    async def __call__(self, call: Callable[[Recorder], Awaitable[None]]) -> None:
        recorder = self.recorder
        if recorder is None:
            return
        try:
            await call(recorder)
        except EtcodeError as err:
            if self.recorder is None:  # another call failed first and said so
                return
            self.recorder = None
            self._emit(WarningEvent(f"the session is no longer being saved: {err}"))
