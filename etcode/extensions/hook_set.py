"""The hooks in force for a project: read from ``etcode.json``'s ``"hooks"`` (every layer) and
from Claude Code's settings files (``.claude/settings.json``, ``.claude/settings.local.json``,
``~/.claude/settings.json``), and which of them an event matches.

This is the contract between where hooks come from and where they run
(``extensions/hook_runner.py``, ``extensions/hook_interceptor.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.config.schema import Config, HookEventName

#: The events whose matcher names a tool (the others match a source or trigger, or all).
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
DEFAULT_TIMEOUT = 60.0
#: etcode's tool names that Claude Code spells otherwise (a hook sees and matches both).
CLAUDE_TOOL_NAMES = {"ReadFile": "Read", "WriteFile": "Write", "ListFiles": "LS"}


@dataclass(frozen=True)
class HookCommand:
    """One command to run: its shell line, time limit (seconds) and where it was written
    (a file path, for warnings and the trust question)."""

    command: str
    timeout: float = DEFAULT_TIMEOUT
    source: str = ""
    #: True for a project's hook (it needed the user's trust), False for the user's own.
    project: bool = False


@dataclass(frozen=True)
class HookMatcher:
    """The commands of one event for what ``matcher`` names (``""``/``"*"``: everything)."""

    matcher: str
    commands: tuple[HookCommand, ...]


@dataclass
class HookSet:
    """Every hook in force, per event, in the order they were found (user's files first)."""

    by_event: dict[str, list[HookMatcher]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.by_event.values())

    def commands_for(self, event: HookEventName, subject: str | None = None) -> list[HookCommand]:
        """The commands ``event`` runs for ``subject`` (a tool name for the tool events, the
        source or trigger for SessionStart/PreCompact, None for the others), each once."""
        raise NotImplementedError  # issue 28: hooks-sources


def tool_names(name: str) -> tuple[str, ...]:
    """The names a tool answers to in a matcher: etcode's and Claude Code's (``WriteFile``,
    ``Write``)."""
    alias = CLAUDE_TOOL_NAMES.get(name)
    return (name, alias) if alias else (name,)


def matches(matcher: str, names: tuple[str, ...]) -> bool:
    """Whether a Claude Code matcher names one of ``names``: ``""``/``"*"`` all; a name or
    ``A|B`` names exactly; anything else as a regular expression (searched)."""
    raise NotImplementedError  # issue 28: hooks-sources


def load_hooks(config: Config, directory: Path, worktree: Path) -> tuple[HookSet, list[str]]:
    """The hooks in force (``config.hooks`` and Claude Code's settings files; a project's
    left out where the user did not trust them) and one warning per file that could not be
    read."""
    raise NotImplementedError  # issue 28: hooks-sources
