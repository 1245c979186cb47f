"""Custom commands for the front ends (``etcode run``, the chat, ``etcode acp``): the
commands in force for a folder, with the chat's built-in names reserved, and a typed
``/name args`` turned into the prompt to send (``extensions/commands.py``,
``extensions/command_expansion.py``). Blocking: call from a worker thread in async code."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.extensions.command_expansion import Expansion
    from etcode.extensions.commands import CommandSet, CustomCommand
    from etcode.ui.tui.commands import SlashCommand


def reserved_names() -> list[str]:
    """The chat's own commands and aliases: a command file cannot take them."""
    from etcode.ui.tui.commands import ALIASES, COMMANDS

    return [command.name for command in COMMANDS] + list(ALIASES)


def commands_for(directory: Path, trusted: bool = False) -> CommandSet:
    """Every custom command in force in ``directory`` (its project and the user's)."""
    from etcode.extensions.commands import load_commands
    from etcode.instance import describe

    info = describe(directory)
    return load_commands(info.directory, info.worktree, reserved=reserved_names(), trusted=trusted)


def expand_text(text: str, commands: CommandSet, directory: Path, trusted: bool = False) -> Expansion | None:
    """The expansion of ``text`` when it is ``/name args`` for a defined command, else None
    (any other text starting with ``/`` is a message). :class:`UsageError` for a file the
    command includes that is missing."""
    from etcode.extensions.commands import command_head

    head = command_head(text)
    command = commands.get(head[0]) if head else None
    if head is None or command is None:
        return None
    from etcode.extensions.command_expansion import expand
    from etcode.instance import describe

    return expand(command, head[1], directory, Path(describe(directory).worktree), trusted=trusted)


#: Seconds the chat reuses a reading of the command folders (a file added since is offered).
MAX_AGE = 5.0


class CommandIndex:
    """The chat's custom commands: read in a worker thread on first use and again when
    older than ``max_age`` seconds; each warning is handed out once (:meth:`new_warnings`)."""

    def __init__(self, directory: Path, trusted: Callable[[], bool], max_age: float = MAX_AGE) -> None:
        self.directory = directory
        self.trusted = trusted
        self.max_age = max_age
        self.commands: CommandSet | None = None
        self.slash: list[SlashCommand] = []
        self._loaded_at = -math.inf
        self._told: set[str] = set()

    async def load(self) -> CommandSet:
        if self.commands is None or time.monotonic() - self._loaded_at > self.max_age:
            self.commands = await asyncio.to_thread(commands_for, self.directory, self.trusted())
            self.slash = [as_slash(command) for command in self.commands.all()]
            self._loaded_at = time.monotonic()
        return self.commands

    def new_warnings(self) -> list[str]:
        """The warnings of the last reading not handed out before."""
        fresh = [w for w in (self.commands.warnings if self.commands else []) if w not in self._told]
        self._told.update(fresh)
        return fresh


def as_slash(command: CustomCommand) -> SlashCommand:
    """A custom command as a row of the chat's completion and ``/help``."""
    from etcode.ui.tui.commands import SlashCommand

    return SlashCommand(command.name, command.description, command.argument_hint, custom=True)
