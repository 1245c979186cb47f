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
        # MINIMAL LOCAL IMPLEMENTATION (branch hooks, to test the runner): hooksrc's replaces it.
        names = tool_names(subject) if subject else ()
        found: dict[str, HookCommand] = {}
        for item in self.by_event.get(event, []):
            if subject is None or not names or matches(item.matcher, names):
                for command in item.commands:
                    found.setdefault(command.command, command)
        return list(found.values())


def tool_names(name: str) -> tuple[str, ...]:
    """The names a tool answers to in a matcher: etcode's and Claude Code's (``WriteFile``,
    ``Write``)."""
    alias = CLAUDE_TOOL_NAMES.get(name)
    return (name, alias) if alias else (name,)


def matches(matcher: str, names: tuple[str, ...]) -> bool:
    """Whether a Claude Code matcher names one of ``names``: ``""``/``"*"`` all; a name or
    ``A|B`` names exactly; anything else as a regular expression (searched)."""
    # MINIMAL LOCAL IMPLEMENTATION (branch hooks, to test the runner): hooksrc's replaces it.
    import re

    if matcher in ("", "*"):
        return True
    if all(part.isidentifier() for part in matcher.split("|")):
        return any(name in matcher.split("|") for name in names)
    try:
        return any(re.search(matcher, name) for name in names)
    except re.error:
        return False


def load_hooks(config: Config, directory: Path, worktree: Path) -> tuple[HookSet, list[str]]:
    """The hooks in force (``config.hooks`` and Claude Code's settings files; a project's
    left out where the user did not trust them) and one warning per file that could not be
    read."""
    # MINIMAL LOCAL IMPLEMENTATION (branch hooks, to test the runner): only ``config.hooks``,
    # no Claude Code settings files, no trust filtering; hooksrc's replaces it.
    hooks = HookSet()
    for event, items in config.hooks.items():
        hooks.by_event[event] = [
            HookMatcher(
                item.matcher,
                tuple(
                    HookCommand(h.command, h.timeout or DEFAULT_TIMEOUT, "etcode.json") for h in item.hooks
                ),
            )
            for item in items
        ]
    return hooks, []
