"""What the composition root reads from an agent, and how it asks for a child agent.

``etcode.api.Agent`` satisfies :class:`AgentSettings`; the Task subagents get their
children from a :data:`ChildFactory` the ``Agent`` hands to its runtime, so nothing
below ``etcode.api`` imports it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.contract.events import Event
    from etcode.contract.results import AgentResult, LoopLimits
    from etcode.permission.service import Asker
    from etcode.provider.base import Provider
    from etcode.provider.spec import RetryConfig
    from etcode.tools.base import Tool
    from etcode.wiring.runtime import Runtime


class AgentSettings(Protocol):
    """An agent's settings as the runtime reads them (all read-only here)."""

    @property
    def model(self) -> str | None: ...
    @property
    def api_key(self) -> str | None: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def agent_name(self) -> str | None: ...
    @property
    def directory(self) -> Path | None: ...
    @property
    def config(self) -> Config | None: ...
    @property
    def provider(self) -> Provider | None: ...
    @property
    def retry(self) -> RetryConfig | None: ...
    @property
    def limits(self) -> LoopLimits | None: ...
    @property
    def asker(self) -> Asker | None: ...
    @property
    def trust(self) -> bool | None: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def name(self) -> str: ...
    @property
    def builtin_tools(self) -> bool: ...
    @property
    def custom_tools(self) -> list[Tool]: ...
    @property
    def llm_kwargs(self) -> dict[str, Any]: ...
    @property
    def temperature(self) -> float | None: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def session_id(self) -> str: ...
    @property
    def state(self) -> dict[str, Any]: ...


class ChildAgent(AgentSettings, Protocol):
    """A Task subagent's agent, as its runner drives it."""

    @property
    def parent_session_id(self) -> str | None: ...
    @property
    def last_result(self) -> AgentResult | None: ...
    @property
    def cost(self) -> float | None: ...

    def stream(self, task: str) -> AsyncIterator[Event]: ...
    def interrupt(self) -> None: ...
    async def aclose(self) -> None: ...


class ChildFactory(Protocol):
    """Builds a ready child agent from ``Agent`` keywords: its runtime is built from (and
    borrows the MCP servers of) ``parent``; it records the session that started it and is
    stored beside it. The public ``Agent``'s own ``make_child`` is one."""

    async def __call__(self, parent: Runtime, **settings: Any) -> ChildAgent: ...
