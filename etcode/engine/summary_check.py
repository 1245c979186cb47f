"""Whether a model's summary may replace the history: small models often write junk.

A summary is rejected when the answer called a tool (small models do, offered the tools the
request keeps for the prompt cache), when it was cut (the request stopped at its ``max_tokens``), when it
is not shorter than what it replaces (in tokens), or when it is mostly repetition
(:func:`repetition`: the share of its text in sentences that repeat an earlier one, or in
word 6-grams seen before, whichever is larger). A rejected summary is never kept: the
compactor prunes the history instead.
"""

from __future__ import annotations

import re

#: At or above this share of repeated text a summary is junk ("I'm happy to continue." × N).
REPEAT_LIMIT = 0.5
NGRAM = 6
#: Stop reasons of a request cut at its ``max_tokens`` (providers' vocabularies).
CUT_REASONS = frozenset({"max_tokens", "length", "max_output_tokens"})
#: The stop reason the compactor gives an answer that called a tool (whatever its text).
CALLED = "tool_call"

_UNITS = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def repetition(text: str) -> float:
    """0 (nothing repeats) to 1 (all of it is a repeat): the larger of the share of words in
    sentences or lines that repeat an earlier one, and the share of word 6-grams seen before."""
    units = [_words(u) for u in _UNITS.split(text)]
    units = [u for u in units if u]
    total = sum(len(u) for u in units)
    if not total:
        return 0.0
    seen: set[tuple[str, ...]] = set()
    repeated = 0
    for unit in units:
        key = tuple(unit)
        if key in seen:
            repeated += len(unit)
        seen.add(key)
    words = [w for u in units for w in u]
    grams = [tuple(words[i : i + NGRAM]) for i in range(len(words) - NGRAM + 1)]
    gram_share = (len(grams) - len(set(grams))) / len(grams) if grams else 0.0
    return max(repeated / total, gram_share)


def rejection(summary: str, stop_reason: str, tokens: int, replaced: int) -> str | None:
    """Why ``summary`` (``tokens`` long, ending with ``stop_reason``) may not replace history
    of ``replaced`` tokens, in a few words; None when it may."""
    if stop_reason == CALLED:
        return "the model called a tool instead of writing the summary"
    if not summary.strip():
        return "the summary was empty"
    if stop_reason in CUT_REASONS:
        return "the summary was cut off at its length limit"
    if tokens >= replaced:
        return f"the summary ({tokens:,} tokens) was not shorter than what it replaced ({replaced:,})"
    share = repetition(summary)
    if share >= REPEAT_LIMIT:
        return f"the summary was mostly repetition ({share:.0%} repeated)"
    return None
