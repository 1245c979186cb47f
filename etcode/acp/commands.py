"""Custom commands in ACP: offered to the editor with ``available_commands_update`` (name,
description, the argument hint as unstructured input), and a prompt whose text is
``/name args`` for one of them run as that command (``ui/command_prompts.py``). A command
file left out is told as a thought, as etcode's other warnings are."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp.schema import (
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    UnstructuredCommandInput,
)

from etcode.acp.updates import updates_of
from etcode.contract.events import WarningEvent
from etcode.extensions.command_expansion import Expansion
from etcode.extensions.commands import CommandSet


async def load(directory: Path, trusted: bool) -> CommandSet:
    from etcode.ui.command_prompts import commands_for

    return await asyncio.to_thread(commands_for, directory, trusted)


def command_updates(
    commands: CommandSet, directory: Path
) -> list[AvailableCommandsUpdate | AgentThoughtChunk]:
    """The ``available_commands_update`` for ``commands``, after a thought per warning."""
    updates: list[AvailableCommandsUpdate | AgentThoughtChunk] = []
    for warning in commands.warnings:
        updates += [
            u for u in updates_of(WarningEvent(warning), directory) if isinstance(u, AgentThoughtChunk)
        ]
    offered = [
        AvailableCommand(
            name=command.name,
            description=command.description or f"/{command.name}",
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=command.argument_hint))
            if command.argument_hint
            else None,
        )
        for command in commands.all()
    ]
    updates.append(
        AvailableCommandsUpdate(session_update="available_commands_update", available_commands=offered)
    )
    return updates


def notices(warnings: list[str], notes: list[str], directory: Path) -> list[AgentThoughtChunk]:
    """A command's warnings (a file not sent, an agent not switched) and what it switched
    to (its agent, its model), as thoughts: ``[etcode] warning: …``."""
    lines = [f"warning: {warning}" for warning in warnings] + notes
    return [
        update
        for line in lines
        for update in updates_of(WarningEvent(line), directory)
        if isinstance(update, AgentThoughtChunk)
    ]


async def expand(text: str, directory: Path, trusted: bool) -> Expansion | None:
    """``text`` as a custom command's prompt, None when it names none (a message)."""
    from etcode.ui.command_prompts import expand_text

    commands = await load(directory, trusted)
    return await asyncio.to_thread(expand_text, text, commands, directory, trusted)
