"""Compaction: replace older history by a summary so the conversation fits the window.

The history is split into the older part and the tail, kept word for word: always the user's
newest message, then the latest whole steps of its turn and earlier whole turns
(``keep_turns`` in all) within a token budget (``split_history``). A newest message that
cannot fit the window even alone is never paraphrased: ``MessageTooLongError`` ends the run
(``ContextWindow.check_newest``). Images go first: an automatic compaction replaces the
oldest images (all but the newest message's) by their labels, ``[image: NAME W×H]``, one
message at a time, and stops there when that brings the request well under the limit. Then
large tool outputs in the older part are pruned; when that alone brings an automatic
compaction well under the limit (``PRUNE_TARGET`` of the room the system prompt and tools
leave), no model call is needed. Otherwise the model summarises the (pruned) older part with
``prompts/compaction/summary.txt`` — an anchored summary: goal, decisions, done, in progress,
next steps, relevant files; an earlier summary is updated rather than summarised again. The
summary request never carries an image (their labels stand in). Its answer is asked for in
at most ``SUMMARY_SHARE`` of that room, so that the next turns do not compact again at once.

The summary is checked (``summary_check``): an answer that calls a tool, a summary that was
cut at its length limit, is not shorter than what it replaces, or is mostly repetition is
rejected — small models write such. When the system prompt and tools leave the summary
request no room for any older message, no summary is asked for. Then no model text is kept:
the older part stays, trimmed (``trimming``: tool outputs and the assistant's text cut to a
head, the user's messages whole) when that is under
``PRUNE_TARGET``; else only the user's messages stand in for it. Either way the user's own
messages of the older part are kept word for word (``kept_users``, within ``USER_SHARE`` of
the room: the first always, then the newest, those between left out and counted), the
summary's included. A new batch whose request would not be smaller than the history's is
not kept (``CompactionResult.unchanged``).

The result is a new batch: the announcements of tools added during the session (carried
over once), the summary (with the user's earlier messages), then the kept turns (when the
newest turn itself was cut, the newest message comes before the summary, which also covers
the first steps of its turn). Both are user messages: a request joins them (``alternation``).
The summary request holds only the older part, never the kept messages. The system prompt and the initial tools are not
part of any batch: they are added to every request, so they are never lost or repeated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from etcode.contract.events import CompactionEvent
from etcode.engine import kept_users
from etcode.engine.alternation import alternating
from etcode.engine.context import ContextBudget, TokenEstimator
from etcode.engine.images import replace_images
from etcode.engine.summary_check import CALLED, rejection
from etcode.engine.trimming import trim_messages
from etcode.provider.base import Provider
from etcode.provider.errors import ContextOverflowError, ProviderError
from etcode.provider.types import (
    Message,
    ModelRequest,
    Part,
    StreamEnd,
    TextPart,
    ToolResultPart,
    ToolSchema,
    Usage,
    image_label,
)

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
#: The room for messages is the limit less the system prompt and tools. An automatic
#: compaction that prunes below this share of it needs no summary; a rejected summary's
#: trimmed history is kept when under it.
PRUNE_TARGET = 0.7
#: A rejected summary's trimmed history must come under this share of the room.
TRIM_TARGET = 0.5
#: Share of the room the summary may take (its ``max_tokens``), and the user's kept messages.
SUMMARY_SHARE = 0.25
USER_SHARE = 0.2
#: Words asked for per token of the summary's ``max_tokens`` (English: ~0.75; some margin).
WORDS_PER_TOKEN = 0.5
SUMMARY_MAX_TOKENS = 8_192
#: The least a summary may be given, and what its message adds around it (tokens).
SUMMARY_MIN_TOKENS = 256
SUMMARY_FRAMING = 64
NOTHING_OLDER = "nothing to compact: only the newest message and its turn, which stay word for word"
NEWEST_LEFT_OUT = (
    f"{NOTE_HEADER} Here the user's newest message is left out: it stays word for word after the "
    "summary, so do not repeat it; summarise the work on it that follows."
)


class MessageTooLongError(ProviderError):
    """The user's newest message cannot fit the context window even alone; it is never
    paraphrased instead, so the run ends with this error."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="context_overflow")


def too_long_error(
    tokens: int, base: int, budget: ContextBudget, server: str | None = None, older: int = 0
) -> MessageTooLongError:
    """One line: the newest message's size against the window (or the server's word;
    ``older``: the tokens a summary could save, too few to matter)."""
    head = (
        f"the newest message does not fit the model's context window: it has {tokens:,} tokens "
        f"and the system prompt and tools {base:,} more"
    )
    if server is not None:
        why = (
            f"summarising the {older:,} tokens before it cannot make room"
            if older
            else "there is nothing older to summarise"
        )
        return MessageTooLongError(f"{head}, and {why}; the server said: {server}")
    usable, context = budget.usable or 0, budget.context or 0
    return MessageTooLongError(
        f"{head}, over the {usable:,} usable of the {context:,}-token window "
        f"({context - usable:,} kept for the answer); send a shorter message or use a model with a "
        "larger window"
    )


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


NO_SUMMARY = "(The assistant's answers and the tool results of that part were left out.)"


def summary_message(
    summary: str | None, has_tail: bool, users: list[str] | None = None, left_out: int = 0
) -> Message:
    """The message in place of the older part: the user's earlier messages word for word,
    then the model's ``summary`` (None: no model text was kept)."""
    tail = (
        "The most recent messages follow word for word."
        if has_tail
        else "Continue the work from where the summary leaves off."
    )
    block = kept_users.render(users or [], left_out)
    body = f"<summary>\n{summary.strip()}\n</summary>" if summary is not None else NO_SUMMARY
    parts = [SUMMARY_HEADER, block, body, tail] if block else [SUMMARY_HEADER, body, tail]
    return Message(
        "user", [TextPart("\n\n".join(parts))]
    )  # not Message.user: the user's texts stay as they were


def summary_instruction(words: int | None = None) -> str:
    """The summary request's instruction; ``words``: the length to ask for (default: the
    prompt's own)."""
    from etcode.prompt.templates import load

    text = load("compaction/summary.txt")
    if words is not None:
        text = text.replace("under about 800 words", f"under about {words} words")
    return text


def earlier_user_texts(older: list[Message]) -> list[str]:
    """The user's own messages of ``older``, oldest first: those an earlier summary kept, then
    the messages themselves (not notes, summaries or announcements)."""
    return earlier_users(older)[0]


def earlier_users(older: list[Message]) -> tuple[list[str], int]:
    """(:func:`earlier_user_texts`, how many of the user's messages an earlier summary had
    already left out)."""
    texts: list[str] = []
    dropped = 0
    for message in older:
        if is_summary(message):
            kept, left_out = kept_users.parse(message.text)
            texts += kept
            dropped += left_out
        elif message.role == "user" and not message.text.startswith(NOTE_HEADER) and message.text.strip():
            texts.append(message.text)
    return texts, dropped


def _summary_text(message: Message) -> str | None:
    """The model's summary an earlier summary message holds, if any."""
    text = message.text
    start, end = text.find("\n<summary>\n"), text.rfind("\n</summary>")
    return text[start + len("\n<summary>\n") : end] if 0 <= start < end else None


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
    #: Summarising model requests made (0 or 1).
    requests: int = 0
    #: Why the model's summary was not kept (empty: it was, or none was asked for).
    rejected: str = ""
    #: The new batch would have made the request larger: the history was kept as it was.
    unchanged: bool = False

    def done_event(self, reason: str) -> CompactionEvent:
        """The ``CompactionEvent`` announcing this finished compaction."""
        instead = (
            "the history was kept as it was" if self.unchanged else "the older history was trimmed instead"
        )
        message = f"{self.rejected}; {instead}" if self.rejected else ""
        return CompactionEvent(
            reason,
            "done",
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            summarized=self.summarized,
            pruned=self.pruned,
            message=message,
        )


def _boundaries(messages: list[Message]) -> list[int]:
    """Indices where the kept tail may start: never at tool results (they answer the
    assistant message before them)."""
    return [i for i, m in enumerate(messages) if m.role != "tool"]


def newest_user_index(messages: list[Message]) -> int | None:
    """Where the user's newest message is (not a summary, an announcement or a note)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "user" and not message.text.startswith(NOTE_HEADER):
            return i
    return None


def _fitting(
    messages: list[Message], start: int, budget: int | None, est: TokenEstimator, valid: list[int]
) -> int:
    """The first boundary at or after ``start`` from which the rest fits ``budget``."""
    cut = start
    if budget is not None:
        while cut < len(messages) and est.messages(messages[cut:]) > budget:
            cut = next((i for i in valid if i > cut), len(messages))
    return cut


def split_history(
    messages: list[Message], keep_turns: int, budget_tokens: int | None, estimator: TokenEstimator
) -> tuple[list[Message], list[Message]]:
    """(older, tail): the tail stays word for word, the older part is summarised.

    The tail always holds the user's newest message. Then, within ``budget_tokens`` (which
    the newest message counts against): its turn's steps, the latest first, whole (a tool
    call stays with its results) — the latest one even when it alone is over the budget (the
    model goes on from its results: a small window must not lose them); when the whole turn fits, earlier whole turns, up to
    ``keep_turns`` turns in all. When the newest turn does not fit, its first steps go to
    the older part and the tail begins with the newest message; otherwise the tail is the
    end of the history. The older part is empty only when there is nothing to summarise
    that would leave the newest message and at least one step of its turn.
    """
    if not messages:
        return [], []
    valid = _boundaries(messages)
    pin = newest_user_index(messages)
    if pin is None:  # no message of the user's (only notes): keep the latest steps that fit
        return _split_latest_steps(messages, budget_tokens, estimator, valid)
    rest = None if budget_tokens is None else budget_tokens - estimator.message(messages[pin])
    steps = _fitting(messages, pin + 1, rest, estimator, valid)
    latest = max((i for i in valid if i > pin), default=None)
    if latest is not None and steps > latest:
        steps = latest  # the turn's latest step stays whole: the model goes on from its results
    if steps == pin + 1:  # the whole newest turn fits: add earlier whole turns that fit
        cut = _whole_turns_start(messages, pin, keep_turns, budget_tokens, estimator)
        if cut == 0:
            # Everything fits: make room by summarising the oldest turn, or the first step
            # of a single turn when it has more than one.
            cut = next((i for i in range(1, pin + 1) if messages[i].role == "user"), pin)
        if cut > 0:
            return messages[:cut], messages[cut:]
        second = [i for i in valid if i > pin + 1]
        if not second:
            return [], list(messages)
        steps = second[0]
    return [*messages[:pin], *messages[pin + 1 : steps]], [messages[pin], *messages[steps:]]


def _split_latest_steps(
    messages: list[Message], budget: int | None, est: TokenEstimator, valid: list[int]
) -> tuple[list[Message], list[Message]]:
    """(older, tail) of a history without a user message: the tail is the latest steps
    that fit ``budget``, at least the last one, and never the whole history."""
    cut = _fitting(messages, 0, budget, est, valid)
    if cut == 0:
        cut = next((i for i in valid if i > 0), len(messages))
    return messages[:cut], messages[cut:]


def _whole_turns_start(
    messages: list[Message], pin: int, keep_turns: int, budget: int | None, est: TokenEstimator
) -> int:
    """Where the tail starts when the newest turn (from ``pin``) fits whole: earlier whole
    turns join it, the latest first, while they fit ``budget``, up to ``keep_turns`` in all."""
    cut, used, turns = pin, est.messages(messages[pin:]), 1
    for start in reversed([i for i in range(pin) if messages[i].role == "user"]):
        if turns >= keep_turns:
            break
        size = est.messages(messages[start:cut])
        if budget is not None and used + size > budget:
            break
        cut, used, turns = start, used + size, turns + 1
    return cut


def prune_outputs(messages: list[Message], min_chars: int = PRUNE_MIN_CHARS) -> tuple[list[Message], int]:
    """Copies of ``messages`` with large tool outputs cut to a short head and a note."""
    out: list[Message] = []
    pruned = 0
    for message in messages:
        results = message.tool_results
        if not any(len(r.output) > min_chars for r in results):
            out.append(message)
            continue
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, ToolResultPart) and len(part.output) > min_chars:
                pruned += 1
                head = part.output[:PRUNE_KEEP_CHARS].rstrip()
                note = (
                    f"{head}\n[... output pruned by compaction: {len(part.output):,} characters in all; "
                    "run the tool again if you need it]"
                )
                parts.append(replace(part, output=note))  # keeps what the chat showed
            else:
                parts.append(part)
        out.append(Message(message.role, parts))
    return out, pruned


def _files(messages: list[Message]) -> list[str]:
    """The paths the tool calls of ``messages`` named, in order."""
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
    return files


class Compactor:
    """Makes the new batch. One per session; the provider and prompt come per call."""

    def __init__(
        self, budget: ContextBudget, estimator: TokenEstimator, keep_turns: int = DEFAULT_KEEP_TURNS
    ) -> None:
        self.budget = budget
        self.estimator = estimator
        self.keep_turns = keep_turns

    def split(
        self, messages: list[Message], system: list[str] | None = None, tools: list[ToolSchema] | None = None
    ) -> tuple[list[Message], list[Message]]:
        """(older, tail) of ``messages`` (no announcements) with this session's budget: the
        tail takes at most ``TAIL_SHARE`` of the usable window, and of the room the
        ``system`` prompt and ``tools`` leave (when given)."""
        usable = self.budget.usable
        budget = int(usable * TAIL_SHARE) if usable is not None else None
        room = self._room(system or [], tools or []) if system is not None else None
        if budget is not None and room is not None:
            budget = min(budget, int(room * TAIL_SHARE))
        return split_history(messages, self.keep_turns, budget, self.estimator)

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
        if reason != "manual":
            unimaged = self._without_old_images(carried, work, system, tools)
            if unimaged is not None:
                batch, after, dropped = unimaged
                return CompactionResult(batch, reason, before, after, pruned=dropped)
        older, tail = self.split(work, system, tools)
        if not older:  # nothing but what stays word for word
            return CompactionResult(messages, reason, before, before)
        position = {id(m): i for i, m in enumerate(work)}
        # The newest turn was split: the newest message comes first, then the summary.
        split = position[id(older[-1])] > position[id(tail[0])]
        labelled = replace_images(older, image_label)  # the summary request carries no image
        pruned_older, pruned = prune_outputs(labelled)

        if reason != "manual" and pruned:
            lighter = self._pruned_only(carried, work, older, pruned_older, system, tools)
            if lighter is not None:
                batch, after = lighter
                return CompactionResult(batch, reason, before, after, pruned=pruned)

        # Where the newest message was among the older ones (a note says so in the request).
        at = sum(1 for m in older if position[id(m)] < position[id(tail[0])]) if split else len(older)
        max_tokens = self._summary_max_tokens([*carried, *tail], system, tools)
        words = max(int(max_tokens * WORDS_PER_TOKEN), 50)
        source = self._summary_source(labelled, pruned_older, at, split, system, tools, words, max_tokens)
        if self.budget.context:  # the answer must fit the window beside its request
            asked = est.request(system, tools, source) + est.text(summary_instruction(words))
            max_tokens = max(min(max_tokens, self.budget.context - asked - SUMMARY_FRAMING), 1)
        has_older = any(not _is_note(m) for m in source)
        if has_older:
            summary, usage, stop = await self._summary_or_none(
                provider, model, system, tools, source, max_tokens, words
            )
        else:  # the system prompt and tools leave no room for any older message: nothing to ask
            summary, usage, stop = None, Usage(), ""
        room = self._room(system, tools)
        texts, dropped = earlier_users(labelled)
        users, left_out = kept_users.bounded(
            texts, None if room is None else int(room * USER_SHARE), est.text, dropped
        )
        replaced = est.messages(older) - est.text(kept_users.render(users, left_out))
        if summary is not None:
            rejected = rejection(summary, stop, est.text(summary), replaced)
        elif has_older:
            rejected = "the summary request did not fit the window"
        else:
            rejected = "no older message fit the summary request"
        done = CompactionResult(
            [],
            reason,
            before,
            0,
            summarized=len(older),
            pruned=pruned,
            usage=usage,
            requests=int(has_older),
        )
        if rejected is None and summary is not None:
            done.messages = _new_batch(
                carried, tail, summary_message(summary, has_tail(tail, split), users, left_out), split
            )
            done.summary = summary
        else:
            done.rejected = rejected or ""
            done.messages = self._without_summary(carried, work, older, labelled, tail, split, system, tools)
        done.tokens_after = est.request(system, tools, done.messages)
        original = est.request(system, tools, messages)
        if done.tokens_after >= original:  # never keep a compaction that grew the request
            done.messages, done.tokens_after, done.summary, done.unchanged = messages, before, "", True
            done.rejected = done.rejected or "the summary did not make the request smaller"
        return done

    def _room(self, system: list[str], tools: list[ToolSchema]) -> int | None:
        """The tokens the limit leaves for messages beside the system prompt and tools."""
        limit = self.budget.limit
        if limit is None:
            return None
        return max(limit - self.estimator.system(system) - self.estimator.tools(tools), 0)

    def _target(self, system: list[str], tools: list[ToolSchema]) -> int | None:
        """The request size a compaction that needs no summary must come under."""
        room = self._room(system, tools)
        return (
            None
            if room is None or self.budget.limit is None
            else self.budget.limit - room + int(room * PRUNE_TARGET)
        )

    def _without_summary(
        self,
        carried: list[Message],
        work: list[Message],
        older: list[Message],
        labelled: list[Message],
        tail: list[Message],
        split: bool,
        system: list[str],
        tools: list[ToolSchema],
    ) -> list[Message]:
        """The batch when the summary was rejected: the older part trimmed in place, its
        oldest turns (from the start) replaced by a message keeping only the user's words,
        as few as bring the request under ``TRIM_TARGET``; all of them when none does."""
        est = self.estimator
        target = self._trim_target(system, tools)
        trimmed = dict(zip(map(id, older), trim_messages(labelled), strict=True))
        if (
            target is None
            or est.request(system, tools, [*carried, *(trimmed.get(id(m), m) for m in work)]) <= target
        ):
            return [*carried, *(trimmed.get(id(m), m) for m in work)]
        room = self._room(system, tools)
        share = None if room is None else int(room * USER_SHARE)
        # Turn starts of the older part (before the newest message when its turn was split).
        before = [m for m in older if not split or work.index(m) < work.index(tail[0])]
        cuts = [i for i, m in enumerate(before) if i > 0 and m.role == "user"] if not split else []
        has = has_tail(tail, split)
        for cut in [*cuts, len(older)]:
            gone, kept = (older[:cut], older[cut:]) if cut < len(older) else (older, [])
            texts, dropped = earlier_users(labelled[: len(gone)])
            users, left_out = kept_users.bounded(texts, share, est.text, dropped)
            stand_in = summary_message(None, True if kept else has, users, left_out)
            if kept:
                batch = [*carried, stand_in, *(trimmed[id(m)] for m in kept), *tail]
            else:
                batch = self._users_only(
                    carried, older, tail, split, stand_in, users, left_out, system, tools
                )
            if cut == len(older) or est.request(system, tools, batch) <= target:
                return batch
        raise AssertionError("unreachable: the last cut always returns")

    def _users_only(
        self,
        carried: list[Message],
        older: list[Message],
        tail: list[Message],
        split: bool,
        stand_in: Message,
        users: list[str],
        left_out: int,
        system: list[str],
        tools: list[ToolSchema],
    ) -> list[Message]:
        """The user's messages in place of all the older part; with the model's text of an
        earlier (checked) summary when that is under ``TRIM_TARGET`` too."""
        earlier = next((_summary_text(m) for m in reversed(older) if is_summary(m)), None)
        if earlier is not None:
            batch = _new_batch(
                carried, tail, summary_message(earlier, has_tail(tail, split), users, left_out), split
            )
            target = self._trim_target(system, tools)
            if target is None or self.estimator.request(system, tools, batch) <= target:
                return batch
        return _new_batch(carried, tail, stand_in, split)

    def _trim_target(self, system: list[str], tools: list[ToolSchema]) -> int | None:
        room = self._room(system, tools)
        limit = self.budget.limit
        return None if room is None or limit is None else limit - room + int(room * TRIM_TARGET)

    def _without_old_images(
        self, carried: list[Message], work: list[Message], system: list[str], tools: list[ToolSchema]
    ) -> tuple[list[Message], int, int] | None:
        """(batch, its request's tokens, images dropped) with the oldest images replaced by
        their labels, a message at a time, until the request is under ``PRUNE_TARGET`` of the
        window; the newest message's images stay. None when that is not enough."""
        limit = self.budget.limit
        if limit is None:
            return None
        pin = newest_user_index(work)
        candidate = list(work)
        dropped = 0
        for index, message in enumerate(work):
            if index == pin or not message.images:
                continue
            dropped += len(message.images)
            candidate[index] = replace_images([message], image_label)[0]
            after = self.estimator.request(system, tools, [*carried, *candidate])
            if after <= limit * PRUNE_TARGET:
                return [*carried, *candidate], after, dropped
        return None

    def _pruned_only(
        self,
        carried: list[Message],
        work: list[Message],
        older: list[Message],
        pruned_older: list[Message],
        system: list[str],
        tools: list[ToolSchema],
    ) -> tuple[list[Message], int] | None:
        """(batch, its request's tokens) with only the older messages' large outputs pruned,
        when that alone brings the request under ``PRUNE_TARGET`` of the window."""
        if self.budget.limit is None:
            return None
        replaced = {id(m): p for m, p in zip(older, pruned_older, strict=True)}
        candidate = [*carried, *(replaced.get(id(m), m) for m in work)]
        after = self.estimator.request(system, tools, candidate)
        target = self._target(system, tools)
        return (candidate, after) if target is not None and after <= target else None

    def _summary_source(
        self,
        older: list[Message],
        pruned_older: list[Message],
        at: int,
        split: bool,
        system: list[str],
        tools: list[ToolSchema],
        words: int | None = None,
        answer: int = 0,
    ) -> list[Message]:
        """What the summary request carries. It must fit too, with its ``answer`` (tokens):
        its input gets the usable window, less what the answer needs beyond the reserve
        (large outputs pruned, then the oldest messages dropped). The kept messages are not
        in it; where the newest one was, a note says so."""
        est = self.estimator
        usable = self.budget.usable
        if usable is not None and self.budget.context:
            usable = min(usable, self.budget.context - answer - SUMMARY_FRAMING)
        source = _with_note(older, at, split)
        instruction = est.text(summary_instruction(words))
        if usable is not None and est.request(system, tools, source) + instruction > usable:
            source = _fit(_with_note(pruned_older, at, split), usable - instruction, est, system, tools)
        return source

    def _summary_max_tokens(self, kept: list[Message], system: list[str], tools: list[ToolSchema]) -> int:
        """How long the summary may be: within the reserve (at least ``SUMMARY_MIN_TOKENS``:
        a reserve kept for 32-token answers would cut every summary) and ``SUMMARY_SHARE`` of
        the room for messages, leaving room for the ``kept`` messages in the usable window."""
        usable = self.budget.usable
        reserve = max(self.budget.reserve or SUMMARY_MAX_TOKENS, SUMMARY_MIN_TOKENS)
        max_tokens = min(reserve, SUMMARY_MAX_TOKENS)
        room = self._room(system, tools)
        if room is not None:
            max_tokens = min(max_tokens, max(int(room * SUMMARY_SHARE), SUMMARY_MIN_TOKENS))
        if usable is not None:
            left = usable - self.estimator.request(system, tools, kept) - SUMMARY_FRAMING
            max_tokens = min(max_tokens, max(left, SUMMARY_MIN_TOKENS))
        return max_tokens

    async def _summary_or_none(
        self,
        provider: Provider,
        model: str,
        system: list[str],
        tools: list[ToolSchema],
        source: list[Message],
        max_tokens: int,
        words: int | None = None,
    ) -> tuple[str | None, Usage, str]:
        """(the model's summary of ``source``, its usage, its stop reason); None when the
        request is too long for the window."""
        request = ModelRequest(
            model=model,
            system=system,
            messages=alternating([*source, Message.user(summary_instruction(words))]),
            tools=tools,
            max_tokens=max_tokens,
        )
        end: StreamEnd | None = None
        try:
            stream = provider.stream(request)
            try:
                async for chunk in stream:
                    if isinstance(chunk, StreamEnd):
                        end = chunk
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
        except ContextOverflowError:
            return None, Usage(), ""
        if end is None:
            return "", Usage(), ""
        text = "".join(p.text for p in end.message.parts if isinstance(p, TextPart))
        if end.message.tool_calls:  # small models call a tool instead: that is no summary
            return text, end.usage, CALLED
        return text, end.usage, end.stop_reason


def has_tail(tail: list[Message], split: bool) -> bool:
    """Whether kept messages follow the summary message in the new batch."""
    return len(tail) > 1 if split else bool(tail)


def _new_batch(carried: list[Message], tail: list[Message], summary: Message, split: bool) -> list[Message]:
    """The announcements, the summary message and the tail; when the newest turn was split,
    its newest message comes first, then the summary."""
    if split:
        return [*carried, tail[0], summary, *tail[1:]]
    return [*carried, summary, *tail]


def _with_note(older: list[Message], at: int, split: bool) -> list[Message]:
    """``older`` with, when the newest turn was split, a note where the newest message was."""
    return [*older[:at], Message.user(NEWEST_LEFT_OUT), *older[at:]] if split else older


def _is_note(message: Message) -> bool:
    """A note etcode added to a request (not a message of the conversation)."""
    return message.role == "user" and message.text.startswith(NOTE_HEADER) and not is_summary(message)


def _unique(messages: Iterable[Message]) -> list[Message]:
    seen: set[str] = set()
    out: list[Message] = []
    for message in messages:
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
