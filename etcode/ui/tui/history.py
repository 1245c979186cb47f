"""Input history for Up/Down, kept in ``$XDG_STATE_HOME/etcode/prompt-history.jsonl``."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from etcode.util.private import open_private, private_dir, tighten

MAX_ENTRIES = 500


class PromptHistory:
    """Sent inputs, oldest first, with a cursor for Up/Down browsing.

    ``previous(current)`` / ``next()`` walk the entries; the text being typed when
    browsing started comes back when walking past the newest entry.
    """

    def __init__(self, path: Path | None = None, entries: list[str] | None = None) -> None:
        self.path = path
        self.entries: list[str] = list(entries or [])
        if path is not None and entries is None:
            self.entries = _load(path)
        self._index: int | None = None
        self._draft = ""

    def add(self, text: str) -> None:
        """Remember a sent input (consecutive duplicates kept once) and reset browsing."""
        self.reset()
        text = text.strip()
        if not text or (self.entries and self.entries[-1] == text):
            return
        self.entries.append(text)
        del self.entries[:-MAX_ENTRIES]
        if self.path is not None:
            with contextlib.suppress(OSError):
                private_dir(self.path.parent, tighten_existing=False)  # what the user typed: owner only
                with open_private(self.path, "a") as handle:
                    handle.write(json.dumps(text) + "\n")

    def reset(self) -> None:
        self._index = None
        self._draft = ""

    @property
    def browsing(self) -> bool:
        return self._index is not None

    def previous(self, current: str) -> str | None:
        """The entry before the current one (None at the oldest)."""
        if not self.entries:
            return None
        if self._index is None:
            self._draft = current
            self._index = len(self.entries)
        if self._index == 0:
            return None
        self._index -= 1
        return self.entries[self._index]

    def next(self) -> str | None:
        """The entry after the current one; the draft after the newest; None if not browsing."""
        if self._index is None:
            return None
        self._index += 1
        if self._index >= len(self.entries):
            draft = self._draft
            self.reset()
            return draft
        return self.entries[self._index]


def _load(path: Path) -> list[str]:
    entries: list[str] = []
    tighten(path)  # left readable by an older etcode
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return entries
    for line in lines[-MAX_ENTRIES:]:
        with contextlib.suppress(ValueError, RecursionError):
            value = json.loads(line)
            if isinstance(value, str):
                entries.append(value)
    return entries


def default_history() -> PromptHistory:
    """The user's history file under the XDG state folder."""
    from etcode.util.paths import state_dir

    folder = state_dir()
    tighten(folder)  # etcode's own state folder: the owner's alone
    return PromptHistory(folder / "prompt-history.jsonl")
