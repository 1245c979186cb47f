"""When a run stops on its own: :class:`LoopLimits` (the agent-loop design's limits and
etcode's own) and :class:`LimitChecker`, the state one run keeps of them.

- ``max_steps`` with ``step_limit_mode``: ``"soft"`` tells the model to wrap up at
  ``max_steps`` and every ``soft_limit_interval`` steps after (a ``SoftLimitEvent``), and
  the run goes on; ``"hard"`` asks one model call without tools, with the hard-limit prompt,
  which must answer in text (a summary of the work), and the run ends with ``max_steps``.
  Which call, ``hard_limit_step`` says: ``"within"`` (the design's, the library's default)
  makes the ``max_steps``-th call the one without tools, whatever the model would have
  done; ``"after"`` (the front ends': ``etcode run``, the chat, ACP) offers the tools to
  all ``max_steps`` calls (an answer without tool calls ends the run as ``end_turn``) and
  asks the one more call without tools only when the ``max_steps``-th made tool calls.
- ``max_tokens``: the whole run's budget of output tokens (the answers' completion tokens,
  as the design counts them, an answer reported without any as its estimate, at least
  :data:`UNREPORTED_MIN_TOKENS`, and its ``Task`` subagents', each of which gets what is
  left as its own budget); reached after a step with tool calls, the run ends with
  ``token_limit``. Not ``Agent(max_tokens=)``, which caps each single answer.
- ``doom_loop_threshold``: the identical consecutive tool calls after which the model is
  warned that it is looping (``etcode.tools.loop_detect``).
- ``timeout`` (seconds of wall-clock time) and ``max_tool_calls`` (per answer): etcode's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from etcode.contract.errors import LimitExceededError
from etcode.prompt import templates
from etcode.util.errors import ConfigError

if TYPE_CHECKING:
    from etcode.contract.results import AgentResult

StepLimitMode = Literal["soft", "hard"]
HardLimitStep = Literal["within", "after"]

#: The stop reason of a run that spent its ``max_tokens`` budget.
TOKEN_LIMIT = "token_limit"
#: What an answer counts in the budget at least when its provider reported no output tokens
#: (a client of the user's that counts nothing): a run that never stops calling tools then
#: ends at the default 200,000-token budget within 782 calls.
UNREPORTED_MIN_TOKENS = 256
#: The placeholder a soft-limit prompt may hold: the steps taken so far.
STEPS_SLOT = "{current_steps}"


def default_soft_limit_prompt() -> str:
    """etcode's wrap-up prompt (``prompts/notices/soft_limit.txt``)."""
    return templates.load("notices/soft_limit.txt").strip()


def default_hard_limit_prompt() -> str:
    """etcode's last-step prompt (``prompts/notices/hard_limit.txt``)."""
    return templates.load("notices/hard_limit.txt").strip()


@dataclass
class LoopLimits:
    """When the loop stops or warns on its own (see the module). The design's fields come
    first, in its order; ``timeout``, ``max_tool_calls`` and ``hard_limit_step`` are
    etcode's. ``None`` for
    ``max_steps``, ``max_tokens``, ``soft_limit_interval`` or ``timeout``: no such limit
    (``soft_limit_interval`` None: every ``max_steps`` steps). A bad value raises
    :class:`~etcode.util.errors.ConfigError` naming the field."""

    max_steps: int | None = None
    step_limit_mode: StepLimitMode = "soft"
    max_tokens: int | None = 200_000
    doom_loop_threshold: int = 3
    soft_limit_prompt: str = field(default_factory=default_soft_limit_prompt)
    soft_limit_interval: int | None = None
    hard_limit_prompt: str = field(default_factory=default_hard_limit_prompt)
    timeout: float | None = None
    max_tool_calls: int = 64
    hard_limit_step: HardLimitStep = "within"

    def __post_init__(self) -> None:
        if self.step_limit_mode not in get_args(StepLimitMode):
            raise ConfigError(
                f"LoopLimits.step_limit_mode: must be 'soft' or 'hard', not {self.step_limit_mode!r}"
            )
        if self.hard_limit_step not in get_args(HardLimitStep):
            raise ConfigError(
                f"LoopLimits.hard_limit_step: must be 'within' or 'after', not {self.hard_limit_step!r}"
            )
        for name, least in (("max_steps", 1), ("max_tokens", 1), ("soft_limit_interval", 1)):
            _check_int(name, getattr(self, name), least, optional=True)
        _check_int("doom_loop_threshold", self.doom_loop_threshold, 2, optional=False)
        _check_int("max_tool_calls", self.max_tool_calls, 1, optional=False)
        if self.timeout is not None and (
            isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) or self.timeout <= 0
        ):
            raise ConfigError(
                f"LoopLimits.timeout: must be a number of seconds above 0, not {self.timeout!r}"
            )

    @property
    def effective_soft_interval(self) -> int | None:
        """Steps between two soft-limit reminders: ``soft_limit_interval``, else ``max_steps``."""
        return self.soft_limit_interval if self.soft_limit_interval is not None else self.max_steps


def _check_int(name: str, value: object, least: int, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        allowed = f"an integer of at least {least}" + (" or None" if optional else "")
        raise ConfigError(f"LoopLimits.{name}: must be {allowed}, not {value!r}")


class LimitChecker:
    """One run's count of its limits: the output tokens spent and the last soft warning."""

    def __init__(self, limits: LoopLimits) -> None:
        self.limits = limits
        self.tokens = 0
        self._warned_at = 0

    def add_tokens(self, output_tokens: int) -> None:
        self.tokens += max(0, output_tokens)

    def remaining(self) -> int | None:
        """The budget's tokens not spent yet (at least 1), None without a budget."""
        budget = self.limits.max_tokens
        return None if budget is None else max(1, budget - self.tokens)

    def is_last_step(self, step: int) -> bool:
        """Whether model call ``step`` (1-based) is a hard limit's last: no tools, a summary
        (the ``max_steps``-th call, or the one after it: ``hard_limit_step``)."""
        limits = self.limits
        if limits.step_limit_mode != "hard" or limits.max_steps is None:
            return False
        last = limits.max_steps + (1 if limits.hard_limit_step == "after" else 0)
        return step >= last

    def over_budget(self) -> bool:
        return self.limits.max_tokens is not None and self.tokens >= self.limits.max_tokens

    def soft_prompt(self, step: int) -> str | None:
        """The wrap-up prompt due after step ``step`` (soft mode), else None."""
        limits = self.limits
        if limits.step_limit_mode != "soft" or limits.max_steps is None or step < limits.max_steps:
            return None
        interval = limits.effective_soft_interval or limits.max_steps
        if self._warned_at and step - self._warned_at < interval:
            return None
        self._warned_at = step
        return limits.soft_limit_prompt.replace(STEPS_SLOT, str(step))


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
    if reason == TOKEN_LIMIT:  # the whole run's budget of output tokens, as the design counts
        return LimitExceededError(reason, limits.max_tokens, result.counted_output_tokens)
    return LimitExceededError(reason, None, None)  # a stop reason of a later limit
