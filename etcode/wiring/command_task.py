"""A task ``/name args`` given to the Python ``Agent`` that names a custom command
(``extensions/commands.py``): the command's prompt is what runs, as with ``etcode run``. The
front ends expand commands themselves (they also switch agent and model for the turn) and
make their ``Agent`` with ``commands=False``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.provider.types import ImagePart


@dataclass(frozen=True)
class CommandTask:
    """The prompt to run instead of the task, and one warning per command file left out,
    file not sent, or ``agent:``/``model:`` the ``Agent`` does not switch to; the images its
    mentions attach."""

    prompt: str
    warnings: list[str] = field(default_factory=list)
    images: list[ImagePart] = field(default_factory=list)


async def command_task(
    task: str, directory: Path, worktree: Path, *, trusted: bool, agent: str, model: str
) -> CommandTask | None:
    """``task`` as a custom command's prompt, None when it names none (any other text
    starting with ``/`` is a message). ``agent``/``model``: what the ``Agent`` runs with."""
    from etcode.extensions.commands import command_head

    if command_head(task) is None:
        return None
    return await asyncio.to_thread(_expand, task, directory, worktree, trusted, agent, model)


def _expand(
    task: str, directory: Path, worktree: Path, trusted: bool, agent: str, model: str
) -> CommandTask | None:
    from etcode.extensions.command_expansion import expand
    from etcode.extensions.commands import command_head, load_commands

    head = command_head(task)
    commands = load_commands(directory, worktree, trusted=trusted)
    command = commands.get(head[0]) if head is not None else None
    if head is None or command is None:
        return None
    expansion = expand(command, head[1], directory, worktree, trusted=trusted)
    warnings = [*commands.warnings, *expansion.warnings]
    if command.agent and command.agent != agent:
        warnings.append(
            f"{command.source}: /{command.name} runs with this Agent's agent {agent}, not {command.agent}"
        )
    if command.model and command.model not in (model, model.partition("/")[2]):
        warnings.append(
            f"{command.source}: /{command.name} runs with this Agent's model {model}, not {command.model}"
        )
    return CommandTask(expansion.prompt, warnings, expansion.images)
