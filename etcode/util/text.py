"""Text that can always be encoded: undecodable bytes and stray surrogates become U+FFFD.

Python strings may hold surrogates that UTF-8 cannot encode: bytes a terminal or pipe sent
that were not UTF-8 (``surrogateescape`` turns ``\\xff`` into ``\\udcff``), or a model stream
whose JSON escapes split an emoji in two events (``"\\ud83d"`` then ``"\\ude00"``). Every
such string is cleaned where it enters etcode, so the store, the HTTP client and the
terminal never meet one.
"""

from __future__ import annotations


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def clean_text(text: str) -> str:
    """``text`` with surrogate pairs joined into their character and lone surrogates
    (and ``surrogateescape``\\ d bytes) replaced by U+FFFD."""
    if text.isascii() or not _has_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def decode_bytes(data: bytes) -> str:
    """UTF-8 text of ``data``; bytes that are not UTF-8 become U+FFFD (never an error)."""
    return data.decode("utf-8", "replace")


class SurrogateJoiner:
    """Cleans a text stream piece by piece: a high surrogate at the end of a piece waits
    for the next piece, which may hold its other half."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, piece: str) -> str:
        text = self._pending + piece if self._pending else piece
        self._pending = ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            self._pending, text = text[-1], text[:-1]
        return clean_text(text)

    def flush(self) -> str:
        """What is still held back (a lone high surrogate, as U+FFFD)."""
        pending, self._pending = self._pending, ""
        return clean_text(pending)
