"""The user's own messages of the compacted part, kept word for word in the summary message.

They are short and they are what the user said (names, wishes, corrections), so no summary
stands in for them: the compacted batch carries each one in a ``<user_message>`` block, the
oldest dropped first only when they alone would not fit their share of the window. A later
compaction reads them back from the earlier summary message (:func:`parse`).
"""

from __future__ import annotations

from collections.abc import Callable

OPEN = "<user_message>"
CLOSE = "</user_message>"
CUT = "[... a long message: {:,} characters in all, the rest left out by compaction]"
INTRO = "The user's earlier messages, word for word (oldest first):"


def render(texts: list[str], dropped: int = 0) -> str:
    """The block: an intro line, then each text between ``<user_message>`` tags."""
    if not texts and not dropped:
        return ""
    lines = [INTRO]
    if dropped:
        lines.append(f"({dropped} older messages of the user's were left out to fit the window.)")
    lines += [f"{OPEN}\n{text}\n{CLOSE}" for text in texts]
    return "\n".join(lines)


def parse(text: str) -> list[str]:
    """The texts of a block :func:`render` wrote into ``text`` (none when it has no block)."""
    start = text.find(f"\n{INTRO}\n")
    if start < 0:
        return []
    pos = start + len(INTRO) + 2
    if text.startswith("(", pos):  # the note on messages left out
        pos = text.find("\n", pos) + 1 or len(text)
    found: list[str] = []
    head = f"{OPEN}\n"
    while text.startswith(head, pos):
        body = pos + len(head)
        end = text.find(f"\n{CLOSE}\n", body)
        if end < 0:
            end = text.find(f"\n{CLOSE}", body)
            if end < 0 or end + len(CLOSE) + 1 != len(text):
                break
        found.append(text[body:end])
        pos = end + len(CLOSE) + 2
    return found


def bounded(texts: list[str], budget: int | None, size: Callable[[str], int]) -> tuple[list[str], int]:
    """(``texts`` within ``budget`` tokens, how many of the oldest were left out). A text
    larger than a third of the budget (a pasted log, not a short message) keeps its head
    only, so that one long message does not push out the others."""
    if budget is None:
        return list(texts), 0
    cap = max(budget // 3, 1)
    texts = [_head(t, cap, size) for t in texts]
    kept: list[str] = []
    used = 0
    for text in reversed(texts):
        cost = size(text) + 4
        if used + cost > budget:
            break
        kept.append(text)
        used += cost
    kept.reverse()
    return kept, len(texts) - len(kept)


def _head(text: str, cap: int, size: Callable[[str], int]) -> str:
    """``text``, or its head within ``cap`` tokens and a note when it is larger."""
    tokens = size(text)
    if tokens <= cap:
        return text
    keep = len(text) * cap // tokens
    while keep > 0:
        head = f"{text[:keep].rstrip()} {CUT.format(len(text))}"
        if size(head) <= cap:
            return head
        keep = keep * 3 // 4
    return CUT.format(len(text))
