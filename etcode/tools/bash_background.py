"""``Bash`` with ``run_in_background``: the command started as a foreground one would be
(same permission check, done by ``Bash`` before this; same environment policy and sandbox),
but followed by the session's :class:`~etcode.tools.background.BackgroundProcesses` instead
of awaited."""

from __future__ import annotations

import asyncio

from etcode.tools.background import BackgroundOutput, of_state
from etcode.tools.base import ToolContext, ToolError, ToolResult
from etcode.tools.truncate import MAX_BYTES, truncate_output
from etcode.util.json_types import JsonObject

#: How long the start waits for the command's first output (or its end).
FIRST_OUTPUT_SECONDS = 1.0


async def start_in_background(command: str, description: str, ctx: ToolContext, shell: str) -> ToolResult:
    """Start ``command`` in the background and answer with its id and first output."""
    from etcode.provider.spec import provider_key_names
    from etcode.security import sandbox
    from etcode.security.sandbox import SandboxPolicy
    from etcode.security.shell_env import ShellEnvPolicy

    registry = of_state(ctx.state)
    registry.check_room()
    env = (ctx.shell_env or ShellEnvPolicy(key_names=provider_key_names())).environment()
    policy = ctx.sandbox or SandboxPolicy()
    launch = sandbox.prepare(policy, command, shell, ctx.directory, ctx.worktree)
    try:
        info = await registry.start(
            launch.argv,
            command=command,
            description=description,
            cwd=str(ctx.directory),
            env=sandbox.environment(policy, env),
            pass_fds=launch.pass_fds,
            on_end=launch.close,
        )
    except OSError as err:
        launch.close()
        raise ToolError(f"Bash: could not start the command in the background ({err})") from None
    except BaseException:
        launch.close()
        raise
    finally:
        launch.started()
    first = await registry.first_output(info.id, FIRST_OUTPUT_SECONDS)
    text, path = await with_output(started_head(first), first, "(no output yet)")
    data: JsonObject = {"background": info.id, "pid": info.pid, "description": description}
    if policy.active:
        data["sandbox"] = policy.mode
    if path:
        data["outputPath"] = path
    return ToolResult(text, is_error=False, data=data)


def started_head(first: BackgroundOutput) -> str:
    """What the model reads first after the start: the id and how to follow it."""
    info = first.info
    if info.status == "running":
        return (
            f"Started {info.id} in the background (pid {info.pid}). Read its new output with "
            f'BashOutput(bash_id="{info.id}"), end it with KillBash(shell_id="{info.id}").'
        )
    return f"{info.id} ended at once ({status_text(first)})."


async def with_output(head: str, output: BackgroundOutput, empty: str) -> tuple[str, str | None]:
    """``head`` (with the output's skipped count under it), a blank line, then the output:
    its tail alone is cut to the limits (the full text saved), so ``head`` always reaches
    the model. Returns the text and the saved file's path, if any."""
    if output.skipped:
        head += "\n" + output.render().split("\n", 1)[0]
    body = output.text.rstrip("\n")
    if not body:
        return f"{head}\n\n{empty}", None
    room = MAX_BYTES - len(head.encode()) - 2
    cut = await asyncio.to_thread(truncate_output, body, max_bytes=room, direction="tail")
    return f"{head}\n\n{cut.text}", cut.path


def status_text(output: BackgroundOutput) -> str:
    """``running``, ``exited with code N`` or ``killed``."""
    info = output.info
    if info.status == "exited":
        return f"exited with code {info.exit_code}"
    return info.status
