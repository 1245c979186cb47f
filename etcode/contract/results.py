"""Plain config and result objects of an agent run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic

from typing_extensions import TypeVar

from etcode.provider.types import Message, Usage
from etcode.util.errors import EtcodeError
from etcode.util.json_types import JsonObject

#: The type of ``AgentResult.output``: an ``Agent``'s ``output_type`` (``object`` without one).
OutputT = TypeVar("OutputT", default=object)

if TYPE_CHECKING:
    from etcode.contract.events import LoopEvent
    from etcode.provider.chat_client import TokenUsage


#: Why a run ended. ``end_turn``: the model finished; the others stop it early
#: (``token_limit``: the run spent ``LoopLimits.max_tokens``, its budget of output tokens).
#: The loop's limits themselves are ``etcode.engine.limits.LoopLimits``.
STOP_REASONS = ("end_turn", "max_tokens", "max_steps", "token_limit", "timeout", "interrupted", "error")


@dataclass
class AgentResult(Generic[OutputT]):
    """The outcome of one ``Agent.run``: the final text and everything that led to it.

    A run that ended in a failure says so in ``stop_reason`` (``error``, or the limit that
    stopped it), ``error`` (the one line) and ``exception`` (the typed error: a
    ``ProviderError`` when the model failed for good, a ``LimitExceededError`` for a limit,
    another ``EtcodeError`` otherwise); :meth:`raise_for_error` raises it."""

    text: str
    messages: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    stop_reason: str = "end_turn"
    todos: list[JsonObject] = field(default_factory=list)
    session_id: str = ""
    error: str | None = None
    #: The run's step-level events (``LoopEvent``: thought, action, observation…), set by ``run``.
    events: list[LoopEvent] = field(default_factory=list)
    #: Summarising model requests made to compact the history in this run (not in ``steps``).
    compactions: int = 0
    #: The error that ended the run (None: it ended on its own, or was interrupted).
    exception: EtcodeError | None = None
    #: The final answer validated as the ``Agent``'s ``output_type`` (None without one).
    output: OutputT | None = None
    #: The output tokens the run's token budget (``LoopLimits.max_tokens``) counted: the
    #: answers' reported ones, an estimate for an answer whose provider reported none (at
    #: least ``limits.UNREPORTED_MIN_TOKENS``), and its ``Task`` subagents'.
    counted_output_tokens: int = 0

    @property
    def content(self) -> str:
        """The final text (the agent-loop design's name for :attr:`text`)."""
        return self.text

    @property
    def total_tokens(self) -> TokenUsage:
        """Token use of the whole run in the design's shape: prompt (cached included),
        completion (thinking included), total, and ``reasoning_tokens``/``cached_tokens``
        (None when no answer of the run reported any)."""
        from etcode.provider.chat_client import TokenUsage

        used = self.usage
        prompt = used.input_tokens + used.cache_read_tokens + used.cache_write_tokens
        return TokenUsage(
            prompt,
            used.output_tokens,
            prompt + used.output_tokens,
            reasoning_tokens=used.reasoning_tokens or None,
            cached_tokens=used.cache_read_tokens or None,
        )

    @property
    def is_error(self) -> bool:
        return self.stop_reason not in ("end_turn", "max_tokens")

    def raise_for_error(self) -> AgentResult[OutputT]:
        """Raise :attr:`exception` if the run ended in one; else return this result."""
        if self.exception is not None:
            raise self.exception
        return self

    def to_dict(self) -> JsonObject:
        """The ``{"type": "result", ...}`` line of ``etcode run --format json``."""
        data: JsonObject = {
            "type": "result",
            "is_error": self.is_error,
            "result": self.text,
            "session_id": self.session_id,
            "usage": self.usage.to_dict(),
            "steps": self.steps,
            "todos": self.todos,
            "stop_reason": self.stop_reason,
            "compactions": self.compactions,
        }
        if self.error:
            data["error"] = self.error
        return data
