"""How a session's Bash commands are confined: the ``--sandbox`` flag, the config's
``sandbox`` and the agent's own, and what a project file may not loosen."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.agent.registry import AgentInfo
    from etcode.config.schema import Config
    from etcode.security.sandbox import SandboxPolicy


async def sandbox_policy(
    config: Config, agent_name: str, agent_info: AgentInfo, worktree: Path, warnings: list[str]
) -> SandboxPolicy:
    """The sandbox of this session's commands: the ``--sandbox`` flag wins; otherwise the
    stricter of the config's and the agent's. A mode the user asked for that cannot be had
    here is an error; a built-in agent's default (plan: read-only) only warns, and its
    commands are then allowed only when plain (``SandboxPolicy.plain_commands_only``)."""
    from etcode.config.loader import FLAGS_SOURCE
    from etcode.security.sandbox import (
        STRICTNESS,
        SandboxPolicy,
        SandboxUnavailable,
        as_mode,
        config_dir_paths,
        stricter,
        unavailable_reason,
    )

    configured = config.sandbox
    config_mode = configured.mode if configured is not None else None
    agent_mode = _unloosened(agent_name, agent_info.sandbox, agent_info.sandbox_source, worktree, warnings)
    from_flag = config.origin("sandbox") == FLAGS_SOURCE
    mode = (config_mode if from_flag else stricter(config_mode, agent_mode)) or "off"
    if mode == "off":
        return SandboxPolicy()
    required = (config_mode is not None and STRICTNESS[config_mode] >= STRICTNESS[mode]) or (
        agent_info.sandbox_source != "builtin"
    )
    problem = await asyncio.to_thread(unavailable_reason)
    if problem is not None:
        if required:
            raise SandboxUnavailable(f"sandbox: {problem}")
        warnings.append(
            f"the {agent_name} agent runs commands without its {mode} sandbox: {problem}; "
            "only plain command lines run without a question"
        )
        return SandboxPolicy(plain_commands_only=True)
    writable = tuple(Path(p).expanduser() for p in configured.writable) if configured is not None else ()
    network = bool(configured.network) if configured is not None else False
    from etcode.security.seccomp import unsupported_machine

    if unsupported_machine():
        warnings.append(f"the sandbox cannot block unix sockets on this machine ({unsupported_machine()})")
    sockets = (
        tuple(Path(p).expanduser() for p in configured.allow_unix_sockets) if configured is not None else ()
    )
    return SandboxPolicy(as_mode(mode), network, writable, required, config_dir_paths(), sockets)


def _unloosened(
    agent_name: str, mode: str | None, source: str | None, worktree: Path, warnings: list[str]
) -> str | None:
    """A built-in agent's sandbox (plan, explore: read-only) loosened by an agent file in
    the project (``.etcode/agent/<name>.md``) stays as it was: a cloned repository must not
    take a read-only agent out of its sandbox. (The config's ``agent`` key goes through
    project trust; the user's global agent files may loosen it.)"""
    from etcode.agent.registry import builtin_agents
    from etcode.security.sandbox import STRICTNESS

    builtin = builtin_agents().get(agent_name)
    default = builtin.sandbox if builtin is not None else None
    if not default or mode is None or STRICTNESS.get(mode, 0) >= STRICTNESS[default]:
        return mode
    if source and source.endswith(".md") and Path(source).resolve().is_relative_to(worktree.resolve()):
        warnings.append(
            f"{source}: a project file cannot take the {agent_name} agent out of its {default} sandbox"
        )
        return default
    return mode
