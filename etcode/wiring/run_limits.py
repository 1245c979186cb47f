"""The limits of a run when the caller gave none (``Agent(limits=None)``): from the config,
with the defaults of what runs it. The front ends (``etcode run``, the chat, ``etcode
acp``: ``Agent.limit_defaults == "cli"``) keep etcode's: 50 steps, a hard stop (50 calls
with tools; when the 50th still calls tools, one more answers without them: the summary),
no token budget. The Python API (``"api"``) takes the
agent-loop design's: no step limit, soft mode, a budget of 200,000 output tokens, which
then is what ends a run that never stops calling tools. A key set in ``etcode.json`` wins
over either; an agent's own ``steps`` over ``max_steps``."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from etcode.engine.limits import LoopLimits

if TYPE_CHECKING:
    from etcode.config.schema import Config

LimitDefaults = Literal["api", "cli"]

#: The front ends' step limit when the config sets none.
CLI_MAX_STEPS = 50


def run_limits(config: Config, steps: int | None = None, *, defaults: LimitDefaults = "api") -> LoopLimits:
    """The run's limits: ``steps`` (an agent's own, a ``--max-steps``) else the config's
    ``max_steps``, the config's ``limits`` block, each key left out from ``defaults``."""
    cli = defaults == "cli"
    design = LoopLimits()
    block = config.limits
    if steps is not None:
        max_steps: int | None = steps
    elif "max_steps" in config.model_fields_set or cli:
        max_steps = config.max_steps
    else:
        max_steps = design.max_steps
    if "max_tokens" in block.model_fields_set:
        max_tokens = block.max_tokens
    else:
        max_tokens = None if cli else design.max_tokens
    return LoopLimits(
        max_steps=max_steps,
        step_limit_mode=block.step_limit_mode or ("hard" if cli else design.step_limit_mode),
        max_tokens=max_tokens,
        doom_loop_threshold=block.doom_loop_threshold,
        soft_limit_interval=block.soft_limit_interval,
        timeout=config.timeout,
        max_tool_calls=config.max_tool_calls,
        hard_limit_step="after" if cli else "within",
    )


def child_limits(
    parent: LoopLimits,
    config: Config,
    steps: int | None,
    *,
    defaults: LimitDefaults,
    remaining: int | None,
) -> LoopLimits:
    """A ``Task`` subagent's limits: its parent's, with what is left of the parent's token
    budget (``remaining``: the run's budget covers its subagents) and its own step limit:
    the subagent's ``steps``, else the config's ``max_steps`` (the front ends' 50 when it
    sets none), else, in the Python API, the parent's ``max_steps``."""
    own = steps is not None or "max_steps" in config.model_fields_set or defaults == "cli"
    max_steps = run_limits(config, steps, defaults=defaults).max_steps if own else parent.max_steps
    max_tokens = parent.max_tokens if remaining is None else remaining
    return replace(parent, max_steps=max_steps, max_tokens=max_tokens)
