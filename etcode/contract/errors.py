"""The errors of a run a program can catch, besides those of the rooms below
(:class:`~etcode.util.errors.EtcodeError`, :class:`~etcode.util.errors.ConfigError`,
:class:`~etcode.provider.errors.ProviderError` / ``LLMError``): the agent-loop design's kinds
in etcode's shape. ``str(err)`` is the one line to show."""

from __future__ import annotations

from typing import TYPE_CHECKING

from etcode.contract.tools import ToolError
from etcode.util.errors import EtcodeError

if TYPE_CHECKING:
    from etcode.contract.results import AgentResult, LoopLimits


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


#: The stop reasons that are a limit of the run (not a failure, not the user's interrupt).
_NOT_LIMITS = frozenset({"end_turn", "max_tokens", "interrupted", "error", "blocked"})


def limit_exceeded(result: AgentResult, limits: LoopLimits, elapsed: float) -> LimitExceededError | None:
    """The :class:`LimitExceededError` of a run a limit stopped, else None."""
    reason = result.stop_reason
    if reason in _NOT_LIMITS:
        return None
    if reason == "max_steps":
        return LimitExceededError(reason, limits.max_steps, result.steps)
    if reason == "timeout":
        return LimitExceededError(reason, limits.timeout, round(elapsed, 3))
    if "token" in reason:  # the whole run's token budget (the design counts the answers' tokens)
        return LimitExceededError(reason, getattr(limits, "max_tokens", None), result.usage.output_tokens)
    threshold = getattr(limits, f"{reason}_threshold", None)  # doom_loop: its repeated calls
    return LimitExceededError(reason, threshold, threshold)
