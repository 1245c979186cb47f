"""What the loop asks about the context window: is it too full, compact it, account a call."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

from etcode.contract.events import CompactionEvent, Event, UsageUpdate
from etcode.engine.calibration import TokenCalibration
from etcode.engine.compaction import (
    DEFAULT_KEEP_TURNS,
    NOTHING_OLDER,
    CompactionResult,
    Compactor,
    is_announcement,
    newest_user_index,
    too_long_error,
)
from etcode.engine.context import (
    MAX_RESERVE,
    ROUGH_MARGIN,
    CompactionSettings,
    ContextBudget,
    ContextMeter,
    TokenEstimator,
    answer_size,
    budget_for,
)
from etcode.provider.base import Provider
from etcode.provider.catalog import CatalogModel, ModelCatalog
from etcode.provider.errors import ContextOverflowError
from etcode.provider.spec import ProviderSpec
from etcode.provider.types import Message, ToolSchema, Usage

if TYPE_CHECKING:
    from etcode.engine.images import ImageSupport
    from etcode.engine.seams import LoopWindow

log = logging.getLogger("etcode.window")

#: After an overflow, a summary must save at least this share of the newest message's
#: tokens to be worth the retry (else the run ends with the newest message too long).
MIN_COMPACTION_GAIN = 0.05


class ContextWindow:
    """The session's budget, meter and compactor, shared by its runs."""

    def __init__(
        self,
        model: CatalogModel,
        budget: ContextBudget,
        meter: ContextMeter,
        compactor: Compactor,
        *,
        max_tokens: int | None = None,
        reserve_configured: bool = False,
    ):
        self.model = model
        self.budget = budget
        self.meter = meter
        self.compactor = compactor
        self.max_tokens = max_tokens
        self.reserve_configured = reserve_configured
        #: Where the window size came from: the catalog's sources ("built-in", "models.dev",
        #: "config"), "server" (asked at start-up), "overflow error", or None (unknown).
        self.source: str | None = ", ".join(model.sources) if model.context else None
        #: Told each window a server states (to remember it for the next run).
        self.on_learn: Callable[[int], None] | None = None
        #: The counts scaled to the server's tokenizer (enabled by the wiring for servers
        #: whose counts are not tiktoken's; see ``engine.calibration``).
        self.calibration = TokenCalibration([meter.estimator, meter.rough])

    @classmethod
    def build(
        cls,
        spec: ProviderSpec,
        compaction: CompactionSettings | None = None,
        *,
        catalog: ModelCatalog,
        max_tokens: int | None = None,
        session_cost: float = 0.0,
        totals: Usage | None = None,
    ) -> ContextWindow:
        """For a resolved provider spec, its catalog and the config's ``compaction`` section."""
        model = catalog.for_spec(spec)
        budget = budget_for(model, compaction, max_tokens)
        estimator = TokenEstimator(spec.model, family=spec.type)
        meter = ContextMeter(estimator, budget, model.price, session_cost, totals)
        keep = compaction.keep_turns if compaction is not None else None
        compactor = Compactor(budget, estimator, DEFAULT_KEEP_TURNS if keep is None else keep)
        configured = compaction is not None and compaction.reserve is not None
        return cls(model, budget, meter, compactor, max_tokens=max_tokens, reserve_configured=configured)

    @property
    def auto(self) -> bool:
        return self.budget.auto

    @property
    def max_output(self) -> int:
        """The ``max_tokens`` each request asks for (see ``context.answer_size``)."""
        return self.budget.output

    def learn_window(self, context: int, source: str = "overflow error") -> bool:
        """Take a window the server stated; True when it changed the budget. Asked at
        start-up (``"server"``), it fills only a window the catalog did not know; stated in
        an overflow error, it is what the server enforces, so it wins. The answer size and
        the reserve follow it; the meter and compactor share the budget."""
        if context <= 0 or context == self.budget.context:
            return False
        if source == "server" and self.budget.context:
            return False
        budget = self.budget
        budget.context = context
        budget.output = answer_size(context, self.model.output, self.max_tokens)
        if not self.reserve_configured:
            budget.reserve = min(budget.output, MAX_RESERVE)
        self.source = source
        if self.on_learn is not None and source != "server":
            self.on_learn(context)
        return True

    def count_images(self, images: ImageSupport | None) -> None:
        """Count images as ``images`` says the requests carry them (a text-only model's as
        the notices in their place)."""
        self.meter.estimator.images = images
        self.meter.rough.images = images

    def estimate(self, system: list[str], tools: list[ToolSchema], messages: list[Message]) -> int:
        return self.meter.estimate(system, tools, messages)

    def needs_compaction(
        self, system: list[str], tools: list[ToolSchema], messages: list[Message]
    ) -> int | None:
        """The estimated size of the next request when it is over the limit, else None."""
        limit = self.budget.limit
        if not self.budget.auto or limit is None or len(messages) < 2:
            return None
        if self.meter.estimate(system, tools, messages, rough=True) < limit * ROUGH_MARGIN:
            return None  # far from full: no need to run the tokenizer
        tokens = self.estimate(system, tools, messages)
        return tokens if self.budget.exceeded(tokens) else None

    def check_newest(
        self,
        system: list[str],
        tools: list[ToolSchema],
        messages: list[Message],
        overflow: ContextOverflowError | None = None,
    ) -> None:
        """Raise ``MessageTooLongError`` when the user's newest message cannot fit the usable
        window with the system prompt and tools — compaction would only paraphrase it. After
        an ``overflow`` from the server (the window may be unknown), also when nothing but
        that message and its turn is left to summarise."""
        pin = newest_user_index(messages)
        usable = self.budget.usable
        if pin is None or (usable is None and overflow is None):
            return
        newest = messages[pin]
        rough = self.meter.rough
        if (
            usable is not None
            and overflow is None
            and rough.system(system) + rough.tools(tools) + rough.message(newest) < usable * ROUGH_MARGIN
        ):
            return  # far from full: no need to run the tokenizer
        est = self.compactor.estimator
        base, size = est.system(system) + est.tools(tools), est.message(newest)
        if usable is not None and base + size > usable:
            raise too_long_error(size, base, self.budget)
        if overflow is not None:
            work = [m for m in messages if not is_announcement(m)]
            older, _ = self.compactor.split(work, system, tools)
            if not older:
                raise too_long_error(size, base, self.budget, server=str(overflow))
            # A summary saves at most the older part: a few percent of the newest message
            # cannot bring a request that overflowed under the window (a 5 MiB paste after a
            # short exchange), and the retry would send that message again in vain.
            saved = sum(est.message(m) for m in older)
            if saved < size * MIN_COMPACTION_GAIN:
                raise too_long_error(size, base, self.budget, server=str(overflow), older=saved)

    async def compact(
        self,
        messages: list[Message],
        *,
        reason: str,
        provider: Provider,
        model: str,
        system: list[str],
        tools: list[ToolSchema],
        tokens_before: int | None = None,
    ) -> CompactionResult:
        """Compact ``messages``; the summarising call's usage is counted in the cost."""
        if tokens_before is None:
            tokens_before = self.estimate(system, tools, messages)
        result = await self.compactor.compact(
            messages,
            reason=reason,
            provider=provider,
            model=model,
            system=system,
            tools=tools,
            tokens_before=tokens_before,
        )
        result.cost, _ = self.meter.record(result.usage, [])
        self.meter.reset(result.tokens_after)
        return result

    def record(self, usage: Usage, messages: list[Message]) -> tuple[float | None, UsageUpdate]:
        return self.meter.record(usage, messages)

    def calibrate(
        self, usage: Usage, system: list[str], tools: list[ToolSchema], messages: list[Message]
    ) -> None:
        """After a request of ``system``, ``tools`` and ``messages`` (as sent, without its
        answer): compare the server's prompt size in ``usage`` with etcode's count of it
        (``engine.calibration``). Requests carrying images teach nothing (their counts
        follow another formula)."""
        calibration = self.calibration
        real = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if not calibration.enabled or real <= 0:
            return
        estimator = self.meter.estimator
        support = estimator.images
        if (support is None or support.takes_images is not False) and any(m.images for m in messages):
            return
        counted = estimator.request(system, tools, messages, raw=True)
        before = calibration.ratio
        ratio = calibration.observe(real, counted)
        log.debug(
            "tokens: the server counted %d, etcode %d (x%.3f = %d, off by %+.1f%%); ratio now %s",
            real,
            counted,
            before,
            math.ceil(counted * before),
            100.0 * (math.ceil(counted * before) - real) / real,
            f"{ratio:.3f}" if ratio is not None else "unchanged",
        )

    def update(self) -> UsageUpdate:
        return self.meter.update()

    def add_usage(self, usage: Usage, cost: float | None) -> UsageUpdate:
        """Count usage spent outside this conversation (a Task subagent's calls, priced at
        its own model's rates) in the session's totals and cost; the context is unchanged."""
        self.meter.totals.add(usage)
        if cost:
            self.meter.cost += cost
        return self.meter.update()


async def compact_with_events(
    window: LoopWindow,
    messages: list[Message],
    *,
    reason: str,
    provider: Provider,
    model: str,
    system: list[str],
    tools: list[ToolSchema],
    emit: Callable[[Event], None],
    store: Callable[[CompactionResult], Awaitable[None]],
    tokens_before: int | None = None,
    abort: asyncio.Event | None = None,
) -> CompactionResult | None:
    """The one compaction sequence (a run's auto/overflow compaction and ``/compact``):
    a ``start`` event, the summarising call, then ``store`` the new batch and a ``done``
    event with the usage update — or ``done`` "nothing older" when only the newest turn
    is left (``result.messages is messages``). A failure is a ``failed`` event and is
    raised; an ``abort`` while it runs is a ``failed`` "interrupted" event and None (the
    history is unchanged)."""
    emit(CompactionEvent(reason, "start", tokens_before=tokens_before or 0))
    work = asyncio.ensure_future(
        window.compact(
            messages,
            reason=reason,
            provider=provider,
            model=model,
            system=system,
            tools=tools,
            tokens_before=tokens_before,
        )
    )
    waits: set[asyncio.Future[CompactionResult] | asyncio.Future[Literal[True]]] = {work}
    if abort is not None:
        waits.add(asyncio.ensure_future(abort.wait()))
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waits - {work}:
            waiter.cancel()
        if not work.done():  # aborted, or this task was cancelled: the call must not run on
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
    if work.cancelled():
        emit(CompactionEvent(reason, "failed", tokens_before=tokens_before or 0, message="interrupted"))
        return None
    failure = work.exception()
    if failure is not None:
        emit(CompactionEvent(reason, "failed", tokens_before=tokens_before or 0, message=str(failure)))
        raise failure
    result = work.result()
    if result.messages is messages:  # nothing older, or a batch that would have grown
        emit(
            result.done_event(reason)
            if result.unchanged
            else CompactionEvent(reason, "done", message=NOTHING_OLDER)
        )
        return result
    await store(result)
    emit(result.done_event(reason))
    emit(window.update())
    return result
