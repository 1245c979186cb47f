"""The user's own messages of the compacted part, kept word for word in the summary message.

They are short and they are what the user said (names, wishes, corrections), so no summary
stands in for them: the compacted batch carries each one in a ``<user_message>`` block that
states its length in characters, so that a text holding the tags itself reads back whole.
When they alone would not fit their share of the window, the user's first message stays (it
usually says who they are and what the work is; its head when it is long), then the newest
that fit: those in between are left out and counted. A later compaction reads them back
from the earlier summary message (:func:`parse`), the count of those left out included.
"""

from __future__ import annotations

import re
from collections.abc import Callable

OPEN = "<user_message>"
CLOSE = "</user_message>"
CUT = "[... a long message: {:,} characters in all, the rest left out by compaction]"
INTRO = "The user's earlier messages, word for word (oldest first):"
LEFT_OUT = "({} more of the user's messages were left out here to fit the window.)"
_OPEN_SIZED = re.compile(r'<user_message chars="(\d+)">\n')
_LEFT_OUT = re.compile(r"\((\d+) (?:more|older) (?:of the user's )?messages[^\n]*left out[^\n]*\)\n")


def render(texts: list[str], dropped: int = 0) -> str:
    """The block: an intro line, then each text between tags naming its length; the note on
    the ``dropped`` messages after the first text (they were between it and the rest)."""
    if not texts and not dropped:
        return ""
    blocks = [f'<user_message chars="{len(text)}">\n{text}\n{CLOSE}' for text in texts]
    if dropped:
        blocks.insert(min(1, len(blocks)), LEFT_OUT.format(dropped))
    return "\n".join([INTRO, *blocks])


def parse(text: str) -> tuple[list[str], int]:
    """(the texts of a block :func:`render` wrote into ``text``, how many it left out); none
    when it has no block. Blocks of earlier versions (tags without a length) read too."""
    start = text.find(f"\n{INTRO}\n")
    if start < 0:
        return [], 0
    pos = start + len(INTRO) + 2
    found: list[str] = []
    dropped = 0
    while pos < len(text):
        note = _LEFT_OUT.match(text, pos)
        if note is not None:
            dropped += int(note.group(1))
            pos = note.end()
            continue
        sized = _OPEN_SIZED.match(text, pos)
        if sized is not None:
            body = sized.end()
            end = body + int(sized.group(1))
            if not text.startswith(f"\n{CLOSE}", end):
                break
            found.append(text[body:end])
            pos = end + len(CLOSE) + 2
            continue
        if not text.startswith(f"{OPEN}\n", pos):
            break
        body = pos + len(OPEN) + 1  # an earlier version's block: up to the closing tag
        end = text.find(f"\n{CLOSE}", body)
        if end < 0:
            break
        found.append(text[body:end])
        pos = end + len(CLOSE) + 2
    return found, dropped


def bounded(
    texts: list[str], budget: int | None, size: Callable[[str], int], dropped: int = 0
) -> tuple[list[str], int]:
    """(``texts`` within ``budget`` tokens, how many were left out, ``dropped`` earlier ones
    included). The first text always stays; then the newest that fit, those in between left
    out. A text larger than a third of the budget (a pasted log, not a short message) keeps
    its head only, so that one long message does not push out the others."""
    if budget is None or not texts:
        return list(texts), dropped
    cap = max(budget // 3, 1)
    texts = [_head(t, cap, size) for t in texts]
    if not dropped and sum(size(t) + 4 for t in texts) <= budget:
        return texts, 0
    first, rest = texts[0], texts[1:]
    used = size(first) + 4 + (size(LEFT_OUT.format(len(texts))) if dropped or rest else 0)
    kept: list[str] = []
    for text in reversed(rest):
        cost = size(text) + 4
        if used + cost > budget:
            break
        kept.append(text)
        used += cost
    kept.reverse()
    return [first, *kept], dropped + len(rest) - len(kept)


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
