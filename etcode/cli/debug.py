"""``etcode debug ...``: look inside etcode without calling a model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import typer

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.instance import InstanceInfo
    from etcode.prompt.parts import PromptPart

debug_app = typer.Typer(help="Inspect what etcode would send, without calling a model.", no_args_is_help=True)

RULE_WIDTH = 72


class Window(TypedDict):
    """The model's window as ``--json`` prints it: tokens, and who said so."""

    context: int | None
    output: int | None
    source: str | None


class WindowChoice(TypedDict):
    """The window and the prompt it calls for (``lean`` for a small one)."""

    window: Window
    prompt: str


@debug_app.callback()
def _debug() -> None:
    """Inspect what etcode would send, without calling a model."""


@debug_app.command("prompt")
def prompt(
    model: str | None = typer.Option(None, "--model", "-m", help="provider/model to build the prompt for."),
    agent: str | None = typer.Option(None, "--agent", help="Agent whose prompt to show (default: build)."),
    as_json: bool = typer.Option(False, "--json", help='Print {"parts": [{"layer", "source", "text"}]}.'),
) -> None:
    """Print the assembled system prompt for the current directory."""
    import asyncio
    import json
    import sys

    from etcode.instance import Instance
    from etcode.util.errors import EtcodeError

    try:
        with Instance.provide(Path.cwd()) as info:
            parts, warnings, window = asyncio.run(_build(info, model, agent))
    except EtcodeError as err:  # one line and the error's exit code, as in the main CLI
        from etcode.security.redact import redact

        typer.echo(f"error: {redact(str(err))}", err=True)
        raise SystemExit(err.exit_code) from None
    for message in warnings:
        typer.echo(f"warning: {message}", err=True)
    if as_json:
        out = {"parts": [p.to_dict() for p in parts], **window}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        return
    for part in parts:
        # the environment block is sent at the start of the first user message, after the tools
        where = "sent in the first user message" if part.layer == "environment" else part.source
        typer.echo(_rule(part.layer, where))
        typer.echo(part.text.rstrip("\n"))
    context, source = window["window"]["context"], window["window"]["source"]
    size = f"{context:,} tokens ({source})" if context else "unknown"
    typer.echo(_rule(f"window: {size}", f"prompt: {window['prompt']}"))
    typer.echo("─" * RULE_WIDTH)


def _rule(layer: str, source: str | None) -> str:
    label = f"── {layer}" + (f" · {source} " if source else " ")
    return label + "─" * max(3, RULE_WIDTH - len(label))


def _load_config(directory: Path, worktree: Path, warnings: list[str]) -> Config | None:
    """The project's config without the settings of its files that are not trusted (their
    instruction URLs are not fetched, nor their linked files read: nothing the run would not
    do either), each named in ``warnings``; None when the loader is not available."""
    try:
        from etcode.config.loader import load_config
        from etcode.trust.project import exclusions, untrusted
    except ImportError:
        return None
    config = load_config(directory, worktree)
    found = untrusted(config)
    if not found:
        return config
    keys = ", ".join(dict.fromkeys(finding.key for finding in found))
    warnings.append(f"left out, not trusted: {keys} (`etcode run --trust` approves them)")
    return load_config(directory, worktree, without=exclusions(found))


async def _build(
    info: InstanceInfo, model: str | None, agent_name: str | None
) -> tuple[list[PromptPart], list[str], WindowChoice]:
    import os

    from etcode.agent import DEFAULT_AGENT, get_agent, load_agents
    from etcode.prompt.instruction import InstructionPrompt, rules_internal_check
    from etcode.prompt.system import SystemPrompt

    warnings: list[str] = []
    config = _load_config(info.directory, info.worktree, warnings)
    agents = load_agents(config.agent if config else {}, info.directory, info.worktree)
    chosen = get_agent(agent_name or (config.default_agent if config else None) or DEFAULT_AGENT, agents)
    model_id = (
        model
        or chosen.model
        or (config.model if config else None)
        or os.environ.get("ETCODE_MODEL")
        or "default"
    )
    instructions = InstructionPrompt(
        info.directory,
        info.worktree,
        instructions=config.instructions if config else [],
        compat=config.instructions_compat if config else True,
        trusted=config.trusted if config else False,
        internal_allowed=rules_internal_check(
            config.permission if config else None, config.permission_files if config else []
        ),
    )
    skills = await _skills(info, config, chosen.tool_enabled("Skill"), warnings)
    window = await _window(config, model_id)
    lean = window["prompt"] == "lean"
    listed = [skills[1] if lean else skills[0]] if skills else []
    parts = await SystemPrompt.build(
        chosen, model_id, instructions, is_git=info.is_git, on_warning=warnings.append, extra=listed
    )
    if lean and parts and parts[0].layer == "provider":
        parts[0] = SystemPrompt.lean_provider()
    return parts, warnings, window


async def _skills(
    info: InstanceInfo, config: Config | None, enabled: bool, warnings: list[str]
) -> list[PromptPart]:
    """The list of skills as the prompt has it, full then lean ([] with no skills, or when
    the agent turns the Skill tool off), as ``etcode run`` finds them."""
    if not enabled:
        return []
    import asyncio

    from etcode.extensions.skill_prompt import lean_skills_part, skills_part
    from etcode.extensions.skills import find_skills

    found = await asyncio.to_thread(find_skills, info.directory, info.worktree, config=config)
    warnings.extend(found.warnings)
    offered = found.for_model()
    return [skills_part(offered.skills), lean_skills_part(offered.skills)] if offered else []


async def _window(config: Config | None, model_id: str) -> WindowChoice:
    """``{"window": {"context", "output", "source"}, "prompt": "lean" | "full"}`` for the
    model: the catalog's limits, else what its server says (asked, or cached)."""
    from etcode.provider.catalog import ModelCatalog
    from etcode.provider.discovery import ask_all, server_kind
    from etcode.util.errors import EtcodeError
    from etcode.wiring.server_window import wants_lean

    mode = config.prompt if config else None
    provider_id, _, model = model_id.partition("/")
    if not model:
        unknown: Window = {"context": None, "output": None, "source": None}
        return {"window": unknown, "prompt": "lean" if wants_lean(mode, None) else "full"}
    from etcode.config.resolve import resolve_model

    spec = None
    if config is not None:
        try:
            spec = resolve_model(config, model_id)
        except EtcodeError:
            spec = None  # no key here, say: the catalog still knows the model
    catalog = ModelCatalog.load(config)
    entry = catalog.for_spec(spec) if spec is not None else catalog.get(provider_id, model)
    context, source = entry.context, ", ".join(entry.sources) or None
    if not context and spec is not None and server_kind(spec) is not None:
        [facts] = await ask_all([spec])
        if facts is not None and facts.context:
            context, source = facts.context, facts.label
    window: Window = {"context": context, "output": entry.output, "source": source if context else None}
    return {"window": window, "prompt": "lean" if wants_lean(mode, context) else "full"}
