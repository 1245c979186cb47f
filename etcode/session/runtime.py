"""Turns an ``Agent``'s settings into a ready world: config, model, provider, agent
definition, tools, system prompt and permissions. Built once per Agent, on first use."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from etcode.instance import Instance, InstanceInfo, describe
from etcode.provider.spec import ProviderSpec, RetryConfig
from etcode.session.events import Event, WarningEvent
from etcode.session.loop import LoopSettings
from etcode.session.result import LoopLimits
from etcode.tools.registry import ToolRegistry, builtin_tools

if TYPE_CHECKING:
    from etcode.api import Agent


@dataclass
class Runtime:
    instance: InstanceInfo
    config: Any
    spec: ProviderSpec
    provider: Any
    agent_name: str
    agent_info: Any
    tools: ToolRegistry
    system: list[str]
    limits: LoopLimits
    permission: Any
    instructions: Any
    owns_provider: bool
    warnings: list[str] = field(default_factory=list)
    #: The session's MCP servers (``etcode.mcp.McpManager``), None when none is configured.
    mcp: Any = None
    #: False for a subagent's runtime, which borrows its parent's MCP servers.
    owns_mcp: bool = True
    #: 0 for a top-level session, parent depth + 1 for a Task subagent.
    depth: int = 0
    #: How Bash commands are confined (``etcode.tools.sandbox.SandboxPolicy``).
    sandbox: Any = None
    #: The model catalog (limits, prices) the session's context window is built from.
    catalog: Any = None
    #: Asks the model server for its window (``discovery.ServerProbe``), None when not needed.
    probe: Any = None
    #: The system prompt with the lean provider layer (None: the same as ``system``).
    lean_system: list[str] | None = None
    #: The system prompt as assembled (``system`` is this or ``lean_system``).
    full_system: list[str] = field(default_factory=list)
    #: Extra request-body fields (the ``Agent``'s model keywords: ``top_p``, ``seed``…).
    extra: dict[str, Any] = field(default_factory=dict)

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
            correct_window(self.spec, context)

    def take_warnings(self) -> list[Event]:
        items: list[Event] = [WarningEvent(w) for w in self.warnings]
        self.warnings = []
        return items

    def loop_settings(self, agent: Agent) -> LoopSettings:
        settings = LoopSettings(
            provider=self.provider,
            model=self.spec.model,
            system=self.system,
            tools=self.tools,
            directory=self.instance.directory,
            worktree=self.instance.worktree,
            session_id=agent.session_id,
            limits=self.limits,
            temperature=agent.temperature
            if agent.temperature is not None
            else _attr(self.agent_info, "temperature"),
            max_tokens=agent.max_tokens,
            state=agent.state,
            extra=dict(self.extra),
        )
        if self.permission is not None:
            settings.check_permission = self.permission.check
            settings.decide_permission = self.permission.decide
        if self.instructions is not None and hasattr(self.instructions, "nested_for"):
            settings.instructions_for = self.instructions.nested_for
        settings.shell_env = _shell_env(self.config, self.spec)
        settings.sandbox = self.sandbox
        settings.on_call = _loop_detector().record
        settings.output_filter = _output_filter()
        return settings

    async def aclose(self) -> None:
        if self.probe is not None:
            probe, self.probe = self.probe, None
            await probe.aclose()
        if self.owns_provider and hasattr(self.provider, "aclose"):
            await self.provider.aclose()
        if self.mcp is not None and self.owns_mcp:
            mcp, self.mcp = self.mcp, None
            await mcp.aclose()

    # ---- building ----------------------------------------------------------------
    @classmethod
    async def create(cls, agent: Agent, *, parent: Runtime | None = None) -> Runtime:
        """Build the world for ``agent``. A ``parent`` (a Task subagent's) lends its MCP
        servers instead of starting them again."""
        instance = _instance_for(agent.directory)
        config = agent.config if agent.config is not None else _load_config(instance)
        mcp = _mcp_manager(config, instance, parent)
        # MCP servers start first, in the background: their time limit runs while the rest is built.
        mcp_start = asyncio.ensure_future(mcp.start()) if mcp is not None and parent is None else None
        if mcp_start is not None:
            await asyncio.sleep(0)  # let it begin (its SDK import runs in a worker thread)
        try:
            return await cls._build(agent, parent, instance, config, mcp, mcp_start)
        except BaseException:
            if mcp_start is not None:
                mcp_start.cancel()
                await asyncio.shield(mcp.aclose())
            raise

    @classmethod
    async def _build(
        cls,
        agent: Agent,
        parent: Runtime | None,
        instance: InstanceInfo,
        config: Any,
        mcp: Any,
        mcp_start: Any,
    ) -> Runtime:
        agent_name = agent.agent_name or _attr(config, "default_agent") or "build"
        agent_info = _agent_info(agent_name, config, instance)
        spec = _resolve_spec(agent, config, agent_info)
        _learn_secrets(config, spec)
        extra = _request_extra(agent, spec)
        retry = agent.retry or _retry_config(config)
        owns_provider = agent.provider is None
        if agent.provider is not None:
            provider = agent.provider
        else:
            from etcode.provider.factory import make_provider

            provider = make_provider(spec, retry)
        catalog, probe = _catalog_and_probe(config, spec)
        try:
            tools = _tools_for(agent, agent_info)
            warnings: list[str] = []
            instructions = _instruction_prompt(config, instance)
            system, lean_system = await _system_prompt(
                agent, agent_info, spec, instance, instructions, warnings, config
            )
            if mcp_start is not None:
                await mcp_start
            _add_mcp_tools(tools, mcp, agent_info, warnings, owned=parent is None)
            limits = agent.limits or LoopLimits(
                max_steps=_attr(agent_info, "steps") or _attr(config, "max_steps") or 50,
                timeout=_attr(config, "timeout"),
                max_tool_calls=_attr(config, "max_tool_calls") or 64,
            )
            permission = _permission_service(config, agent_info, agent.asker, instance)
            sandbox = await _sandbox_policy(config, agent_name, agent_info, instance.worktree, warnings)
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
                extra=extra,
            )
            runtime.use_lean(_attr(config, "prompt") == "lean")
            _add_task_tool(agent, runtime)
            return runtime
        except BaseException:
            if probe is not None:  # nothing is left running when the build fails
                await probe.aclose()
            raise


def _catalog_and_probe(config: Any, spec: ProviderSpec) -> tuple[Any, Any]:
    """The model catalog, and a probe asking a local server for its window and tool support
    (begun now, so it runs while the prompt is assembled)."""
    from etcode.provider.catalog import ModelCatalog
    from etcode.session.server_window import begin_probe

    catalog = ModelCatalog.load(config)
    return catalog, begin_probe(spec)


def _learn_secrets(config: Any, spec: ProviderSpec) -> None:
    """Teach the redactor the keys in play (config and the resolved provider key): tool
    output holding one is redacted before the model or the session store sees it."""
    from etcode.util.redact import register_config, register_secrets

    register_config(config)
    register_secrets(getattr(spec, "api_key", None))


def _attr(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


async def _sandbox_policy(
    config: Any, agent_name: str, agent_info: Any, worktree: Path, warnings: list[str]
) -> Any:
    """The sandbox of this session's commands: the ``--sandbox`` flag wins; otherwise the
    stricter of the config's and the agent's. A mode the user asked for that cannot be had
    here is an error; a built-in agent's default (plan: read-only) only warns."""
    from etcode.config.loader import FLAGS_SOURCE
    from etcode.tools.sandbox import (
        STRICTNESS,
        SandboxPolicy,
        SandboxUnavailable,
        as_mode,
        config_dir_paths,
        stricter,
        unavailable_reason,
    )

    configured = _attr(config, "sandbox")
    config_mode = configured.mode if configured is not None else None
    agent_mode = _attr(agent_info, "sandbox")
    agent_mode = _unloosened(agent_name, agent_mode, _attr(agent_info, "sandbox_source"), worktree, warnings)
    from_flag = config is not None and hasattr(config, "origin") and config.origin("sandbox") == FLAGS_SOURCE
    mode = (config_mode if from_flag else stricter(config_mode, agent_mode)) or "off"
    if mode == "off":
        return SandboxPolicy()
    required = (config_mode is not None and STRICTNESS[config_mode] >= STRICTNESS[mode]) or (
        _attr(agent_info, "sandbox_source") != "builtin"
    )
    problem = await asyncio.to_thread(unavailable_reason)
    if problem is not None:
        if required:
            raise SandboxUnavailable(f"sandbox: {problem}")
        warnings.append(
            f"the {agent_name} agent runs commands without its {mode} sandbox: {problem}; its permission rules still apply"
        )
        return SandboxPolicy()
    writable = tuple(Path(p).expanduser() for p in configured.writable) if configured is not None else ()
    network = bool(configured.network) if configured is not None else False
    return SandboxPolicy(as_mode(mode), network, writable, required, config_dir_paths())


def _unloosened(
    agent_name: str, mode: str | None, source: str | None, worktree: Path, warnings: list[str]
) -> str | None:
    """A built-in agent's sandbox (plan, explore: read-only) loosened by an agent file in
    the project (``.etcode/agent/<name>.md``) stays as it was: a cloned repository must not
    take a read-only agent out of its sandbox. (The config's ``agent`` key goes through
    project trust; the user's global agent files may loosen it.)"""
    from etcode.agent.registry import builtin_agents
    from etcode.tools.sandbox import STRICTNESS

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


def _shell_env(config: Any, spec: ProviderSpec) -> Any:
    """What Bash commands inherit: the config's ``shell.env``, never the session's keys."""
    from etcode.tools.shell_env import ShellEnvPolicy
    from etcode.util.redact import secrets_from_config

    return ShellEnvPolicy.from_config(config, {spec.api_key, *secrets_from_config(config)})


def _instance_for(directory: Path | None) -> InstanceInfo:
    current = Instance.maybe()
    if directory is None:
        return current or describe(Path.cwd())
    if current is not None and current.directory == directory:
        return current
    return describe(directory)


def _load_config(instance: InstanceInfo) -> Any:
    from etcode.config.loader import load_config

    return load_config(instance.directory, instance.worktree)


def _retry_config(config: Any) -> RetryConfig:
    if config is None:
        return RetryConfig()
    from etcode.config.resolve import retry_config

    return retry_config(config)


def _resolve_spec(agent: Agent, config: Any, agent_info: Any) -> ProviderSpec:
    from etcode.api import spec_from_arguments

    model = agent.model or _attr(agent_info, "model")
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


def _request_extra(agent: Agent, spec: ProviderSpec) -> dict[str, Any]:
    """The agent's model keywords for the request body: checked against the provider's wire
    format, or passed as they are to a provider or client of the caller's own."""
    if agent.provider is not None:
        return dict(agent.llm_kwargs)
    from etcode.provider.options import request_options

    return request_options(spec.type, spec.id, agent.llm_kwargs)


def _agent_info(name: str, config: Any, instance: InstanceInfo) -> Any:
    from etcode.agent.registry import get_agent

    return get_agent(
        name,
        config_agents=_attr(config, "agent") or {},
        directory=instance.directory,
        worktree=instance.worktree,
    )


def _tools_for(agent: Agent, agent_info: Any) -> ToolRegistry:
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


def _mcp_manager(config: Any, instance: InstanceInfo, parent: Runtime | None) -> Any:
    """The parent's MCP servers, or a manager for this session's own (not started yet);
    None when no server is enabled (then the ``mcp`` SDK is never imported)."""
    if parent is not None:
        return parent.mcp
    servers = _attr(config, "mcp") or {}
    if not servers:
        return None
    from etcode.mcp.config import server_specs

    specs = server_specs(servers)
    if not any(spec.enabled for spec in specs):
        return None
    from etcode.mcp.manager import McpManager

    return McpManager(specs, instance.directory)


def _add_mcp_tools(tools: ToolRegistry, mcp: Any, agent_info: Any, warnings: list[str], owned: bool) -> None:
    """Offer the connected servers' tools the agent enables; report servers that failed."""
    if mcp is None:
        return
    if owned:
        warnings.extend(mcp.warnings())
    for item in mcp.tools():
        if agent_info.tool_enabled(item.name) and tools.get(item.name) is None:
            tools.add(item)


def _add_task_tool(agent: Agent, runtime: Runtime) -> None:
    """The ``Task`` tool, when the agent enables it (a subagent only when it asks for it)."""
    if not agent.builtin_tools:
        return
    from etcode.session.subagent import task_tool_for

    task = task_tool_for(agent, runtime)
    if task is not None:
        runtime.tools.add(task)


def _instruction_prompt(config: Any, instance: InstanceInfo) -> Any:
    from etcode.prompt.instruction import InstructionPrompt

    return InstructionPrompt(
        instance.directory,
        instance.worktree,
        instructions=list(_attr(config, "instructions") or []),
        compat=_attr(config, "instructions_compat", True) is not False,
    )


async def _system_prompt(
    agent: Agent,
    agent_info: Any,
    spec: ProviderSpec,
    instance: InstanceInfo,
    instructions: Any,
    warnings: list[str],
    config: Any = None,
) -> tuple[list[str], list[str] | None]:
    """The system prompt's texts, and the same with the lean provider layer (None when the
    first layer is not the provider's: an agent's or the caller's own prompt)."""
    from etcode.prompt.system import SystemPrompt

    parts = await SystemPrompt.build(
        agent_info,
        spec.full_id,
        instructions,
        directory=instance.directory,
        is_git=instance.is_git,
        system_prompt=agent.system_prompt or None,
        name=agent.name,
        transforms=list(_attr(config, "plugin") or []),
    )
    warnings.extend(getattr(instructions, "warnings", []) or [])
    texts = [part.text for part in parts]
    provider = SystemPrompt.provider(spec.full_id, agent.name)
    if not parts or parts[0].layer != "provider" or parts[0].text != provider.text:
        return texts, None  # not the provider layer, or a hook changed it: keep it as it is
    return texts, [SystemPrompt.lean_provider(agent.name).text, *texts[1:]]


def _permission_service(config: Any, agent_info: Any, asker: Any, instance: InstanceInfo) -> Any:
    from etcode.permission.service import DenyAsker, PermissionService, rules_from_config

    rules = rules_from_config(
        _attr(config, "permission"),
        _attr(agent_info, "permission"),
        getattr(config, "permission_files", None) or (),
    )
    return PermissionService(rules, asker or DenyAsker(), instance.worktree)


def _loop_detector() -> Any:
    from etcode.tools.loop_detect import LoopDetector

    return LoopDetector()


def _output_filter() -> Any:
    from etcode.tools.truncate import truncate_for_model

    return truncate_for_model
