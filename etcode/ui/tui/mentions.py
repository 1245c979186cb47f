"""``@path`` mentions: finding them, completing them, and attaching the files to a message."""

from __future__ import annotations

import asyncio
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path

#: ``@path`` at the start or after whitespace; the path runs to the next whitespace.
MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s@]+)")
MAX_ATTACH_BYTES = 100 * 1024
MAX_INDEX_FILES = 20_000
MAX_INDEX_AGE = 5.0  # seconds a listing of the project's files is reused


@dataclass
class Attachment:
    """A mentioned file: its display path and the text attached (or why it was not)."""

    path: str
    text: str | None
    note: str = ""


def find_mentions(text: str) -> list[str]:
    """The ``@path`` tokens of ``text`` (without the ``@``), first occurrence order, unique."""
    seen: dict[str, None] = {}
    for match in MENTION.finditer(text):
        seen.setdefault(match.group(1).rstrip(".,;:!?)]}\"'"), None)
    return [m for m in seen if m]


def resolve_mentions(
    text: str, directory: Path, trusted: bool = False, root: Path | None = None
) -> list[Attachment]:
    """Read every mentioned file that exists under (or relative to) ``directory``. A file
    of the project (``root``, its worktree; ``directory`` when not given) reached through a
    link out of it (or to a secret or git-ignored file) is not attached unless the project
    is ``trusted`` (``prompt/project_files.py``). Blocking: call it in a worker thread."""
    from etcode.prompt.project_files import TRUST_HINT, refusal
    from etcode.util.fs import is_binary_file

    attachments: list[Attachment] = []
    for mention in find_mentions(text):
        path = Path(mention).expanduser()
        path = path if path.is_absolute() else directory / path
        if not path.is_file():
            continue
        shown = _display(path, directory)
        reason = None if trusted else refusal(path, root or directory)
        if reason is not None:
            attachments.append(Attachment(shown, None, f"not attached: {reason} ({TRUST_HINT})"))
            continue
        try:
            size = path.stat().st_size
            if is_binary_file(path):
                attachments.append(Attachment(shown, None, "binary file, not attached"))
                continue
            data = path.read_bytes()[:MAX_ATTACH_BYTES]
        except OSError as err:
            attachments.append(Attachment(shown, None, f"unreadable: {err.strerror or err}"))
            continue
        content = data.decode("utf-8", errors="replace")
        note = f"truncated to the first {MAX_ATTACH_BYTES // 1024} KB" if size > MAX_ATTACH_BYTES else ""
        attachments.append(Attachment(shown, content, note))
    return attachments


def _display(path: Path, directory: Path) -> str:
    try:
        return path.resolve().relative_to(directory.resolve()).as_posix()
    except ValueError:
        return str(path)


def attach(text: str, attachments: list[Attachment]) -> str:
    """The message the model receives: ``text`` followed by each attached file."""
    blocks = [text]
    for item in attachments:
        if item.text is None:
            blocks.append(f'<file path="{item.path}" note="{item.note}" />')
            continue
        note = f' note="{item.note}"' if item.note else ""
        body = item.text if item.text.endswith("\n") else item.text + "\n"
        blocks.append(f'<file path="{item.path}"{note}>\n{body}</file>')
    return "\n\n".join(blocks)


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
    rel = sorted(_display(p, root) for p in files[:MAX_INDEX_FILES])
    folders = sorted({str(Path(p).parent) + "/" for p in rel if "/" in p})
    return folders + rel
