"""Compaction: replace older history by a summary so the conversation fits the window.

The history is split into the older part and the last turns, which are kept word for word
(``keep_turns``, within a token budget). Large tool outputs in the older part are pruned
first; when that alone brings an automatic compaction well under the limit, no model call is
needed. Otherwise the model summarises the (pruned) older part with
``prompts/compaction/summary.txt`` — an anchored summary: goal, decisions, done, in progress,
next steps, relevant files; an earlier summary is updated rather than summarised again.

The result is a new batch: the announcements of tools added during the session (carried
over once), the summary, then the kept turns. The system prompt and the initial tools are not
part of any batch: they are added to every request, so they are never lost or repeated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from etcode.provider.base import Provider
from etcode.provider.errors import ContextOverflowError
from etcode.provider.types import (
    Message,
    ModelRequest,
    StreamEnd,
    TextPart,
    ToolResultPart,
    ToolSchema,
    Usage,
)
from etcode.session.context import ContextBudget, TokenEstimator
from etcode.session.events import CompactionEvent

SUMMARY_HEADER = (
    "[etcode] Summary of the earlier conversation (older messages were compacted to save context):"
)
ANNOUNCE_HEADER = "[etcode] New tools are available"
NOTE_HEADER = "[etcode]"
DEFAULT_KEEP_TURNS = 2
#: Tool outputs longer than this (characters) are pruned from the older history.
PRUNE_MIN_CHARS = 2_000
PRUNE_KEEP_CHARS = 300
#: Share of the usable window the verbatim tail may take.
TAIL_SHARE = 0.3
#: An automatic compaction that prunes below this share of the limit needs no summary.
PRUNE_TARGET = 0.7
SUMMARY_MAX_TOKENS = 8_192


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(SUMMARY_HEADER)


def is_announcement(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(ANNOUNCE_HEADER)


def announcement(tools: list[ToolSchema]) -> Message:
    """The ordinary message that tells the model about tools added mid-session."""
    lines = [f"{ANNOUNCE_HEADER} (added during this session; call them like any other tool):"]
    for schema in tools:
        first = schema.description.strip().splitlines()[0] if schema.description.strip() else ""
        lines.append(f"- {schema.name}: {first}" if first else f"- {schema.name}")
    return Message.user("\n".join(lines))


def summary_message(summary: str, has_tail: bool) -> Message:
    tail = (
        "The most recent messages follow word for word."
        if has_tail
        else "Continue the work from where the summary leaves off."
    )
    return Message.user(f"{SUMMARY_HEADER}\n\n<summary>\n{summary.strip()}\n</summary>\n\n{tail}")


def summary_instruction() -> str:
    from etcode.prompt.templates import load

    return load("compaction/summary.txt")


@dataclass
class CompactionResult:
    """A new batch and what it took to make it."""

    messages: list[Message]
    reason: str
    tokens_before: int
    tokens_after: int
    summarized: int = 0
    pruned: int = 0
    summary: str = ""
    usage: Usage = field(default_factory=Usage)
    #: USD of the summarising call (None: price unknown or no call).
    cost: float | None = None

    @property
    def summary_index(self) -> int | None:
        return next((i for i, m in enumerate(self.messages) if is_summary(m)), None)

    def done_event(self, reason: str) -> CompactionEvent:
        """The ``CompactionEvent`` announcing this finished compaction."""
        return CompactionEvent(
            reason,
            "done",
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            summarized=self.summarized,
            pruned=self.pruned,
        )


def _boundaries(messages: list[Message]) -> list[int]:
    """Indices where the kept tail may start: never at tool results (they answer the
    assistant message before them)."""
    return [i for i, m in enumerate(messages) if m.role != "tool"]


def split_history(
    messages: list[Message], keep_turns: int, budget_tokens: int | None, estimator: TokenEstimator
) -> tuple[list[Message], list[Message]]:
    """(older, tail): the tail holds the last ``keep_turns`` turns, shortened to fit
    ``budget_tokens``; the older part is never empty when there are two or more messages."""
    if not messages:
        return [], []
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    if keep_turns <= 0:
        cut = len(messages)
    elif len(starts) >= keep_turns:
        cut = starts[-keep_turns]
    else:
        cut = 0
    valid = _boundaries(messages)
    if budget_tokens is not None:
        while cut < len(messages) and estimator.messages(messages[cut:]) > budget_tokens:
            cut = next((i for i in valid if i > cut), len(messages))
    if cut == 0:
        cut = next((i for i in valid if i > 0), len(messages))
    return messages[:cut], messages[cut:]


def prune_outputs(messages: list[Message], min_chars: int = PRUNE_MIN_CHARS) -> tuple[list[Message], int]:
    """Copies of ``messages`` with large tool outputs cut to a short head and a note."""
    out: list[Message] = []
    pruned = 0
    for message in messages:
        results = message.tool_results
        if not any(len(r.output) > min_chars for r in results):
            out.append(message)
            continue
        parts = []
        for part in message.parts:
            if isinstance(part, ToolResultPart) and len(part.output) > min_chars:
                pruned += 1
                head = part.output[:PRUNE_KEEP_CHARS].rstrip()
                note = (
                    f"{head}\n[... output pruned by compaction: {len(part.output):,} characters in all; "
                    "run the tool again if you need it]"
                )
                parts.append(ToolResultPart(part.call_id, part.name, note, part.is_error))
            else:
                parts.append(part)
        out.append(Message(message.role, parts))
    return out, pruned


def fallback_summary(messages: list[Message]) -> str:
    """An outline made without the model (when it cannot summarise)."""
    users = [m.text.strip() for m in messages if m.role == "user" and m.text.strip() and not is_summary(m)]
    earlier = [m.text for m in messages if is_summary(m)]
    files: list[str] = []
    for message in messages:
        for call in message.tool_calls:
            try:
                args = call.parsed_arguments()
            except ValueError:
                continue
            for key in ("file_path", "path"):
                value = args.get(key)
                if isinstance(value, str) and value not in files:
                    files.append(value)
    lines = ["## Goal", (users[0][:500] if users else "(unknown)"), "", "## Requests so far"]
    lines += [f"- {u[:200]}" for u in users[:20]] or ["- (none)"]
    if earlier:
        lines += ["", "## Earlier summary", earlier[-1][:4000]]
    lines += ["", "## Relevant files"] + ([f"- {f}" for f in files[:50]] or ["- (none)"])
    lines += ["", "(An automatic outline: the model's summary was not available.)"]
    return "\n".join(lines)


class Compactor:
    """Makes the new batch. One per session; the provider and prompt come per call."""

    def __init__(
        self, budget: ContextBudget, estimator: TokenEstimator, keep_turns: int = DEFAULT_KEEP_TURNS
    ) -> None:
        self.budget = budget
        self.estimator = estimator
        self.keep_turns = keep_turns

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
        """The new batch for ``messages``. Raises ``ProviderError`` when the model call fails
        for a reason other than the request being too long."""
        est = self.estimator
        before = tokens_before if tokens_before is not None else est.request(system, tools, messages)
        carried = _unique(m for m in messages if is_announcement(m))
        work = [m for m in messages if not is_announcement(m)]
        usable = self.budget.usable
        tail_budget = int(usable * TAIL_SHARE) if usable is not None else None
        older, tail = split_history(work, self.keep_turns, tail_budget, est)
        pruned_older, pruned = prune_outputs(older)

        if reason != "manual" and pruned and self.budget.limit is not None:
            candidate = [*carried, *pruned_older, *tail]
            after = est.request(system, tools, candidate)
            if after <= self.budget.limit * PRUNE_TARGET:
                return CompactionResult(candidate, reason, before, after, pruned=pruned)

        # The summary request must fit too: its answer comes out of the reserve, so its input
        # gets the usable window (large outputs pruned, then the oldest messages dropped).
        source = older
        instruction = est.text(summary_instruction())
        if usable is not None and est.request(system, tools, older) + instruction > usable:
            source = _fit(pruned_older, usable - instruction, est, system, tools)
        usage = Usage()
        try:
            summary, usage = await self._summarize(provider, model, system, tools, source)
        except ContextOverflowError:
            summary = ""
        if not summary.strip():
            summary = fallback_summary(older)
        batch = [*carried, summary_message(summary, bool(tail)), *tail]
        after = est.request(system, tools, batch)
        return CompactionResult(
            batch, reason, before, after, summarized=len(older), pruned=pruned, summary=summary, usage=usage
        )

    async def _summarize(
        self,
        provider: Provider,
        model: str,
        system: list[str],
        tools: list[ToolSchema],
        older: list[Message],
    ) -> tuple[str, Usage]:
        reserve = self.budget.reserve or SUMMARY_MAX_TOKENS
        request = ModelRequest(
            model=model,
            system=system,
            messages=[*older, Message.user(summary_instruction())],
            tools=tools,
            max_tokens=min(reserve, SUMMARY_MAX_TOKENS),
        )
        end: StreamEnd | None = None
        stream = provider.stream(request)
        try:
            async for chunk in stream:
                if isinstance(chunk, StreamEnd):
                    end = chunk
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if end is None:
            return "", Usage()
        text = "".join(p.text for p in end.message.parts if isinstance(p, TextPart))
        return text, end.usage


def _unique(messages: object) -> list[Message]:
    seen: set[str] = set()
    out: list[Message] = []
    for message in messages:  # type: ignore[attr-defined]
        if message.text not in seen:
            seen.add(message.text)
            out.append(message)
    return out


def _fit(
    messages: list[Message], limit: int, est: TokenEstimator, system: list[str], tools: list[ToolSchema]
) -> list[Message]:
    """Drop the oldest messages (at valid boundaries) until the request fits ``limit``."""
    base = est.system(system) + est.tools(tools)
    start = 0
    valid = _boundaries(messages)
    while start < len(messages) and base + est.messages(messages[start:]) > limit:
        start = next((i for i in valid if i > start), len(messages))
    kept = messages[start:]
    if start:
        note = Message.user(f"{NOTE_HEADER} {start} older messages were left out of this summary request.")
        kept = [note, *kept]
    return kept
