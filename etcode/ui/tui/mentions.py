"""``@path`` mentions: finding them, completing them, and attaching the files to a message."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path

from etcode.prompt.mentions import (
    MAX_ATTACH_BYTES,
    MENTION,
    Attachment,
    attach,
    display_path,
    find_mentions,
    images_of,
    resolve_mentions,
)

#: The reading side lives in ``prompt/mentions.py`` (custom commands use it too).
__all__ = [
    "MAX_ATTACH_BYTES",
    "MENTION",
    "Attachment",
    "FileIndex",
    "attach",
    "display_path",
    "find_mentions",
    "images_of",
    "mention_at",
    "resolve_mentions",
]
MAX_INDEX_FILES = 20_000
MAX_INDEX_AGE = 5.0  # seconds a listing of the project's files is reused


def mention_at(text: str, cursor: int) -> tuple[int, str] | None:
    """The ``@`` mention being typed at ``cursor`` as (start offset of ``@``, query), or None."""
    start = cursor
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:cursor]
    if word.startswith("@") and "@" not in word[1:]:
        return start, word[1:]
    return None


class FileIndex:
    """Project files for ``@`` completion (ripgrep when present): listed on first use and
    listed again when older than ``max_age`` seconds or after :meth:`invalidate` (the app
    calls it after each turn), so files created since (by the agent too) are offered."""

    def __init__(self, root: Path, max_age: float = MAX_INDEX_AGE) -> None:
        self.root = root
        self.max_age = max_age
        self.paths: list[str] | None = None
        self._loaded_at = 0.0

    def invalidate(self) -> None:
        """List the files again on the next use."""
        self._loaded_at = -math.inf

    async def load(self) -> list[str]:
        if self.paths is None or time.monotonic() - self._loaded_at > self.max_age:
            from etcode.tools.ripgrep import list_files

            try:
                files = await list_files(self.root, self.root)
            except Exception:  # completion is a convenience: never break the input
                files = []
            self.paths = await asyncio.to_thread(_index, files, self.root)
            self._loaded_at = time.monotonic()
        return self.paths

    def match(self, query: str, limit: int = 12) -> list[str]:
        """Best matches for ``query``: basename prefix, then path prefix, then substring."""
        if not self.paths:
            return []
        q = query.lower()
        scored: list[tuple[int, int, str]] = []
        for path in self.paths:
            low = path.lower()
            name = low.rstrip("/").rsplit("/", 1)[-1]
            if low.startswith(q):
                rank = 0
            elif name.startswith(q):
                rank = 1
            elif q in low:
                rank = 2
            else:
                continue
            scored.append((rank, len(path), path))
        scored.sort()
        return [path for _, _, path in scored[:limit]]


def _index(files: list[Path], root: Path) -> list[str]:
    """Folders (``src/``) then files, as paths relative to ``root``, sorted."""
    rel = sorted(display_path(p, root) for p in files[:MAX_INDEX_FILES])
    folders = sorted({str(Path(p).parent) + "/" for p in rel if "/" in p})
    return folders + rel
