"""Syntax highlighting of code blocks that never stalls the UI.

Two Pygments costs would freeze the chat while an answer streams:

- a code block with no language (or one Pygments does not know, such as a half-streamed
  ```` ```pyt ````) makes Pygments *guess*: it imports every lexer it has and asks each,
  plugins included (IPython's, when installed: seconds, again at every update);
- the first block of a language imports its lexer module and compiles its rules
  (50-100 ms for Python).

So a block is highlighted only with a language Pygments ships, and only once its lexer
has been loaded by a worker thread; until then it is shown as plain text, and it is
repainted when the lexer is ready (listeners are told, from the worker thread). The UI
thread never imports a lexer itself, so it never waits on the worker's import lock.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from functools import cache

#: Loaded at start-up, before any answer needs them (diffs are shown by the tool widgets).
PRELOAD: tuple[str, ...] = ("python", "diff")

Listener = Callable[[str], None]


@cache
def _aliases() -> dict[str, str]:
    """Every alias of every lexer Pygments ships (no plugins) → its main alias."""
    from pygments.lexers._mapping import LEXERS

    names: dict[str, str] = {}
    for _module, _name, aliases, _files, _mimes in LEXERS.values():
        for alias in aliases:
            names.setdefault(alias.lower(), aliases[0])
    return names


def language_of(info: str | None) -> str | None:
    """The lexer alias a fence's info string (```` ```Python title="x" ````) names, when
    Pygments ships it; None for no language or an unknown one."""
    word = (info or "").strip().split(maxsplit=1)
    if not word:
        return None
    return _aliases().get(word[0].lower())


class LexerLoader:
    """Loads lexers in one worker thread; :meth:`ready` says whether one may be used."""

    def __init__(self) -> None:
        self._ready: set[str] = set()
        self._requested: set[str] = set()
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def ready(self, language: str) -> bool:
        """True when ``language``'s lexer is loaded; otherwise asks for it and says False."""
        if language in self._ready:
            return True
        self.request(language)
        return False

    def request(self, *languages: str) -> None:
        with self._lock:
            for language in languages:
                if language in self._requested:
                    continue
                self._requested.add(language)
                self._queue.put(language)
            if self._worker is None and not self._queue.empty():
                self._worker = threading.Thread(target=self._work, name="etcode-lexers", daemon=True)
                self._worker.start()

    def add_listener(self, listener: Listener) -> None:
        """``listener(language)`` is called (in the worker thread) when a lexer is ready."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _work(self) -> None:
        while True:
            try:
                language = self._queue.get(timeout=5)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._worker = None
                        return
                continue
            try:
                _load(language)
            except Exception:  # a broken lexer: its blocks stay plain
                continue
            self._ready.add(language)
            for listener in list(self._listeners):
                listener(language)


def _load(language: str) -> None:
    """Import ``language``'s lexer and compile its rules (by lexing a line of text)."""
    from textual.highlight import highlight

    highlight("x = 1\n", language=language)


#: The process's loader (lexers are process-wide in Pygments too).
LEXERS = LexerLoader()
