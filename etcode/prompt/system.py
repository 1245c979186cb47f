"""The system prompt: provider (or agent) layer, instruction layer, the user's instructions,
environment layer.

``SystemPrompt.build(agent, model, instructions)`` assembles the parts in that order and
then lets ``system.prompt.transform`` hooks edit them. The user's instructions (the Python
API's ``system_prompt``, a custom agent's prompt) are the system text's last section, after
the project's instruction files and the skills, as in the agent-loop design's template;
:func:`build_system_prompt` is that template on its own. The environment part (working
directory, date) is the one that changes per folder and day: it is not sent as system text
but joined to the first user message of each request (:func:`split_environment`), so the
system text and the tools, sent before it, are the same cached prefix everywhere. Nothing here prints or reads
secrets; warnings go to the ``on_warning`` callback and the ``etcode.prompt`` logger.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from etcode.prompt import templates
from etcode.prompt.parts import PromptPart

if TYPE_CHECKING:  # pragma: no cover
    from etcode.prompt.instruction import InstructionPrompt

logger = logging.getLogger("etcode.prompt")
logger.addHandler(logging.NullHandler())

Family = Literal["anthropic", "openai", "gemini", "default"]

_CLAUDE = re.compile(r"(?<![a-z0-9])claude")
_GPT = re.compile(r"(?<![a-z0-9])(?:chat)?gpt(?:-|\d)")
_O_SERIES = re.compile(r"o[134](?:[-:]|$)")
_GEMINI = re.compile(r"(?<![a-z0-9])gemini")

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

DEFAULT_NAME = "etcode"


def model_family(model_id: str) -> Family:
    """Which base prompt suits ``model_id`` (with or without ``provider/`` prefixes).

    Claude ids → anthropic; ``gpt-``/``chatgpt-`` ids and the o-series (``o1``, ``o3-mini``,
    ``o4-mini``: only as the model name itself) → openai; Gemini ids → gemini; else default.
    """
    lowered = model_id.strip().lower()
    name = lowered.rsplit("/", 1)[-1]
    if _CLAUDE.search(lowered):
        return "anthropic"
    if _GPT.search(lowered) or _O_SERIES.match(name):
        return "openai"
    if _GEMINI.search(lowered):
        return "gemini"
    return "default"


def split_model_id(model_full_id: str) -> tuple[str | None, str]:
    """``"openrouter/anthropic/claude-sonnet-4"`` → ``("openrouter", "anthropic/claude-sonnet-4")``."""
    provider, sep, model = model_full_id.partition("/")
    return (provider, model) if sep and provider and model else (None, model_full_id)


def format_date(now: datetime) -> str:
    """``Sat Nov 21 2026`` (locale independent, like JavaScript's ``toDateString``)."""
    return f"{_DAYS[now.weekday()]} {_MONTHS[now.month - 1]} {now.day:02d} {now.year}"


def _named(template: str, name: str | None) -> str:
    """``template`` with its ``{{name}}`` slots filled (the assistant's name)."""
    return templates.render(template, {"name": name or DEFAULT_NAME})


def custom_base(name: str | None = None) -> str:
    """The ``system/custom_agent.txt`` template: what comes before a user's or custom agent's
    instructions (how etcode works, naming the assistant ``name``)."""
    return _named(templates.load("system/custom_agent.txt"), name)


def user_instructions(prompt: str) -> str:
    """A user's or custom agent's prompt as the system text's last section."""
    return templates.render(templates.load("system/user_instructions.txt"), {"prompt": prompt.strip()})


def wrap_custom_prompt(prompt: str, name: str | None = None) -> str:
    """A user's or custom agent's prompt inside the custom template, as one text (the two
    parts joined as a request joins system texts)."""
    return f"{custom_base(name)}\n\n{user_instructions(prompt)}"


def build_system_prompt(name: str = DEFAULT_NAME, user_prompt: str = "", *, model: str | None = None) -> str:
    """etcode's system text for an assistant called ``name`` with the user's instructions
    ``user_prompt`` as its last section (the agent-loop design's ``build_system_prompt``).
    Without instructions it is the base prompt of ``model``'s family (the default family's
    without a model). What a run adds is not here: the project's instruction files and
    skills (before the user's section) and the environment (in the first user message)."""
    if user_prompt.strip():
        return wrap_custom_prompt(user_prompt, name)
    return SystemPrompt.provider(model or "", name).text


class PromptedAgent(Protocol):
    """What the agent layer reads of an agent (``agent.registry.AgentInfo``)."""

    @property
    def prompt(self) -> str | None: ...

    @property
    def source(self) -> str | None: ...

    @property
    def prompt_builtin(self) -> bool: ...


class SystemPrompt:
    """Builders of the system prompt layers (all static)."""

    @staticmethod
    def provider(model_id: str, name: str | None = None) -> PromptPart:
        """The provider layer: the base prompt for ``model_id``'s model family, naming the
        assistant ``name`` (default ``etcode``)."""
        source = f"provider/{model_family(model_id)}.txt"
        return PromptPart("provider", source, _named(templates.load(source), name))

    @staticmethod
    def lean_provider(name: str | None = None) -> PromptPart:
        """The lean provider layer for small windows: one short prompt for every model family."""
        source = "provider/lean.txt"
        return PromptPart("provider", source, _named(templates.load(source), name))

    @staticmethod
    def environment(
        model_full_id: str,
        directory: str | Path,
        is_git: bool,
        now: datetime | None = None,
        platform: str | None = None,
    ) -> PromptPart:
        """The environment layer: model, working directory, git, platform and date."""
        provider, model = split_model_id(model_full_id)
        exact = f"{provider}/{model}" if provider else model
        lines = [
            f"You are powered by the model named {model}. The exact model ID is {exact}.",
            "Here is useful information about the environment you are running in:",
            "<env>",
            f"  Working directory: {Path(directory).resolve()}",
            f"  Is directory a git repo: {'yes' if is_git else 'no'}",
            f"  Platform: {platform or sys.platform}",
            f"  Today's date: {format_date(now or datetime.now())}",
            "</env>",
        ]
        return PromptPart("environment", None, "\n".join(lines))

    @staticmethod
    def agent(agent: PromptedAgent, name: str | None = None) -> PromptPart | None:
        """The agent layer for ``agent`` (an ``AgentInfo``), or None when it has no prompt.

        A built-in prompt is used as it is; for any other it is the custom agent template
        (naming the assistant ``name``, default ``etcode``), the prompt itself being the
        user's section (:meth:`user`), the system text's last.
        """
        prompt = getattr(agent, "prompt", None)
        if not prompt:
            return None
        source = getattr(agent, "source", None)
        if getattr(agent, "prompt_builtin", False):
            return PromptPart("agent", source, _named(prompt, name))
        return SystemPrompt.custom(name)

    @staticmethod
    def custom(name: str | None = None) -> PromptPart:
        """The agent-layer part that comes before a user's or custom agent's prompt."""
        return PromptPart("agent", "system/custom_agent.txt", custom_base(name))

    @staticmethod
    def user(prompt: str, source: str | None = None) -> PromptPart:
        """The user's instructions (``system_prompt``, a custom agent's prompt from
        ``source``): the system text's last part."""
        return PromptPart("user", source, user_instructions(prompt))

    @staticmethod
    async def build(
        agent: PromptedAgent | None,
        model_full_id: str,
        instructions: InstructionPrompt,
        *,
        system_prompt: str | None = None,
        name: str | None = None,
        directory: str | Path | None = None,
        is_git: bool | None = None,
        now: datetime | None = None,
        transforms: Sequence[str] = (),
        on_warning: Callable[[str], None] | None = None,
        lean: bool = False,
        extra: Sequence[PromptPart] = (),
    ) -> list[PromptPart]:
        """Agent prompt (else provider prompt), instructions, extra, the user's instructions,
        environment; then the hooks.

        ``agent`` (an ``AgentInfo``) may be None. A ``system_prompt`` (the Python API's)
        wins over the agent's prompt and is placed like a custom agent's: the custom template
        (naming the assistant ``name``) first, the prompt itself last (:meth:`user`). ``directory`` (default: the instructions') and ``is_git``
        (default: whether the worktree holds ``.git``) feed the environment part.
        ``transforms``: config-listed ``"module:function"`` hooks, run after the
        entry-point ones. Hook warnings are added to ``instructions.warnings``; the
        warnings not yet reported are passed to ``on_warning``. Nothing here is fatal.
        ``lean``: the short provider prompt (:meth:`lean_provider`) instead of the family's,
        for small windows; an agent's own prompt is kept either way. ``extra``: parts put
        after the instructions, before the user's instructions (the list of skills). The
        environment part comes last: :func:`split_environment` takes it out of the system text.
        """
        from etcode.prompt.hooks import apply_transforms

        user = _user_part(agent, system_prompt)
        if user is not None:
            first: PromptPart | None = SystemPrompt.custom(name)
        else:
            first = SystemPrompt.agent(agent, name) if agent is not None else None
        if first is None:
            first = SystemPrompt.lean_provider(name) if lean else SystemPrompt.provider(model_full_id, name)
        parts = [first]
        git = is_git if is_git is not None else (instructions.worktree / ".git").exists()
        where = directory if directory is not None else instructions.directory
        parts.extend(await instructions.system())
        parts.extend(extra)
        if user is not None:
            parts.append(user)
        parts.append(SystemPrompt.environment(model_full_id, where, git, now))
        parts, hook_warnings = await apply_transforms(parts, transforms)
        instructions.warnings.extend(hook_warnings)
        for message in instructions.take_warnings():
            logger.warning("%s", message)
            if on_warning is not None:
                on_warning(message)
        return parts

    @staticmethod
    def texts(parts: Sequence[PromptPart]) -> list[str]:
        """The part texts, as the provider request's system blocks."""
        return [part.text for part in parts]


def _user_part(agent: PromptedAgent | None, system_prompt: str | None) -> PromptPart | None:
    """The user's instructions: ``system_prompt``, else a custom (not built-in) agent's prompt."""
    if system_prompt and system_prompt.strip():
        return SystemPrompt.user(system_prompt)
    prompt = getattr(agent, "prompt", None) if agent is not None else None
    if prompt and not getattr(agent, "prompt_builtin", False):
        return SystemPrompt.user(prompt, getattr(agent, "source", None))
    return None


def split_environment(parts: Sequence[PromptPart]) -> tuple[list[str], str | None]:
    """The system texts without the environment layer, and that layer's text (None when
    there is none). The environment changes per folder and day: sent in the first user
    message (``etcode.engine.environment``), it leaves the system text and the tools a
    prefix a server's prompt cache serves in every folder."""
    system = [part.text for part in parts if part.layer != "environment"]
    env = "\n\n".join(part.text for part in parts if part.layer == "environment" and part.text.strip())
    return system, env or None
