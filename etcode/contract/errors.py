"""The errors of a run a program can catch, besides those of the rooms below
(:class:`~etcode.util.errors.EtcodeError`, :class:`~etcode.util.errors.ConfigError`,
:class:`~etcode.provider.errors.ProviderError` / ``LLMError``): the agent-loop design's kinds
in etcode's shape. ``str(err)`` is the one line to show."""

from __future__ import annotations

from typing import TYPE_CHECKING

from etcode.contract.tools import ToolError
from etcode.util.errors import EtcodeError

if TYPE_CHECKING:
    from etcode.contract.results import AgentResult


class ToolExecutionError(EtcodeError, ToolError):
    """A tool failed. Raise it from a tool of yours to fail with your own message: the model
    sees ``str(err)`` as the call's result and the run goes on (a tool's failure never ends
    a run)."""

    def __init__(self, tool_name: str, message: str) -> None:
        super().__init__(f"tool {tool_name!r} failed: {message}")
        self.tool_name = tool_name
        self.message = message


class LimitExceededError(EtcodeError):
    """A limit of the run (``limit_type``: ``max_steps``, ``timeout``…) stopped it at
    ``current_value`` (the limit: ``limit_value``). Carried in ``AgentResult.exception``, not
    raised: the result holds the work done until then."""

    def __init__(self, limit_type: str, limit_value: object, current_value: object) -> None:
        super().__init__(f"stopped by the {limit_type} limit: {current_value} (limit: {limit_value})")
        self.limit_type = limit_type
        self.limit_value = limit_value
        self.current_value = current_value


class OutputValidationError(EtcodeError):
    """The final answer did not validate as the agent's ``output_type``, after the one repair
    round too. ``errors``: pydantic's message; ``result``: the run's result (its ``text``)."""

    def __init__(self, message: str, errors: str, result: AgentResult) -> None:
        super().__init__(message)
        self.errors = errors
        self.result = result
