"""The seam where a run's tool calls and turns can be intercepted (what hooks will use).

An :class:`Interceptor` is called, in the order of ``LoopSettings.interceptors``:

- ``before_turn(prompt)`` once, as the run starts: returns the prompt to run with;
- ``before_tool(call)`` before each tool call runs (before its permission check): a
  :class:`Decision` to proceed, to block it (the model gets the reason as the call's
  error result, as for a refused permission; the tool does not run) or to run it with
  other arguments;
- ``after_tool(call, result)`` after each call that ran: returns the result the model sees
  (the front ends were already shown the tool's own);
- ``after_turn(result)`` once, as the run ends, whatever ended it.

Optional points (an interceptor without the method is skipped there; hooks use them):

- ``attach(emit)`` as the loop starts: the run's event sink (for events of its own);
- a :class:`Decision` may carry ``permission``: ``"allow"`` answers the call's ``ask``
  permission questions without asking anyone (a deny rule still refuses, and the ``sandbox``
  and ``private_network`` questions are still asked: ``permission.service``), ``"ask"``
  asks even where the rules allow;
- ``before_stop(active)`` when the model ended its turn (``end_turn``): a reason makes the
  loop add it as a user message and go on, at most :data:`MAX_STOP_CONTINUES` times in a
  row (``active`` is True once it has); None lets the turn end;
- ``before_compact(trigger)`` before the history is compacted (``auto``, ``overflow`` or
  ``manual``: the last one is called by whoever compacts, not the loop).

An interrupt (or the run's time limit) does not wait for an interceptor: its pending call is
cancelled (a hook's process group is killed) and the run stops as it would have.

An interceptor that raises ends the run with one error line naming it and the place; every
tool call still gets a result. One that raises :class:`StopRun` ends it as ``blocked`` with
its message (a stopped event, no error): in ``before_turn`` the model is not called and the
prompt is dropped. With no interceptor, the loop does none of this.

A run made of several loops (the workflow's planner, executor and verifier turns) calls the
turn hooks once itself, for the user's turn, and hands its inner loops the tool-call hooks
alone (:func:`tool_calls_only`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol

from etcode.util.errors import EtcodeError
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.contract.events import Event
    from etcode.contract.results import AgentResult
    from etcode.provider.types import Message, ToolCallPart, ToolResultPart


#: How often in a row ``before_stop`` may make the model go on.
MAX_STOP_CONTINUES = 3
#: The stop reason of a run an interceptor stopped (:class:`StopRun`).
BLOCKED = "blocked"


@dataclass(frozen=True)
class Decision:
    """What to do with one tool call: ``proceed``, ``block`` (``reason`` goes to the model)
    or ``replace`` (run it with ``arguments`` instead of the model's); ``permission`` answers
    its permission questions in advance (see the module's docstring)."""

    action: Literal["proceed", "block", "replace"] = "proceed"
    reason: str = ""
    arguments: JsonObject | None = None
    permission: Literal["allow", "ask"] | None = None
    #: Context for the model, added to the call's result (a hook's ``additionalContext``).
    context: str = ""

    @classmethod
    def proceed(cls) -> Decision:
        return PROCEED

    @classmethod
    def block(cls, reason: str) -> Decision:
        return cls("block", reason=reason)

    @classmethod
    def replace(cls, arguments: JsonObject) -> Decision:
        return cls("replace", arguments=dict(arguments))


PROCEED = Decision()


class StopRun(EtcodeError):
    """Raised by an interceptor to end the run (stop reason :data:`BLOCKED`): the message is
    the one line the user sees."""


class Interceptor(Protocol):
    """Called around a run's turn and tool calls (see the module's docstring)."""

    async def before_turn(self, prompt: Message) -> Message: ...
    async def before_tool(self, call: ToolCallPart) -> Decision: ...
    async def after_tool(self, call: ToolCallPart, result: ToolResultPart) -> ToolResultPart: ...
    async def after_turn(self, result: AgentResult) -> None: ...


class PassThrough:
    """An interceptor that changes nothing: subclass it and override what you need."""

    async def before_turn(self, prompt: Message) -> Message:
        return prompt

    async def before_tool(self, call: ToolCallPart) -> Decision:
        return PROCEED

    async def after_tool(self, call: ToolCallPart, result: ToolResultPart) -> ToolResultPart:
        return result

    async def after_turn(self, result: AgentResult) -> None:
        return None

    async def before_stop(self, active: bool) -> str | None:
        return None

    async def before_compact(self, trigger: str) -> None:
        return None


@dataclass(frozen=True)
class ToolCallsOnly:
    """``inner``'s tool-call hooks alone: for the loops a run makes inside its own turn, whose
    turn hooks that run calls once itself."""

    inner: Interceptor

    async def before_turn(self, prompt: Message) -> Message:
        return prompt

    async def before_tool(self, call: ToolCallPart) -> Decision:
        return await self.inner.before_tool(call)

    async def after_tool(self, call: ToolCallPart, result: ToolResultPart) -> ToolResultPart:
        return await self.inner.after_tool(call, result)

    async def after_turn(self, result: AgentResult) -> None:
        return None

    def attach(self, emit: Callable[[Event], None]) -> None:
        attach_to = getattr(self.inner, "attach", None)
        if attach_to is not None:
            attach_to(emit)


def tool_calls_only(interceptors: tuple[Interceptor, ...]) -> tuple[Interceptor, ...]:
    """The interceptors for an inner loop: their tool-call hooks, not their turn hooks."""
    return tuple(ToolCallsOnly(item) for item in interceptors)


class InterceptorError(EtcodeError):
    """An interceptor raised: the run ends with this one line."""

    def __init__(self, interceptor: Interceptor, place: str, err: Exception) -> None:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        named = interceptor.inner if isinstance(interceptor, ToolCallsOnly) else interceptor
        super().__init__(f"interceptor {type(named).__name__} failed in {place}: {detail}")


def blocked_text(reason: str) -> str:
    """The result a blocked call gets (what the model sees)."""
    return f"Blocked before it ran: {reason}" if reason else "Blocked before it ran."


async def before_turn(interceptors: tuple[Interceptor, ...], prompt: Message) -> Message:
    for item in interceptors:
        try:
            prompt = await item.before_turn(prompt)
        except StopRun:
            raise
        except Exception as err:
            raise InterceptorError(item, "before_turn", err) from err
    return prompt


async def before_tool(
    interceptors: tuple[Interceptor, ...], call: ToolCallPart
) -> tuple[ToolCallPart, str | None]:
    """The call to run (its arguments replaced as decided), or the reason it is blocked."""
    call, reason, _, _ = await decide_tool(interceptors, call)
    return call, reason


async def decide_tool(
    interceptors: tuple[Interceptor, ...], call: ToolCallPart
) -> tuple[ToolCallPart, str | None, Literal["allow", "ask"] | None, list[str]]:
    """:func:`before_tool`, with the permission answer decided in advance (``ask`` from any
    interceptor wins over ``allow``) and the context the interceptors add to its result."""
    permission: Literal["allow", "ask"] | None = None
    context: list[str] = []
    for item in interceptors:
        try:
            decision = await item.before_tool(call)
        except StopRun:
            raise
        except Exception as err:
            raise InterceptorError(item, f"before_tool ({call.name})", err) from err
        if decision.action == "block":
            return call, decision.reason, None, []
        if decision.action == "replace" and decision.arguments is not None:
            call = replace(call, arguments=json.dumps(decision.arguments))
        if decision.permission is not None and permission != "ask":
            permission = decision.permission
        if decision.context:
            context.append(decision.context)
    return call, None, permission, context


async def after_tool(
    interceptors: tuple[Interceptor, ...], call: ToolCallPart, result: ToolResultPart
) -> ToolResultPart:
    for item in interceptors:
        try:
            result = await item.after_tool(call, result)
        except StopRun:
            raise
        except Exception as err:
            raise InterceptorError(item, f"after_tool ({call.name})", err) from err
    return result


async def after_turn(interceptors: tuple[Interceptor, ...], result: AgentResult) -> None:
    for item in interceptors:
        try:
            await item.after_turn(result)
        except Exception as err:
            raise InterceptorError(item, "after_turn", err) from err


def attach(interceptors: tuple[Interceptor, ...], emit: Callable[[Event], None]) -> None:
    """Hand the run's event sink to the interceptors that take one (``attach``)."""
    for item in interceptors:
        attach_to = getattr(item, "attach", None)
        if attach_to is not None:
            attach_to(emit)


async def before_stop(interceptors: tuple[Interceptor, ...], active: bool) -> str | None:
    """The first reason an interceptor gives for the model to go on, or None."""
    for item in interceptors:
        point = getattr(item, "before_stop", None)
        if point is None:
            continue
        try:
            reason = await point(active)
        except StopRun:
            raise
        except Exception as err:
            raise InterceptorError(item, "before_stop", err) from err
        if reason:
            return str(reason)
    return None


async def before_compact(interceptors: tuple[Interceptor, ...], trigger: str) -> None:
    for item in interceptors:
        point = getattr(item, "before_compact", None)
        if point is None:
            continue
        try:
            await point(trigger)
        except StopRun:
            raise
        except Exception as err:
            raise InterceptorError(item, "before_compact", err) from err
