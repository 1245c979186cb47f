"""Custom commands for the front ends (``etcode run``, the chat, ``etcode acp``): the
commands in force for a folder, with the chat's built-in names reserved, and a typed
``/name args`` turned into the prompt to send (``extensions/commands.py``,
``extensions/command_expansion.py``). Blocking: call from a worker thread in async code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.extensions.command_expansion import Expansion
    from etcode.extensions.commands import CommandSet


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
