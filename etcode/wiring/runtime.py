"""Turns an agent's settings into a ready world: config, model, provider, agent
definition, tools, system prompt and permissions. Built once per Agent, on first use."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Unpack

from etcode.contract.events import Event, WarningEvent
from etcode.engine.limits import LoopLimits
from etcode.instance import Instance, InstanceInfo, describe
from etcode.provider.spec import ProviderSpec, RetryConfig, hosted
from etcode.tools.registry import ToolRegistry, builtin_tools
from etcode.util.json_types import JsonObject
from etcode.wiring.run_limits import run_limits
from etcode.wiring.sandbox_choice import sandbox_policy

if TYPE_CHECKING:
    from etcode.agent.registry import AgentInfo
    from etcode.config.schema import Config
    from etcode.engine.images import ImageSupport
    from etcode.extensions.skills import SkillSet
    from etcode.mcp.manager import McpManager
    from etcode.permission.rules import Ruleset
    from etcode.permission.service import Asker, PermissionService
    from etcode.prompt.instruction import InstructionPrompt
    from etcode.provider.base import Provider
    from etcode.provider.catalog import ModelCatalog
    from etcode.provider.discovery import ServerProbe
    from etcode.security.sandbox import SandboxPolicy
    from etcode.util.turns import Turn
    from etcode.wiring.settings import AgentSettings, ChildAgent, ChildSettings


class ChildFactory(Protocol):
    """Builds a ready child agent from ``Agent`` keywords: its runtime is built from (and
    borrows the MCP servers of) ``parent``; it records the session that started it and is
    stored beside it. The public ``Agent``'s own ``make_child`` is one."""

    async def __call__(self, parent: Runtime, **settings: Unpack[ChildSettings]) -> ChildAgent: ...


@dataclass
class Runtime:
    instance: InstanceInfo
    config: Config
    spec: ProviderSpec
    provider: Provider
    agent_name: str
    agent_info: AgentInfo
    tools: ToolRegistry
    system: list[str]
    limits: LoopLimits
    permission: PermissionService
    instructions: InstructionPrompt
    owns_provider: bool
    warnings: list[str] = field(default_factory=list)
    #: The session's MCP servers, None when none is configured.
    mcp: McpManager | None = None
    #: False for a subagent's runtime, which borrows its parent's MCP servers.
    owns_mcp: bool = True
    #: 0 for a top-level session, parent depth + 1 for a Task subagent.
    depth: int = 0
    #: How Bash commands are confined (None: not at all).
    sandbox: SandboxPolicy | None = None
    #: The model catalog (limits, prices) the session's context window is built from.
    catalog: ModelCatalog | None = None
    #: Asks the model server for its window, None when not needed.
    probe: ServerProbe | None = None
    #: The system prompt with the lean provider layer (None: the same as ``system``).
    lean_system: list[str] | None = None
    #: The system prompt as assembled (``system`` is this or ``lean_system``).
    full_system: list[str] = field(default_factory=list)
    #: The environment block (working directory, date), sent in the first user message.
    environment: str | None = None
    #: Extra request-body fields (the ``Agent``'s model keywords: ``top_p``, ``seed``…).
    extra: JsonObject = field(default_factory=dict)
    #: Builds the Task tool's child agents (None: this runtime starts no subagents).
    make_child: ChildFactory | None = None
    #: The skills (None: none, or the agent turns the Skill tool off); the model is offered
    #: those it may load (``SkillSet.for_model``), ``/skills`` all of them.
    skills: SkillSet | None = None
    #: Whether the model takes images (the catalog's word, the server's, or a refusal's).
    images: ImageSupport | None = None
    #: The last write to the server cache begun off the event loop (``keep_later``).
    _cache_write: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def directory(self) -> Path:
        return self.instance.directory

    def use_lean(self, lean: bool) -> None:
        """Show the model the lean prompt and tool descriptions (a small window), or not."""
        if not self.full_system:
            self.full_system = list(self.system)
        self.tools.lean = lean
        self.system = list(self.lean_system or self.full_system) if lean else list(self.full_system)

    def remember_window(self, context: int) -> None:
        """A window the server stated in an overflow error, kept for the next run."""
        from etcode.provider.discovery import correct_window, server_kind

        if server_kind(self.spec) is not None:
            spec = self.spec
            self.keep_later(lambda: correct_window(spec, context))

    def keep_later(self, write: Callable[[], None]) -> None:
        """Run ``write`` (a write to the server cache, ``servers.json``) in a thread, never
        on the event loop: one after the other, the last awaited by :meth:`aclose`. Without
        a running loop (no session going) it runs now."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            write()
            return
        previous = self._cache_write

        async def in_turn() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            await asyncio.to_thread(write)

        self._cache_write = loop.create_task(in_turn())

    def take_warnings(self) -> list[Event]:
        items: list[Event] = [WarningEvent(w) for w in self.warnings]
        self.warnings = []
        return items

    async def aclose(self) -> None:
        if self._cache_write is not None:  # a short file write: finished, not cut
            write, self._cache_write = self._cache_write, None
            await asyncio.gather(write, return_exceptions=True)
        if self.probe is not None:
            probe, self.probe = self.probe, None
            await probe.aclose()
        if self.owns_provider:
            await self.provider.aclose()
        if self.mcp is not None and self.owns_mcp:
            mcp, self.mcp = self.mcp, None
            await mcp.aclose()

    # ---- building ----------------------------------------------------------------
    @classmethod
    async def create(
        cls, agent: AgentSettings, *, parent: Runtime | None = None, make_child: ChildFactory | None = None
    ) -> Runtime:
        """Build the world for ``agent``. A ``parent`` (a Task subagent's) lends its MCP
        servers instead of starting them again; ``make_child`` builds Task subagents
        (a child gets its parent's)."""
        instance = _instance_for(agent.directory)
        config = agent.config if agent.config is not None else _load_config(instance)
        if parent is None:  # a Task subagent's config passed its parent's check
            await asyncio.to_thread(_check_trust, config, agent.trust)
        mcp = _mcp_manager(config, instance, parent)
        # MCP servers start first, in the background: their time limit runs while the rest is built.
        mcp_start = asyncio.ensure_future(mcp.start()) if mcp is not None and parent is None else None
        if mcp_start is not None:
            await asyncio.sleep(0)  # let it begin (its SDK import runs in a worker thread)
        try:
            runtime = await cls._build(agent, parent, instance, config, mcp, mcp_start)
        except BaseException:
            if mcp_start is not None and mcp is not None:
                mcp_start.cancel()
                await asyncio.shield(mcp.aclose())
            raise
        runtime.make_child = make_child or (parent.make_child if parent is not None else None)
        return runtime

    @classmethod
    async def _build(
        cls,
        agent: AgentSettings,
        parent: Runtime | None,
        instance: InstanceInfo,
        config: Config,
        mcp: McpManager | None,
        mcp_start: asyncio.Future[None] | None,
    ) -> Runtime:
        agent_name = agent.agent_name or config.default_agent or "build"
        agent_info = _agent_info(agent_name, config, instance)
        spec = _resolve_spec(agent, config, agent_info)
        _learn_secrets(config, spec)
        # The values of the project's secret files, read while the rest is built (a child's
        # parent has them already); known before any tool runs.
        file_secrets = (
            asyncio.ensure_future(
                asyncio.to_thread(_learn_file_secrets, instance.worktree, config.secret_files)
            )
            if parent is None
            else None
        )
        retry = agent.retry or _retry_config(config)
        owns_provider = agent.provider is None
        if agent.provider is not None:
            provider = agent.provider
        else:
            from etcode.provider.factory import make_provider

            provider = make_provider(spec, retry)
        catalog, probe = _catalog_and_probe(config, spec)
        try:
            extra, unsent = _request_extra(agent, spec, config, catalog)
            tools = _tools_for(agent, agent_info)
            warnings: list[str] = [] if parent is not None else _claude_agent_warnings(instance)
            if unsent is not None and (parent is None or parent.spec.full_id != spec.full_id):
                warnings.append(unsent)  # (a subagent of the parent's model: said already)
            instructions = _instruction_prompt(config, instance)
            skills = await _skills_for(agent, config, instance, agent_info, parent, warnings)
            if skills is not None:
                _add_skill_tool(tools, skills)
            system, lean_system, environment = await _system_prompt(
                agent, agent_info, spec, instance, instructions, warnings, config, skills
            )
            if mcp_start is not None:
                await mcp_start
            _add_mcp_tools(tools, mcp, agent_info, warnings, owned=parent is None)
            limits = agent.limits or run_limits(config, agent_info.steps, defaults=agent.limit_defaults)
            permission = _permission_service(
                config, agent_info, agent.asker, instance, _mcp_rules(tools, mcp), agent.question_turn
            )
            sandbox = await sandbox_policy(config, agent_name, agent_info, instance.worktree, warnings)
            if file_secrets is not None:
                await file_secrets
            runtime = cls(
                instance=instance,
                config=config,
                spec=spec,
                provider=provider,
                agent_name=agent_name,
                agent_info=agent_info,
                tools=tools,
                system=system,
                limits=limits,
                permission=permission,
                instructions=instructions,
                owns_provider=owns_provider,
                warnings=warnings,
                mcp=mcp,
                owns_mcp=parent is None,
                depth=parent.depth + 1 if parent is not None else 0,
                sandbox=sandbox,
                catalog=catalog,
                probe=probe,
                lean_system=lean_system,
                full_system=list(system),
                environment=environment,
                extra=extra,
                skills=skills,
                images=_image_support(catalog, spec, probe),
            )
            runtime.use_lean(config.prompt == "lean")
            return runtime
        except BaseException:
            if probe is not None:  # nothing is left running when the build fails
                await probe.aclose()
            raise


def _catalog_and_probe(config: Config, spec: ProviderSpec) -> tuple[ModelCatalog, ServerProbe | None]:
    """The model catalog, and a probe asking a local or self-hosted server for its window and
    tool support (begun now, so it runs while the prompt is assembled; ``server_window``
    applies its answer). Asked even when the catalog knows the window: the server also says
    whether its chat template can use tools."""
    from etcode.provider.catalog import ModelCatalog
    from etcode.provider.discovery import ServerProbe

    catalog = ModelCatalog.load(config)
    return catalog, ServerProbe.begin(spec)


def _image_support(catalog: ModelCatalog, spec: ProviderSpec, probe: ServerProbe | None) -> ImageSupport:
    """Whether the model takes images: the catalog's ``modalities.input``, else what its server
    said or refused before (kept with its facts), else unknown (tried). A refusal is kept for
    the next run (``discovery.refuse_images``)."""
    from etcode.engine.images import ImageSupport
    from etcode.provider import discovery

    takes = catalog.for_spec(spec).takes_images
    if takes is None and spec.base_url:
        facts = probe.ready() if probe is not None else discovery.cached(spec)[1]
        takes = facts.images if facts is not None else None

    def refused() -> None:
        if spec.base_url:
            discovery.refuse_images(spec)

    from etcode.engine.images import MAX_IMAGES

    return ImageSupport(spec.model, takes, refused, MAX_IMAGES.get(spec.type, MAX_IMAGES["openai"]))


def _learn_secrets(config: Config, spec: ProviderSpec) -> None:
    """Teach the redactor the keys in play (config and the resolved provider key): tool
    output holding one is redacted before the model or the session store sees it."""
    from etcode.security.redact import register_config, register_secrets

    register_config(config)
    register_secrets(spec.api_key)


def _learn_file_secrets(worktree: Path, listed: list[str]) -> None:
    """Teach the redactor the secret-looking values of the project's ``.env``/``.envrc``
    files and ``secret_files``: a command that prints one shows ``[REDACTED]``."""
    from etcode.security.redact import register_secrets
    from etcode.security.secret_values import project_secret_values

    register_secrets(*project_secret_values(worktree, listed))


def _instance_for(directory: Path | None) -> InstanceInfo:
    current = Instance.maybe()
    if directory is None:
        return current or describe(Path.cwd())
    if current is not None and current.directory == directory:
        return current
    return describe(directory)


def _load_config(instance: InstanceInfo) -> Config:
    from etcode.config.loader import load_config

    return load_config(instance.directory, instance.worktree)


#: How a library user approves a project file (the error's last line).
API_TRUST_HINT = (
    "approve it with Agent(trust=True) (remembered until the file changes) "
    "or with `etcode run --trust ...` in that folder"
)


def _check_trust(config: Config, trust: bool | None) -> None:
    """The gate of ``etcode run``, for the Python API: a project file's risky settings
    not approved in their current version are refused, or approved and remembered with
    ``trust=True``; ``None``: the caller asked the user itself (the CLI, the chat, ACP)."""
    if trust is not None:
        from etcode.trust.project import require_trust

        require_trust(config, trust=trust, hint=API_TRUST_HINT)


def _retry_config(config: Config) -> RetryConfig:
    from etcode.config.resolve import retry_config

    return retry_config(config)


def _resolve_spec(agent: AgentSettings, config: Config, agent_info: AgentInfo) -> ProviderSpec:
    from etcode.config.resolve import spec_from_arguments

    model = agent.model or agent_info.model
    if agent.api_key or agent.base_url:
        if not model:
            from etcode.util.errors import ConfigError

            raise ConfigError("a model (provider/model) is required when api_key or base_url is given")
        return spec_from_arguments(model, agent.api_key, agent.base_url)
    if agent.provider is not None and model:
        provider_id, _, model_id = model.partition("/")
        return ProviderSpec(id=provider_id, type="openai", base_url="", model=model_id or provider_id)
    from etcode.config.resolve import resolve_model

    return resolve_model(config, model)


def _request_extra(
    agent: AgentSettings, spec: ProviderSpec, config: Config, catalog: ModelCatalog
) -> tuple[JsonObject, str | None]:
    """The agent's model keywords for the request body: checked against the provider's wire
    format, or passed as they are to a provider or client of the caller's own; then the
    fields of its ``reasoning`` (else the config's) that no explicit option already sets,
    in the wire of the provider that sends them (a subagent shares its parent's). A hosted
    model the catalog knows does not reason gets none: the second value is the warning."""
    if agent.provider is not None:
        extra = dict(agent.llm_kwargs)
    else:
        from etcode.provider.options import request_options

        extra = request_options(spec.type, spec.id, agent.llm_kwargs)
    setting = agent.reasoning if agent.reasoning is not None else config.reasoning
    if setting is None:
        return extra, None
    from etcode.provider.reasoning import parse_reasoning, reasoning_fields

    level = parse_reasoning(setting)
    if level is None:
        return extra, None
    wire_spec = _wire_spec(agent, spec)
    if hosted(wire_spec) and catalog.get(wire_spec.id, spec.model).reasons is False:
        return extra, f"reasoning: model {spec.full_id} does not take it; not sent"
    fields = reasoning_fields(level, wire_spec.type, wire_spec.id, {**wire_spec.options, **extra})
    return {**extra, **fields}, None


def _wire_spec(agent: AgentSettings, spec: ProviderSpec) -> ProviderSpec:
    """The spec whose wire format the requests take: the provider's own when it has one (a
    subagent sharing its parent's, an ``AnthropicProvider`` passed in), else ``spec``; a
    client of the caller's own (``ChatClientProvider``) is asked as OpenAI's wire."""
    if agent.provider is None:
        return spec
    own = getattr(agent.provider, "spec", None)
    if isinstance(own, ProviderSpec):
        return own
    return replace(spec, type="openai")


def _claude_agent_warnings(instance: InstanceInfo) -> list[str]:
    """The Claude Code agent files (``.claude/agents/*.md``) left out, one line each."""
    from etcode.util.paths import folders_between

    top = Path(instance.worktree).resolve()
    folders = [Path.home(), *folders_between(Path(instance.directory).resolve(), top)]
    from etcode.agent.registry import has_claude_agents

    if not any(has_claude_agents(folder) for folder in folders):
        return []  # (the common case: the module is not even imported)
    from etcode.agent.claude_agents import claude_agent_warnings

    return claude_agent_warnings(folders, top)


def _agent_info(name: str, config: Config, instance: InstanceInfo) -> AgentInfo:
    from etcode.agent.registry import get_agent

    return get_agent(
        name,
        config_agents=config.agent,
        directory=instance.directory,
        worktree=instance.worktree,
        without=config.without,
    )


def _tools_for(agent: AgentSettings, agent_info: AgentInfo) -> ToolRegistry:
    """Built-in tools the agent enables (``"tools": {"Bash": false, "*": false, ...}``),
    then the caller's own tools, which are always offered. Without the built-in set,
    ``TodoWrite`` still comes (after the caller's tools): every agent can keep a todo list."""
    registry = ToolRegistry(builtin_tools() if agent.builtin_tools else [])
    for name in registry.names():
        if not agent_info.tool_enabled(name):
            registry.remove(name)
    for extra in agent.custom_tools:
        registry.add(extra)
    if not agent.builtin_tools and registry.get("TodoWrite") is None and agent_info.tool_enabled("TodoWrite"):
        from etcode.tools.todo import TodoWriteTool

        registry.add(TodoWriteTool())
    return registry


def _mcp_manager(config: Config, instance: InstanceInfo, parent: Runtime | None) -> McpManager | None:
    """The parent's MCP servers, or a manager for this session's own (not started yet);
    None when no server is enabled (then the ``mcp`` SDK is never imported)."""
    if parent is not None:
        return parent.mcp
    servers = config.mcp
    if not servers:
        return None
    from etcode.mcp.config import server_specs

    specs = server_specs(servers)
    if not any(spec.enabled for spec in specs):
        return None
    from etcode.mcp.manager import McpManager

    return McpManager(specs, instance.directory)


def _add_mcp_tools(
    tools: ToolRegistry, mcp: McpManager | None, agent_info: AgentInfo, warnings: list[str], owned: bool
) -> None:
    """Offer the connected servers' tools the agent enables; report servers that failed.
    An agent that may not write files (``plan``, ``explore``) gets only the tools their
    server marks ``readOnlyHint``: any other MCP tool may write."""
    if mcp is None:
        return
    if owned:
        warnings.extend(mcp.warnings())
    from etcode.wiring.agent_access import cannot_write_files

    read_only_agent = cannot_write_files(agent_info)
    for item in mcp.tools():
        if read_only_agent and not item.is_read_only:
            continue
        if agent_info.tool_enabled(item.name) and tools.get(item.name) is None:
            tools.add(item)


#: The project's folders that may hold skills (``extensions/skills.py: PROJECT_FOLDERS``), by
#: their first part: a run in a project with none of them imports nothing of skills.
_SKILL_HOMES = (".etcode", ".claude", ".agents")


def _may_have_skills(agent: AgentSettings, config: Config, instance: InstanceInfo) -> bool:
    """Whether a folder that could hold a skill exists (a few ``stat`` calls): the caller's or
    the config's skill folders, the project's or the user's skill folders."""
    if agent.skills or config.skills.paths:
        return True
    from etcode.util.paths import config_dir, folders_between

    homes = [
        level / home / "skills"
        for level in folders_between(instance.directory, instance.worktree)
        for home in _SKILL_HOMES
    ]
    user = [config_dir() / "skills", Path.home() / ".claude" / "skills"]
    return any(folder.is_dir() for folder in (*homes, *user))


async def _skills_for(
    agent: AgentSettings,
    config: Config,
    instance: InstanceInfo,
    agent_info: AgentInfo,
    parent: Runtime | None,
    warnings: list[str],
) -> SkillSet | None:
    """The session's skills (a Task subagent's are its parent's), each broken one a warning;
    None when there are none or the agent turns the Skill tool off (then neither the tool nor
    the list in the prompt is there)."""
    if not agent_info.tool_enabled("Skill"):
        return None
    if parent is not None:
        return parent.skills
    if not _may_have_skills(agent, config, instance):
        return None
    from etcode.extensions.skills import find_skills

    found = await asyncio.to_thread(
        find_skills, instance.directory, instance.worktree, config=config, extra=agent.skills
    )
    warnings.extend(found.warnings)
    return found if found else None


def _add_skill_tool(tools: ToolRegistry, skills: SkillSet) -> None:
    """The Skill tool, when the model may load one of the skills."""
    from etcode.extensions.skill_tool import SkillTool

    offered = skills.for_model()
    if offered and tools.get(SkillTool.name) is None:  # a caller's own Skill tool wins
        tools.add(SkillTool(offered))


def _instruction_prompt(config: Config, instance: InstanceInfo) -> InstructionPrompt:
    from etcode.prompt.instruction import InstructionPrompt, rules_internal_check

    return InstructionPrompt(
        instance.directory,
        instance.worktree,
        instructions=list(config.instructions),
        compat=config.instructions_compat,
        trusted=config.trusted,
        internal_allowed=rules_internal_check(config.permission, config.permission_files),
    )


async def _system_prompt(
    agent: AgentSettings,
    agent_info: AgentInfo,
    spec: ProviderSpec,
    instance: InstanceInfo,
    instructions: InstructionPrompt,
    warnings: list[str],
    config: Config,
    skills: SkillSet | None = None,
) -> tuple[list[str], list[str] | None, str | None]:
    """The system prompt's texts, the same with the lean provider layer and the lean list
    of skills (None when neither applies: an agent's or the caller's own prompt, no skills),
    and the environment block (sent in the first user message, not in the system text)."""
    from etcode.prompt.system import SystemPrompt, split_environment

    listed = lean_listed = None
    offered = skills.for_model() if skills else None
    if offered:
        from etcode.extensions.skill_prompt import lean_skills_part, skills_part

        listed, lean_listed = skills_part(offered.skills), lean_skills_part(offered.skills)

    parts = await SystemPrompt.build(
        agent_info,
        spec.full_id,
        instructions,
        directory=instance.directory,
        is_git=instance.is_git,
        system_prompt=agent.system_prompt or None,
        name=agent.name,
        transforms=list(config.plugin),
        extra=[listed] if listed is not None else (),
    )
    warnings.extend(instructions.warnings)
    texts, environment = split_environment(parts)
    lean = list(texts)
    if listed is not None and lean_listed is not None and listed.text in lean:  # (a hook may change it)
        lean[lean.index(listed.text)] = lean_listed.text
    provider = SystemPrompt.provider(spec.full_id, agent.name)
    if parts and parts[0].layer == "provider" and parts[0].text == provider.text:
        lean[0] = SystemPrompt.lean_provider(agent.name).text
    # Not the provider layer, or a hook changed it: kept as it is.
    return texts, (lean if lean != texts else None), environment


def _permission_service(
    config: Config,
    agent_info: AgentInfo,
    asker: Asker | None,
    instance: InstanceInfo,
    defaults: Ruleset,
    questions: Turn,
) -> PermissionService:
    """The config's and the agent's rules over the defaults and ``defaults`` (more of them)."""
    from etcode.permission.service import LIBRARY_REASON, DenyAsker, PermissionService, rules_from_config

    rules = rules_from_config(config.permission, agent_info.permission, config.permission_files)
    asker = asker or DenyAsker(LIBRARY_REASON)  # the front ends pass their own
    return PermissionService([*rules, *defaults], asker, instance.worktree, questions)


def _mcp_rules(tools: ToolRegistry, mcp: McpManager | None) -> Ruleset:
    """Default rules for the MCP tools offered: ``ask`` for each one its server does not mark
    ``readOnlyHint`` (any rule of the config or the agent that allows it wins)."""
    if mcp is None:
        return []
    from etcode.mcp.tool import ask_rules

    return ask_rules(tools)
