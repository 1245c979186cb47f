"""What the composition root reads from an agent (:class:`AgentSettings`), what it
drives a Task subagent's child agent by (:class:`ChildAgent`), and the ``Agent`` keywords
that child is built with (:class:`ChildSettings`).

``etcode.api.Agent`` satisfies both; the Task subagents get their children from the
runtime's ``ChildFactory`` (``etcode.wiring.runtime``) the ``Agent`` hands it, so nothing
below ``etcode.api`` imports it. Data and protocols only: this module imports no other
``wiring`` module (the runtime imports it, never the reverse).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict

from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.contract.events import Event
    from etcode.contract.results import AgentResult
    from etcode.engine.limits import LoopLimits
    from etcode.permission.service import Asker
    from etcode.provider.base import Provider
    from etcode.provider.reasoning import Reasoning
    from etcode.provider.spec import RetryConfig
    from etcode.tools.base import Tool
    from etcode.util.turns import Turn
    from etcode.wiring.run_limits import LimitDefaults


class ChildSettings(TypedDict, total=False):
    """The ``Agent`` keywords a Task subagent's child is built with (``ChildFactory``);
    ``llm_kwargs`` goes in as the ``Agent``'s own ``**llm_kwargs``."""

    model: str
    agent: str
    tools: list[Tool]
    builtin_tools: bool
    name: str
    retry: RetryConfig | None
    max_tokens: int | None
    directory: Path
    config: Config
    provider: Provider | None
    asker: Asker | None
    llm_kwargs: JsonObject
    reasoning: Reasoning
    limits: LoopLimits


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
    def limit_defaults(self) -> LimitDefaults: ...
    @property
    def asker(self) -> Asker | None: ...
    @property
    def question_turn(self) -> Turn:
        """Held while the asker is asked: shared by the agents that share the asker (an
        ``Agent``'s conversations), so their questions come one at a time."""
        ...

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
    def skills(self) -> list[Path]:
        """The caller's own skill folders (each a skill or a folder of skills), besides the
        ones found (``extensions/skills.py``). A Task subagent has its parent's skills."""
        ...

    @property
    def llm_kwargs(self) -> JsonObject: ...
    @property
    def reasoning(self) -> Reasoning:
        """The provider-neutral thinking setting (``provider/reasoning.py``); None: the
        config's ``reasoning``, if any."""
        ...

    @property
    def temperature(self) -> float | None: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def session_id(self) -> str: ...
    @property
    def state(self) -> dict[str, object]: ...
    @property
    def parent_session_id(self) -> str | None: ...


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
