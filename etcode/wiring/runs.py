"""The one entrance from the public ``Agent`` to a run: the runtime with its Task tool
(:func:`build_runtime`), the loop's settings built whole (:func:`loop_settings`) and the
:class:`~etcode.engine.run.Run` the agent runs (:func:`start_run`: the ReAct loop, or the
Planner → Executor → Verifier workflow for ``--agent workflow``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from etcode.engine.settings import LoopSettings
from etcode.provider.types import Message
from etcode.wiring.runtime import ChildFactory, Runtime

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.engine.interception import Interceptor
    from etcode.engine.run import Run
    from etcode.engine.seams import LoopWindow, Recorder
    from etcode.provider.spec import ProviderSpec
    from etcode.provider.types import ImagePart
    from etcode.security.shell_env import ShellEnvPolicy
    from etcode.wiring.settings import AgentSettings

#: The agent whose turns are the workflow's (not the ReAct loop's).
WORKFLOW_AGENT = "workflow"


async def build_runtime(
    agent: AgentSettings, *, parent: Runtime | None = None, make_child: ChildFactory | None = None
) -> Runtime:
    """``Runtime.create``, and the ``Task`` tool when the agent enables it (a subagent only
    when it asks for it) and the runtime can build children."""
    import asyncio

    runtime = await Runtime.create(agent, parent=parent, make_child=make_child)
    if not agent.builtin_tools or runtime.make_child is None:
        return runtime
    try:
        from etcode.wiring.subagent import add_task_tool

        add_task_tool(agent, runtime)
    except BaseException:  # nothing is left running when the build fails
        await asyncio.shield(runtime.aclose())
        raise
    return runtime


def loop_settings(
    runtime: Runtime,
    agent: AgentSettings,
    *,
    recorder: Recorder | None,
    window: LoopWindow | None,
    interceptors: tuple[Interceptor, ...] = (),
) -> LoopSettings:
    """What one run of ``agent`` runs with, whole (its session's recorder and window passed in)."""
    from etcode.engine.window import ContextWindow
    from etcode.tools.loop_detect import LoopDetector
    from etcode.tools.truncate import truncate_for_model
    from etcode.wiring.tool_fit import replanner

    return LoopSettings(
        provider=runtime.provider,
        model=runtime.spec.model,
        system=runtime.system,
        tools=runtime.tools,
        directory=runtime.instance.directory,
        worktree=runtime.instance.worktree,
        session_id=agent.session_id,
        limits=runtime.limits,
        temperature=agent.temperature if agent.temperature is not None else runtime.agent_info.temperature,
        max_tokens=agent.max_tokens,
        extra=dict(runtime.extra),
        check_permission=runtime.permission.check,
        decide_permission=runtime.permission.decide,
        instructions_for=runtime.instructions.nested_for,
        state=agent.state,
        shell_env=_shell_env(runtime.config, runtime.spec),
        sandbox=runtime.sandbox,
        on_call=LoopDetector(runtime.limits.doom_loop_threshold).record,
        output_filter=truncate_for_model,
        recorder=recorder,
        window=window,
        interceptors=interceptors,
        images=runtime.images,
        environment=runtime.environment,
        # A Task child's processes are its parent session's: the parent's runs are told.
        request_notes=None if agent.parent_session_id else lambda: background_notes(agent.state),
        # The workflow's role turns keep the plan their run began with.
        replan=replanner(runtime, window)
        if isinstance(window, ContextWindow) and runtime.agent_name != WORKFLOW_AGENT
        else None,
    )


def background_notes(state: dict[str, object]) -> list[str]:
    """The exits of the session's background processes the model was not told of yet
    (nothing imported when the session never started one)."""
    if state.get("background") is None:
        return []
    from etcode.tools.background import existing

    registry = existing(state)
    return registry.take_exit_notes() if registry is not None else []


def start_run(
    runtime: Runtime,
    agent: AgentSettings,
    history: list[Message],
    task: str,
    *,
    recorder: Recorder | None,
    window: LoopWindow | None,
    interceptors: tuple[Interceptor, ...] = (),
    images: Sequence[ImagePart] = (),
) -> Run:
    """The run of ``task`` for the runtime's agent (not started: iterate its ``events()``);
    ``interceptors`` see its turn and tool calls (``etcode.engine.interception``); ``images``
    follow the task's text in the user's message (the workflow's turns take its text only)."""
    settings = loop_settings(runtime, agent, recorder=recorder, window=window, interceptors=interceptors)
    if runtime.agent_name == WORKFLOW_AGENT:
        from etcode.workflow.engine import WorkflowLimits, WorkflowRun
        from etcode.workflow.prompts import PromptManager

        limits = agent.state.get("workflow_limits")
        prompts = agent.state.get("workflow_prompts")
        return WorkflowRun(
            settings,
            history,
            task,
            limits=limits
            if isinstance(limits, WorkflowLimits)
            else WorkflowLimits.from_config(runtime.config),
            prompts=prompts
            if isinstance(prompts, PromptManager)
            else PromptManager.from_config(
                runtime.config, runtime.instance.directory, runtime.instance.worktree
            ),
        )
    from etcode.engine.loop import AgentLoop

    if not images:
        return AgentLoop(settings, history, Message.user(task))
    from etcode.prompt.image_inputs import user_message

    return AgentLoop(settings, history, user_message(task, images))


def shell_env(runtime: Runtime) -> ShellEnvPolicy:
    """What the runtime's Bash commands inherit (hooks: :func:`hook_env`)."""
    return _shell_env(runtime.config, runtime.spec)


def hook_env(runtime: Runtime) -> ShellEnvPolicy:
    """What hooks inherit: the user's own ``shell.env`` only. Hooks run unsandboxed as the
    user, so an untrusted project's ``shell.env`` (``"HOME": "."``) must not reach them; once
    the project is trusted the merged policy (Bash's) is used."""
    config = runtime.config
    project_env = any(
        f.kind == "config" and f.project and isinstance(f.raw.get("shell"), dict) and "env" in f.raw["shell"]
        for f in config.files
    )
    if config.trusted or not project_env:
        return shell_env(runtime)
    from etcode.config.loader import merge, substitute
    from etcode.config.schema import ShellEnvConfig
    from etcode.util.errors import ConfigError
    from etcode.util.json_types import JsonObject

    layers: JsonObject = {}
    for f in config.files:
        shell = f.raw.get("shell")
        if (
            f.kind != "config"
            or f.project
            or not isinstance(shell, dict)
            or not isinstance(shell.get("env"), dict)
        ):
            continue
        value = substitute(shell["env"], env=os.environ, base_dir=f.path.parent, source=str(f.path))
        if isinstance(value, dict):
            layers = merge(layers, value, top=False)
    try:
        user = ShellEnvConfig.model_validate(layers)
    except ValueError as err:  # the user's files were validated on load: this should not happen
        raise ConfigError(f"shell.env: {err}") from None
    return dataclasses.replace(
        shell_env(runtime),
        inherit=user.inherit,
        include=tuple(user.include),
        exclude=tuple(user.exclude),
        set=dict(user.set_),
    )


def _shell_env(config: Config, spec: ProviderSpec) -> ShellEnvPolicy:
    """What Bash commands inherit: the config's ``shell.env``, never the session's keys."""
    from etcode.provider.spec import provider_key_names
    from etcode.security.redact import secrets_from_config
    from etcode.security.shell_env import ShellEnvPolicy

    secrets = {spec.api_key, *secrets_from_config(config)}
    return ShellEnvPolicy.from_config(config, secrets, provider_key_names())
