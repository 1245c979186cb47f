"""Custom commands for the front ends (``etcode run``, the chat, ``etcode acp``): the
commands in force for a folder, with the chat's built-in names reserved, and a typed
``/name args`` turned into the prompt to send (``extensions/commands.py``,
``extensions/command_expansion.py``). Blocking: call from a worker thread in async code."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.extensions.command_expansion import Expansion
    from etcode.extensions.commands import CommandSet, CustomCommand
    from etcode.ui.tui.commands import SlashCommand


def reserved_names() -> list[str]:
    """The chat's own commands and aliases: in the chat, a command file cannot take them
    (``etcode run`` and ACP have no commands of their own but etcode's, such as ``/init``)."""
    from etcode.ui.tui.commands import ALIASES, COMMANDS

    return [command.name for command in COMMANDS] + list(ALIASES)


def commands_for(directory: Path, trusted: bool = False, *, chat: bool = False) -> CommandSet:
    """Every custom command in force in ``directory`` (its project and the user's); in the
    ``chat``, its own command names are reserved."""
    from etcode.extensions.commands import load_commands
    from etcode.instance import describe

    info = describe(directory)
    reserved = reserved_names() if chat else []
    return load_commands(info.directory, info.worktree, reserved=reserved, trusted=trusted)


def expand_text(
    text: str,
    commands: CommandSet,
    directory: Path,
    trusted: bool = False,
    words: list[str] | None = None,
) -> Expansion | None:
    """The expansion of ``text`` when it is ``/name args`` for a defined command, else None
    (any other text starting with ``/`` is a message). ``words``: the arguments as the shell
    split them (``etcode run``)."""
    from etcode.extensions.commands import command_head

    head = command_head(text)
    command = commands.get(head[0]) if head else None
    if head is None or command is None:
        return None
    from etcode.extensions.command_expansion import expand
    from etcode.instance import describe

    worktree = Path(describe(directory).worktree)
    return expand(command, head[1], directory, worktree, trusted=trusted, words=words)


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
            self.commands = await asyncio.to_thread(commands_for, self.directory, self.trusted(), chat=True)
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


@dataclass
class TurnChoice:
    """The agent and model a command's turn runs with (None: the session's), and the lines
    telling the user (``notes``: what it switched to; ``warnings``: a switch refused)."""

    agent: str | None = None
    model: str | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def turn_choice(
    command: CustomCommand,
    config: Config,
    directory: Path,
    *,
    current_agent: str,
    agent_chosen: bool,
    model_chosen: bool,
) -> TurnChoice:
    """What a command's ``agent:`` and ``model:`` change for its turn. The user's own choice
    wins (``agent_chosen``: ``--agent``, ``/agent``, Ctrl+N, the editor's mode or
    ``default_agent``; ``model_chosen``: ``--model`` or ``/model``). A project command may
    not switch an agent that cannot write files to one that can unless the project is
    trusted (a warning, and ``current_agent`` runs). A bad setting is a :class:`ConfigError`
    naming the command file. Blocking (reads agent files): a worker thread from async code."""
    from etcode.util.errors import ConfigError, EtcodeError

    choice = TurnChoice()
    if command.agent and not agent_chosen and command.agent != current_agent:
        from etcode.agent.registry import load_agents
        from etcode.instance import describe
        from etcode.prompt.project_files import TRUST_HINT
        from etcode.wiring.agent_access import cannot_write_files

        info = describe(directory)
        agents = load_agents(config.agent or {}, info.directory, info.worktree)
        wanted, current = agents.get(command.agent), agents.get(current_agent)
        if wanted is None:
            names = ", ".join(agents)
            raise ConfigError(f'{command.source}: agent: unknown agent "{command.agent}"; agents: {names}')
        if (
            command.project
            and not config.trusted
            and current is not None
            and cannot_write_files(current)
            and not cannot_write_files(wanted)
        ):
            choice.warnings.append(
                f"{command.source}: agent {command.agent} not used: a project command may not switch "
                f"{current_agent}, which cannot write files, to one that can ({TRUST_HINT}); "
                f"/{command.name} runs with {current_agent}"
            )
        else:
            choice.agent = command.agent
            choice.notes.append(f"/{command.name} runs with agent {command.agent}")
    if command.model and not model_chosen:
        from etcode.config.resolve import resolve_model

        try:
            resolve_model(config, command.model)
        except EtcodeError as err:
            raise ConfigError(f"{command.source}: model: {err}") from None
        choice.model = command.model
        choice.notes.append(f"/{command.name} runs with model {command.model}")
    return choice
