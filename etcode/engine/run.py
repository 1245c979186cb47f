"""What every run is to the one driving it: a :class:`Run`.

The ReAct loop (``etcode.engine.loop.AgentLoop``) and the workflow
(``etcode.workflow.engine.WorkflowRun``) both are one; ``Agent.stream`` and every front end
drive whichever the wiring (``etcode.wiring.runs.start_run``) chose, alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from etcode.contract.events import Event
    from etcode.contract.results import AgentResult


@runtime_checkable
class Run(Protocol):
    """One run: ``async for event in run.events(): ...`` then read ``run.result``."""

    #: The run's result once it ended (its last event is the ``DoneEvent``), else None.
    result: AgentResult | None

    def events(self) -> AsyncIterator[Event]:
        """Start the run and yield its events; leaving early interrupts it."""
        ...

    def interrupt(self) -> None:
        """Stop as soon as possible, keeping what is finished (``stop_reason`` ``interrupted``)."""
        ...
