"""The tools a small context window can hold: when the system prompt and every tool do not
leave room for the conversation, tools are left out in a fixed order, down to the core set
(``ReadFile``, ``Edit``, ``WriteFile``, ``Bash``, ``Grep``, and ``Skill`` when skills exist),
and below that none at all — with one warning naming what was left out.

The rule (:func:`fit_tools`): the system prompt, the tools offered and the user's newest message
must stay within the compaction limit (the usable window — the window less the room kept for
the answer — times the compaction threshold) and leave an eighth of it for the conversation.
When even the core set does not leave that room, it is still kept while it fits the usable
window (a coding agent without tools can only talk; compaction makes what room it can);
below that the run goes on without tools as long as the system prompt and the newest
message fit the usable window; otherwise :func:`nothing_fits` is the one-line error (before
any request).

The set is chosen once per window size (and prompt mode): within a session it stays the same
from turn to turn (prompt caching), unless the window changes or the token ratio learned from
the server (``engine.calibration``) moves by :data:`RATIO_STEP` — a first run fits with
tiktoken's counts, and SmolLM2's real ones are ~18% larger. A model that calls a tool left
out gets an error result saying so (``ToolRegistry.left_out``), never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from etcode.contract.events import Event, WarningEvent
from etcode.engine.compaction import MessageTooLongError, newest_user_index, too_long_error
from etcode.engine.context import ROUGH_MARGIN

if TYPE_CHECKING:
    from etcode.engine.settings import Replan
    from etcode.engine.window import ContextWindow
    from etcode.provider.types import Message, ToolSchema
    from etcode.tools.registry import ToolRegistry
    from etcode.wiring.runtime import Runtime

#: Kept while anything is: what a coding agent cannot work without.
CORE_TOOLS = ("ReadFile", "Edit", "WriteFile", "Bash", "Grep", "Skill")
#: Left out first (after the MCP servers' tools), in this order; then any other tool but the core.
DROP_ORDER = ("Task", "WebFetch", "ReadManyFiles", "ListFiles", "Glob", "TodoWrite")
#: The share of the compaction limit kept for the conversation (1/8).
CONVERSATION_SHARE = 8
#: The tools are fitted again when the calibration ratio moved this much since.
RATIO_STEP = 0.05


@dataclass
class FitState:
    """What the session's tools were fitted for (kept on its registry): the window, the
    prompt mode, the tools and the token ratio, so the set stays the same until one of them
    changes (the ratio by :data:`RATIO_STEP`)."""

    key: tuple[object, ...] | None = None
    ratio: float = 1.0
    warned: frozenset[str] = field(default_factory=frozenset)


def replanner(runtime: Runtime, window: ContextWindow | None) -> Replan:
    """The loop's ``replan`` for ``runtime``: what the server said since (a late discovery
    answer), the prompt mode for the window known now, and the tools fitted to it."""
    from etcode.engine.environment import counted_system
    from etcode.wiring.server_window import apply_late_facts

    def plan() -> tuple[list[str], bool, list[str]]:
        return list(runtime.system), runtime.tools.lean, [t.name for t in runtime.tools.schemas()]

    def replan(messages: list[Message]) -> tuple[list[str], list[Event]]:
        before = plan()
        events = apply_late_facts(runtime, window)
        mcp = {tool.name for tool in runtime.mcp.tools()} if runtime.mcp is not None else set()
        counted = counted_system(runtime.system, runtime.environment)  # the environment is sent too
        events += fit_tools(runtime.tools, window, counted, messages, mcp_names=mcp)
        if window is not None and plan() != before:
            # The last reported size was of the request before: the next one is estimated whole.
            window.meter.forget_report()
        return runtime.system, events

    return replan


def drop_order(names: list[str], mcp_names: set[str]) -> list[str]:
    """The order tools are left out in: MCP tools, :data:`DROP_ORDER`, then every other
    tool but the core (the last offered first)."""
    mcp = [n for n in names if n in mcp_names]
    fixed = [n for n in DROP_ORDER if n in names and n not in mcp_names]
    rest = [n for n in reversed(names) if n not in mcp_names and n not in DROP_ORDER and n not in CORE_TOOLS]
    return [*mcp, *fixed, *rest]


def room(window: ContextWindow) -> int | None:
    """The most the system prompt, tools and newest message may take (None: window unknown)."""
    limit = window.budget.limit
    return None if limit is None else limit - limit // CONVERSATION_SHARE


def fit_tools(
    tools: ToolRegistry,
    window: ContextWindow | None,
    system: list[str],
    messages: list[Message],
    *,
    mcp_names: set[str] | None = None,
) -> list[Event]:
    """Leave out of ``tools`` what the window cannot hold (see the module); the warning to
    show, once per change. Raises ``MessageTooLongError`` when not even the system prompt
    and the newest message fit."""
    state = _state(tools)
    context = window.budget.context if window is not None else None
    key = (context, tools.lean, tools.offered, tuple(tools.names()))
    ratio = window.compactor.estimator.ratio if window is not None else 1.0
    if key == state.key and abs(ratio - state.ratio) < RATIO_STEP:
        return []
    state.ratio = ratio
    tools.left_out = {}
    limit = room(window) if window is not None else None
    if window is None or limit is None or not tools.offered or not len(tools):
        state.key = key
        return []
    pin = newest_user_index(messages)
    newest = messages[pin] if pin is not None else None
    offered = _named(tools.schemas())
    rough = window.meter.rough
    rough_size = rough.system(system) + rough.tools(list(offered.values()))
    rough_size += rough.message(newest) if newest is not None else 0
    if rough_size < limit * ROUGH_MARGIN:
        state.key = key
        return []  # far from full: no need to run the tokenizer
    est = window.compactor.estimator
    base = est.system(system) + (est.message(newest) if newest is not None else 0)
    full = est.tools(list(offered.values()))
    kept = list(offered)
    left: list[str] = []
    order = drop_order(kept, mcp_names or set())
    while kept and base + est.tools([offered[n] for n in kept]) > limit:
        if order:
            name = order.pop(0)
            kept.remove(name)
            left.append(name)
        elif base + est.tools([offered[n] for n in kept]) <= (window.budget.usable or 0):
            break  # the core set fits the window, if not with room to spare: a coding agent needs it
        else:  # not even the core set: no tools at all
            left.extend(kept)
            kept = []
    if not kept:
        _check_base(window, est.system(system), full, newest, base - est.system(system))
    reason = _why(context or 0, len(kept), left)
    tools.left_out = dict.fromkeys(left, reason)
    state.key = key
    if not left or frozenset(left) == state.warned:
        return []
    state.warned = frozenset(left)
    return [WarningEvent(_warning(context or 0, kept, left, base + full, limit))]


def _state(tools: ToolRegistry) -> FitState:
    state = tools.fit_state
    if not isinstance(state, FitState):
        state = FitState()
        tools.fit_state = state
    return state


def _named(schemas: list[ToolSchema]) -> dict[str, ToolSchema]:
    return {schema.name: schema for schema in schemas}


def _check_base(window: ContextWindow, system: int, tools: int, newest: Message | None, size: int) -> None:
    """Without tools, the system prompt and the newest message must fit the usable window."""
    usable = window.budget.usable or 0
    if system + size <= usable:
        return
    if newest is not None and size > system:  # the message is the big part: today's words
        raise too_long_error(size, system, window.budget)
    raise nothing_fits(system, tools, window)


def nothing_fits(system: int, tools: int, window: ContextWindow) -> MessageTooLongError:
    """One line: what does not fit (the system prompt, the tools) and the fixes."""
    budget = window.budget
    usable, context = budget.usable or 0, budget.context or 0
    return MessageTooLongError(
        f"the system prompt does not fit the model's context window: it has {system:,} tokens, over "
        f"the {usable:,} usable of the {context:,}-token window ({context - usable:,} kept for the "
        f"answer), with every tool already left out (they would take {tools:,} more); start the "
        "server with a larger window (llama-server -c) or use a larger model"
    )


def _why(context: int, kept: int, left: list[str]) -> str:
    return (
        f"Tool not available: the {context:,}-token context window of this session is too small "
        f"to offer it ({', '.join(left)} were left out). "
        + ("Use the tools you were given." if kept else "Answer in text.")
    )


def _warning(context: int, kept: list[str], left: list[str], size: int, limit: int) -> str:
    what = (
        f"left out {', '.join(left)} (kept {', '.join(kept)})"
        if kept
        else "etcode runs without tools, and the model can only answer in text"
    )
    return (
        f"the {context:,}-token context window is too small for every tool: {what} (the system "
        f"prompt, every tool and the message would take about {size:,} tokens, over the {limit:,} "
        "that leave room for the conversation); start the server with a larger window "
        "(llama-server -c) to offer them all"
    )
