"""The hooks in force for a project: read from ``etcode.json``'s ``"hooks"`` (every layer) and
from Claude Code's settings files (``.claude/settings.json``, ``.claude/settings.local.json``,
``~/.claude/settings.json``), and which of them an event matches.

This is the contract between where hooks come from and where they run
(``extensions/hook_runner.py``, ``extensions/hook_interceptor.py``).

Where they come from: the config's layers (``Config.hook_layers``: each ``etcode.json``, the
user's and the project's) and the settings files the config loader read beside them
(``config/claude_settings.py``, kind "settings" in ``Config.files``), the user's first. A
project's hooks need the user's trust (``trust/project.py`` finds each command; those not
trusted are left out of the config as loaded, ``load_config(without=...)``, so they are not
here). ``disableAllHooks: true`` in the user's settings file turns every hook off; in a
project's, the project's hooks. A file or entry that cannot be used is one warning naming
the file and key; the rest still loads.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.util.json_types import JsonValue

if TYPE_CHECKING:
    from etcode.config.raw import Loc
    from etcode.config.schema import Config, HookEventName

#: Every event etcode runs hooks for (``config/schema.HookEventName``; Claude Code's names).
EVENTS = (
    "PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart", "SessionEnd",
    "PreCompact", "Notification",
)  # fmt: skip
#: The events whose matcher names a tool (the others match a source or trigger, or all).
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
#: The events that run every hook whatever its matcher says (Claude Code ignores it there).
NO_MATCHER = ("UserPromptSubmit", "Stop")
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
    #: Claude Code's name of a tool etcode names otherwise, beyond :data:`CLAUDE_TOOL_NAMES`
    #: (an MCP tool ``<server>_<tool>`` is ``mcp__<server>__<tool>``): set by whoever knows
    #: the session's tools.
    alias: Callable[[str], str | None] | None = None

    def __bool__(self) -> bool:
        return any(self.by_event.values())

    def commands_for(self, event: HookEventName, subject: str | None = None) -> list[HookCommand]:
        """The commands ``event`` runs for ``subject`` (a tool name for the tool events, the
        source or trigger for SessionStart/PreCompact, None for the others), each once."""
        if subject is None:
            names: tuple[str, ...] = ()
        else:
            names = self.tool_names(subject) if event in TOOL_EVENTS else (subject,)
        found: dict[str, HookCommand] = {}  # Claude Code runs an identical command line once
        for matcher in self.by_event.get(event, []):
            if subject is None or matches(matcher.matcher, names):
                for command in matcher.commands:
                    found.setdefault(command.command, command)
        return list(found.values())

    def tool_names(self, name: str) -> tuple[str, ...]:
        """The names a tool answers to in a matcher: etcode's and Claude Code's."""
        return tool_names(name, self.alias(name) if self.alias is not None else None)

    def claude_name(self, name: str) -> str:
        """A tool's name as Claude Code's hooks know it (``WriteFile`` → ``Write``, an MCP
        tool ``mcp__<server>__<tool>``)."""
        return self.tool_names(name)[-1]


def project_dir(command: HookCommand, worktree: Path) -> Path:
    """``$CLAUDE_PROJECT_DIR`` for ``command``: for a project's settings file, the folder
    holding its ``.claude`` folder (where Claude Code would have been started to read it, so
    ``"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`` finds its script); else the worktree (the
    user's own hooks act on the project at hand)."""
    source = Path(command.source) if command.source else None
    if command.project and source is not None and source.parent.name == ".claude":
        return source.parent.parent
    return worktree


def tool_names(name: str, alias: str | None = None) -> tuple[str, ...]:
    """The names a tool answers to in a matcher: etcode's and Claude Code's (``WriteFile``,
    ``Write``; ``alias`` when given), Claude Code's last."""
    alias = alias or CLAUDE_TOOL_NAMES.get(name)
    return (name, alias) if alias and alias != name else (name,)


#: A matcher of only these characters lists exact names (``Write|Edit``); any other is a regex.
_NAME_LIST = re.compile(r"[A-Za-z0-9_\- |]+")


@functools.lru_cache(maxsize=256)
def _pattern(matcher: str) -> re.Pattern[str] | None:
    try:
        return re.compile(matcher)
    except (re.error, RecursionError, OverflowError):
        return None


def matcher_problem(matcher: str) -> str | None:
    """Why ``matcher`` can never match (an invalid regular expression), or None."""
    if matcher in ("", "*") or _NAME_LIST.fullmatch(matcher):
        return None
    try:
        re.compile(matcher)
    except re.error as err:
        return f"not a valid regular expression ({err})"
    except (RecursionError, OverflowError):
        return "not a valid regular expression (too complex)"
    return None


def matches(matcher: str, names: tuple[str, ...]) -> bool:
    """Whether a Claude Code matcher names one of ``names``: ``""``/``"*"`` all; a name or
    ``A|B`` names exactly; anything else as a regular expression (searched)."""
    if matcher in ("", "*"):
        return True
    if _NAME_LIST.fullmatch(matcher):
        wanted = {part.strip() for part in matcher.split("|")}
        return any(name in wanted for name in names)
    pattern = _pattern(matcher)
    return pattern is not None and any(pattern.search(name) for name in names)


# ---- reading the ``hooks`` shape -------------------------------------------------------


@dataclass(frozen=True)
class FoundHook:
    """One hook entry with a command line, as written (``walk_hooks``); the trust check
    asks about each, ``load_hooks`` runs those whose other fields are usable."""

    #: Its place: ``("hooks", "PreToolUse", 0, "hooks", 1)`` (what is left out untrusted).
    loc: Loc
    event: str
    #: The index of its matcher group in the event's list.
    group: int
    matcher: JsonValue
    command: str
    type: JsonValue
    timeout: JsonValue


def walk_hooks(value: JsonValue) -> tuple[list[FoundHook], list[str]]:
    """Every hook entry with a command line in a ``hooks`` value of Claude Code's shape
    (``{event: [{"matcher": ..., "hooks": [{"type": "command", "command": ...}]}]}``), and
    what does not have that shape (``hooks.SubagentStop: ...``), for a warning."""
    if value is None:
        return [], []
    if not isinstance(value, dict):
        return [], [f"hooks: expected an object of events, got {_kind(value)}"]
    found: list[FoundHook] = []
    problems: list[str] = []
    for event, groups in value.items():
        if event not in EVENTS:
            if groups:
                problems.append(f"hooks.{event}: not an event etcode runs hooks for")
            continue
        if not isinstance(groups, list):
            problems.append(f"hooks.{event}: expected a list of matchers, got {_kind(groups)}")
            continue
        for index, group in enumerate(groups):
            place = f"hooks.{event}[{index}]"
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                what = "an object with a list of hooks" if isinstance(group, dict) else "an object"
                problems.append(f"{place}: expected {what}")
                continue
            for number, entry in enumerate(entries):
                command = entry.get("command") if isinstance(entry, dict) else None
                if isinstance(command, str) and "\0" in command:  # no shell can be given it
                    problems.append(f"{place}.hooks[{number}].command: contains a NUL character")
                elif isinstance(entry, dict) and isinstance(command, str) and command.strip():
                    loc: Loc = ("hooks", event, index, "hooks", number)
                    hook = FoundHook(
                        loc,
                        event,
                        index,
                        group.get("matcher"),
                        command,
                        entry.get("type"),
                        entry.get("timeout"),
                    )
                    found.append(hook)
                elif isinstance(entry, dict) and entry.get("type", "command") != "command":
                    problems.append(
                        f'{place}.hooks[{number}]: type "{entry.get("type")}" is not run by etcode'
                    )
                else:
                    problems.append(f"{place}.hooks[{number}].command: expected a command line")
    return found, problems


def _kind(value: JsonValue) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else json.dumps(value)


def _command(hook: FoundHook, source: str, project: bool) -> tuple[HookCommand | None, str | None]:
    """The runnable command of ``hook``, or why it is left out (timeouts fall back to 60 s)."""
    place = f"hooks.{hook.event}[{hook.group}]"
    if hook.type not in (None, "command"):
        return None, f'{place}.hooks[{hook.loc[-1]}]: type "{hook.type}" is not run by etcode'
    if hook.matcher is not None and not isinstance(hook.matcher, str):
        return None, f"{place}.matcher: expected a string"
    problem = None if hook.event in NO_MATCHER else matcher_problem(hook.matcher or "")
    if problem:
        return None, f'{place}.matcher: "{hook.matcher}" is {problem}'
    timeout = hook.timeout
    if timeout is None:
        return HookCommand(hook.command, DEFAULT_TIMEOUT, source, project), None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < 1e9:
        found = HookCommand(hook.command, DEFAULT_TIMEOUT, source, project)
        return found, f"{place}.hooks[{hook.loc[-1]}].timeout: expected seconds, got {timeout!r} (60 used)"
    return HookCommand(hook.command, float(timeout), source, project), None


# ---- the hooks in force -----------------------------------------------------------------


def _sources(config: Config) -> Iterable[tuple[str, bool, JsonValue, str]]:
    """``(source, project, hooks, problem)`` of every layer and settings file, in order."""
    layers = config.hook_layers
    if not layers and config.hooks:  # a Config built by hand: what it holds is the caller's
        dumped = config.model_dump(by_alias=True, exclude_unset=True, include={"hooks"})
        layers = [("configuration", False, dumped.get("hooks"))]
    for source, project, value in layers:
        yield source, project, value, ""
    for file in config.files:
        if file.kind == "settings":
            yield str(file.path), file.project, file.raw.get("hooks"), file.problem


def _disabled(config: Config, warnings: list[str]) -> tuple[bool, bool]:
    """``disableAllHooks: true`` in the user's settings file, in a project's."""
    user = project = False
    for file in config.files:
        flag = file.raw.get("disableAllHooks") if file.kind == "settings" else None
        if flag is True:
            user, project = (user, True) if file.project else (True, project)
        elif flag not in (None, False):
            warnings.append(f"{file.path}: disableAllHooks: expected true or false, got {flag!r}")
    return user, project


def load_hooks(config: Config, directory: Path, worktree: Path) -> tuple[HookSet, list[str]]:
    """The hooks in force (``config.hooks`` and Claude Code's settings files; a project's
    left out where the user did not trust them) and one warning per file that could not be
    read.

    The files are the ones ``config`` was loaded from (``load_config(directory, worktree)``,
    which reads the settings files beside ``etcode.json``); a ``Config`` built otherwise
    holds only its own ``hooks``."""
    warnings: list[str] = []
    user_off, project_off = _disabled(config, warnings)
    hooks = HookSet()
    if user_off:
        return hooks, warnings
    ordered = sorted(_sources(config), key=lambda source: source[1])  # the user's first (stable)
    for source, project, value, problem in ordered:
        if problem:
            warnings.append(f"{problem}; its hooks are left out")
            continue
        if project and project_off:
            continue
        found, problems = walk_hooks(value)
        groups: dict[tuple[str, int], tuple[str, list[HookCommand]]] = {}
        for hook in found:
            command, why = _command(hook, source, project)
            if why:
                problems.append(why)
            if command is not None:
                matcher = hook.matcher if isinstance(hook.matcher, str) else ""
                groups.setdefault((hook.event, hook.group), (matcher, []))[1].append(command)
        for (event, _), (matcher, commands) in groups.items():
            hooks.by_event.setdefault(event, []).append(HookMatcher(matcher, tuple(commands)))
        if problems:
            warnings.append(f"{source}: {'; '.join(dict.fromkeys(problems))} (left out)")
    return hooks, warnings
