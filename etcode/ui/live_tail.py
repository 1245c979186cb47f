"""The last few lines of a running command's output, fed from ``tool_progress`` events."""

from __future__ import annotations

from collections import deque


class LiveTail:
    """``feed(text)`` with each event's ``text``; ``tail()`` is the newest ``keep`` lines
    (the unfinished one included). A ``\\r`` starts the current line again (progress bars)."""

    def __init__(self, keep: int = 5) -> None:
        self.keep = keep
        self._lines: deque[str] = deque(maxlen=keep)
        self._current = ""

    def feed(self, text: str) -> None:
        for index, part in enumerate(text.split("\n")):
            if index:
                self._lines.append(self._current)
                self._current = ""
            if "\r" in part:
                self._current = part.rsplit("\r", 1)[1]
            else:
                self._current += part

    def tail(self) -> list[str]:
        lines = list(self._lines)
        if self._current:
            lines.append(self._current)
        return lines[-self.keep :]

    def last_line(self) -> str:
        """The newest non-blank line, or ``""``."""
        for line in reversed(self.tail()):
            if line.strip():
                return line
        return ""


def elapsed_text(seconds: float) -> str:
    """``12s``, ``3m 05s``, ``1h 02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def cut_to_cells(text: str, cells: int) -> str:
    """``text`` cut to ``cells`` terminal columns (wide characters count two), ``…`` marking a cut."""
    import unicodedata

    used = 0
    for index, char in enumerate(text):
        used += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
        if used > cells:
            return text[: max(0, index - 1)] + "…"
    return text
