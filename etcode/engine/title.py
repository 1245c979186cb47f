"""Session titles: from the first message, or from the ``small_model`` when configured."""

from __future__ import annotations

import logging
import re

from etcode.provider.base import Provider
from etcode.provider.types import Message, ModelRequest, StreamEnd

log = logging.getLogger("etcode.title")

MAX_TITLE = 60
TITLE_PROMPT = (
    "Write a short title (3 to 7 words, no quotes, no trailing period) for a coding session "
    "that starts with the user's message below. Answer with the title only."
)


def title_from_text(text: str, limit: int = MAX_TITLE) -> str:
    """The first meaningful line of ``text``, whitespace collapsed, cut at a word boundary
    (secrets redacted before the cut: half a key would no longer be recognised)."""
    from etcode.security.redact import redact

    line = next((ln.strip() for ln in redact(text).splitlines() if ln.strip()), "")
    line = re.sub(r"\s+", " ", line)
    if len(line) <= limit:
        return line or "New session"
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def clean_title(text: str) -> str:
    """A model's answer as a title (one line, no quotes or heading marks)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = line.strip().strip("#*").strip().strip("\"'`").strip().rstrip(".")
    line = re.sub(r"^(title)\s*:\s*", "", line, flags=re.I)
    return title_from_text(line) if line else ""


async def generate_title(provider: Provider, model: str, first_message: str) -> str | None:
    """Ask the small model for a title; None when it fails or answers nothing."""
    request = ModelRequest(
        model=model,
        system=[TITLE_PROMPT],
        messages=[Message.user(first_message[:4000])],
        max_tokens=40,
    )
    try:
        end: StreamEnd | None = None
        async for chunk in provider.stream(request):
            if isinstance(chunk, StreamEnd):
                end = chunk
    except Exception as err:  # a title is cosmetic: never let it break a run
        log.debug("title generation failed: %s", err)
        return None
    title = clean_title(end.message.text) if end is not None else ""
    return title or None
