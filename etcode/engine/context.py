"""How full the context window is: token estimates, the usable budget, cost accounting.

An image counts by its provider's published formula (``provider/images.image_tokens``),
never by the length of its base64 text; for a text-only model, as the notice sent in its place. The size of the next request is the provider-reported size of the last one (input, cached
input and the answer) plus an estimate of what was added since (tool results); without a
report yet (a new or resumed session) the whole request is estimated. Estimates per message
are cached: messages are never changed once in the history.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from etcode.contract.events import UsageUpdate
from etcode.provider.catalog import CatalogModel, ModelPrice, cost_of
from etcode.provider.spec import WireFormat
from etcode.provider.types import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
    Usage,
)
from etcode.util.tokens import count_tokens, estimate_tokens

if TYPE_CHECKING:
    from etcode.engine.images import ImageSupport

DEFAULT_THRESHOLD = 0.9
MAX_RESERVE = 32_000
DEFAULT_RESERVE = 4_096
#: Bounds of an answer size derived from a window when the model's output limit is unknown.
MIN_ANSWER = 256
MAX_DERIVED_ANSWER = 8_192
#: Per-message framing tokens (role markers and the like) added to each estimate.
MESSAGE_OVERHEAD = 4
#: A rough (bytes / 4) size under this share of the limit needs no exact count: the rough
#: estimate is at most about a third too low (CJK text), so this stays on the safe side.
ROUGH_MARGIN = 0.6


@dataclass
class ContextBudget:
    """``context`` tokens in the model's window, ``reserve`` kept for its answer; compaction
    triggers above ``threshold`` × the usable rest, when ``auto``. ``output`` is the answer
    size asked for in each request (``max_tokens``)."""

    context: int | None
    reserve: int = DEFAULT_RESERVE
    threshold: float = DEFAULT_THRESHOLD
    auto: bool = True
    output: int = DEFAULT_RESERVE

    @property
    def usable(self) -> int | None:
        if not self.context:
            return None
        return max(self.context - self.reserve, self.context // 2)

    @property
    def limit(self) -> int | None:
        """The request size above which automatic compaction starts."""
        usable = self.usable
        return int(usable * self.threshold) if usable is not None else None

    def exceeded(self, tokens: int) -> bool:
        limit = self.limit
        return limit is not None and tokens > limit


def answer_size(context: int | None, model_output: int | None, max_tokens: int | None) -> int:
    """The ``max_tokens`` to send: the one asked for; else the model's output limit (at most
    :data:`MAX_RESERVE`, and at most half a known window); else derived from the window (a
    quarter of it, 256 to 8,192 tokens); else :data:`DEFAULT_RESERVE`."""
    if max_tokens:
        return max_tokens
    derived = min(max(context // 4, MIN_ANSWER), MAX_DERIVED_ANSWER) if context else DEFAULT_RESERVE
    if model_output:
        output = min(model_output, MAX_RESERVE)
        return derived if context and output > context // 2 else output
    return derived


class CompactionSettings(Protocol):
    """The config's ``compaction`` section as the window reads it (``config.schema.CompactionConfig``)."""

    @property
    def auto(self) -> bool: ...
    @property
    def threshold(self) -> float | None: ...
    @property
    def reserve(self) -> int | None: ...
    @property
    def keep_turns(self) -> int | None: ...


def budget_for(
    model: CatalogModel, compaction: CompactionSettings | None = None, max_tokens: int | None = None
) -> ContextBudget:
    """The budget from the catalog entry and the ``compaction`` config section."""
    output = answer_size(model.context, model.output, max_tokens)
    reserve = compaction.reserve if compaction is not None else None
    if reserve is None:
        reserve = min(output, MAX_RESERVE)
    threshold = (compaction.threshold if compaction is not None else None) or DEFAULT_THRESHOLD
    auto = compaction is None or compaction.auto is not False
    return ContextBudget(model.context, reserve, threshold, auto, output)


def _part_text(part: Part) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ReasoningPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return f"{part.name} {part.arguments}"
    if isinstance(part, ToolResultPart):
        return part.output
    return ""


class TokenEstimator:
    """Token estimates of messages, system parts and tool schemas for one model; ``rough``
    counts four UTF-8 bytes per token instead of running the tokenizer."""

    def __init__(
        self, model: str | None = None, *, rough: bool = False, family: WireFormat = "openai"
    ) -> None:
        self.model = model
        self.rough = rough
        #: The provider's wire format: whose published formula counts an image's tokens.
        self.family: WireFormat = family
        #: Whether the model takes images (None: sent as images): a text-only model's
        #: requests carry a notice in place of each image, and that is what is counted.
        self.images: ImageSupport | None = None
        #: The server's real prompt tokens per token counted here (learned from its reported
        #: usage: ``calibrate``); every count is scaled by it. 1.0: not calibrated.
        self.ratio = 1.0
        self._messages: dict[int, tuple[Message, int, bool]] = {}
        self._tools: dict[int, tuple[ToolSchema, int]] = {}
        self._system: tuple[tuple[str, ...], int] | None = None

    def _scaled(self, tokens: int) -> int:
        return tokens if self.ratio == 1.0 else math.ceil(tokens * self.ratio)

    def _text(self, text: str) -> int:
        return estimate_tokens(text) if self.rough else count_tokens(text, self.model)

    def text(self, text: str) -> int:
        return self._scaled(self._text(text))

    def message(self, message: Message) -> int:
        return self._scaled(self._message(message))

    def _message(self, message: Message) -> int:
        support = self.images
        notices = support is not None and support.takes_images is False
        cached = self._messages.get(id(message))
        if cached is not None and cached[0] is message and cached[2] == notices:
            return cached[1]
        tokens = MESSAGE_OVERHEAD + sum(self._text(_part_text(p)) + 1 for p in message.parts)
        images = message.images
        if images and support is not None and notices:
            tokens += sum(self._text(support.notice(image)) + 1 for image in images)
        elif images:
            tokens += sum(self._image(image) for image in images)
        if len(self._messages) > 50_000:
            self._messages.clear()
        self._messages[id(message)] = (message, tokens, notices)
        return tokens

    def messages(self, messages: list[Message]) -> int:
        return self._scaled(self._messages_raw(messages))

    def _messages_raw(self, messages: list[Message]) -> int:
        return sum(self._message(m) for m in messages)

    def _image(self, image: ImagePart) -> int:
        """An image's tokens by the wire format's published formula (OpenAI's for every
        OpenAI-compatible server); provider.images is imported only when images exist."""
        from etcode.provider.images import image_tokens

        return image_tokens(image, self.family)

    def system(self, parts: list[str]) -> int:
        return self._scaled(self._system_raw(parts))

    def _system_raw(self, parts: list[str]) -> int:
        key = tuple(parts)
        if self._system is not None and self._system[0] == key:
            return self._system[1]
        tokens = sum(self._text(p) for p in parts)
        self._system = (key, tokens)
        return tokens

    def tools(self, schemas: list[ToolSchema]) -> int:
        return self._scaled(self._tools_raw(schemas))

    def _tools_raw(self, schemas: list[ToolSchema]) -> int:
        total = 0
        for schema in schemas:
            cached = self._tools.get(id(schema))
            if cached is None or cached[0] is not schema:
                text = f"{schema.name} {schema.description} {json.dumps(schema.parameters)}"
                cached = (schema, self._text(text) + 8)
                self._tools[id(schema)] = cached
            total += cached[1]
        return total

    def request(
        self, system: list[str], tools: list[ToolSchema], messages: list[Message], *, raw: bool = False
    ) -> int:
        """The whole request's tokens; ``raw``: as counted, without the calibration ratio."""
        tokens = self._system_raw(system) + self._tools_raw(tools) + self._messages_raw(messages)
        return tokens if raw else self._scaled(tokens)


class ContextMeter:
    """Tracks the context size from reported usage, and the session's cost."""

    def __init__(
        self,
        estimator: TokenEstimator,
        budget: ContextBudget,
        price: ModelPrice | None = None,
        session_cost: float = 0.0,
        totals: Usage | None = None,
    ) -> None:
        self.estimator = estimator
        self.budget = budget
        self.price = price
        self.cost = session_cost
        self.totals = totals or Usage()
        self.context_tokens = 0
        self.rough = TokenEstimator(estimator.model, rough=True, family=estimator.family)
        self._anchor: Message | None = None
        self._anchor_index = -1

    def reset(self, tokens: int = 0) -> None:
        """A new batch began: the last report no longer describes the history."""
        self._anchor = None
        self._anchor_index = -1
        self.context_tokens = tokens

    def forget_report(self) -> None:
        """The system prompt or the tools changed (re-planned for a window learned): the last
        report describes another request, so the next size is estimated whole (the status
        bar keeps the last figure until the next report)."""
        self._anchor = None
        self._anchor_index = -1

    def restore(self, tokens: int | None, messages: list[Message]) -> None:
        """A resumed session: ``tokens`` is the size last reported for ``messages`` up to
        their last assistant message."""
        index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None)
        if tokens and index is not None:
            self.context_tokens = tokens
            self._anchor = messages[index]
            self._anchor_index = index

    def estimate(
        self, system: list[str], tools: list[ToolSchema], messages: list[Message], *, rough: bool = False
    ) -> int:
        """Tokens the next request holds: the last report plus estimates of newer messages
        (``rough``: a cheap bytes / 4 count, for deciding whether counting is needed)."""
        estimator = self.rough if rough else self.estimator
        i = self._anchor_index
        if self._anchor is not None and 0 <= i < len(messages) and messages[i] is self._anchor:
            return self.context_tokens + estimator.messages(messages[i + 1 :])
        return estimator.request(system, tools, messages)

    def record(self, usage: Usage, messages: list[Message]) -> tuple[float | None, UsageUpdate]:
        """After a model call whose answer is ``messages[-1]``: update and describe."""
        step_cost = cost_of(usage, self.price)
        if step_cost is not None:
            self.cost += step_cost
        self.totals.add(usage)
        size = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens
        if size > 0 and messages:
            self.context_tokens = size
            self._anchor = messages[-1]
            self._anchor_index = len(messages) - 1
        return step_cost, self.update(step_cost)

    def update(self, step_cost: float | None = None) -> UsageUpdate:
        window = self.budget.context
        percent = round(100.0 * self.context_tokens / window, 1) if window else None
        return UsageUpdate(
            context_tokens=self.context_tokens,
            context_window=window,
            context_percent=percent,
            input_tokens=self.totals.input_tokens
            + self.totals.cache_read_tokens
            + self.totals.cache_write_tokens,
            output_tokens=self.totals.output_tokens,
            cost=self.cost if self.price is not None and self.price.known else None,
            step_cost=step_cost,
        )
