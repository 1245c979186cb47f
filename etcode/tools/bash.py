"""``Bash``: run a shell command in the working directory, in its own process group."""

from __future__ import annotations

import asyncio
import re
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from etcode.tools import client_io
from etcode.tools.base import PermissionDenied, Tool, ToolContext, ToolResult
from etcode.tools.progress import OutputProgress
from etcode.tools.summary import plural, shorten
from etcode.tools.truncate import truncate_output
from etcode.util.json_types import JsonObject
from etcode.util.process_group import close_pipes, forget_if_gone, kill_process_group, start_process

if TYPE_CHECKING:
    from pathlib import Path

    from etcode.security.sandbox import Launch, SandboxPolicy

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
KILL_GRACE_SECONDS = 2.0
#: Output kept in memory; beyond this only the tail is kept.
MAX_BUFFER_BYTES = 8 * 1024 * 1024
#: After the shell exits, how long to wait for background children holding the pipe.
DRAIN_SECONDS = 1.0

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


class BashParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(description="The shell command to run.")
    timeout: int | None = Field(
        default=None,
        ge=1,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}).",
    )
    description: str | None = Field(
        default=None, description="A short (5-10 words) description of what the command does."
    )
    run_in_background: bool = Field(
        default=False,
        description="Run the command in the background (a dev server, a watcher) and return at once "
        "with its id and first output; read the rest with BashOutput, end it with KillBash.",
    )


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


async def _wait_exit(proc: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> int:
    """The exit code of ``proc``. ``Process.wait()`` alone also waits for the pipes to
    close, which a background child (``server &``) may hold open for ever; so poll the
    return code until the output reaches EOF, then ``wait()``."""
    delay = 0.01
    while proc.returncode is None:
        done, _ = await asyncio.wait({reader}, timeout=delay)
        if done:
            return await proc.wait()
        delay = min(delay * 2, 0.1)
    return proc.returncode


class _Collector:
    """Accumulates output bytes, keeping only the tail past :data:`MAX_BUFFER_BYTES`."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.dropped = 0

    async def read(self, stream: asyncio.StreamReader, progress: OutputProgress | None = None) -> None:
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                return
            if progress is not None:
                progress.feed(chunk)
            self.buffer += chunk
            excess = len(self.buffer) - MAX_BUFFER_BYTES
            if excess > 0:
                del self.buffer[:excess]
                self.dropped += excess

    def text(self) -> str:
        text = _clean(self.buffer.decode("utf-8", errors="replace"))
        if self.dropped:
            text = f"[... {self.dropped} bytes of earlier output dropped ...]\n" + text
        return text


@dataclass
class _Run:
    output: str
    exit_code: int
    timed_out: bool = False
    interrupted: bool = False
    unsandboxed: bool = False
    #: The front end's terminal that ran it, when one did.
    terminal_id: str = ""


def _clean(text: str) -> str:
    return _ANSI.sub("", text).replace("\r\n", "\n")


async def _execute(
    argv: list[str], env: dict[str, str], timeout_ms: int, ctx: ToolContext, launch: Launch | None = None
) -> _Run:
    """Run ``argv`` until it exits, times out or is interrupted: in the front end's
    terminal when it offers one (an editor shows it), else here."""
    terminal = client_io.client_terminal(ctx)
    if terminal is not None:
        try:
            ran = await terminal.run(argv, env, ctx.directory, timeout_ms / 1000, ctx.abort, ctx.call_id)
        except client_io.ClientTerminalError as err:
            from etcode.contract.events import WarningEvent

            ctx.emit(WarningEvent(f"the editor could not run the command ({err}); running it here"))
        else:
            output = _clean(ran.output).rstrip("\n")
            if ran.truncated:
                output = "[... earlier output dropped by the editor ...]\n" + output
            return _Run(output, ran.exit_code, ran.timed_out, ran.interrupted, terminal_id=ran.terminal_id)
    return await _execute_here(argv, env, timeout_ms, ctx, launch)


async def _execute_here(
    argv: list[str], env: dict[str, str], timeout_ms: int, ctx: ToolContext, launch: Launch | None = None
) -> _Run:
    """Run ``argv`` in its own process group until it exits, times out or is interrupted
    (then the whole group is killed); its combined output, tail kept. ``launch``: the
    sandbox's descriptors to pass (its seccomp filter), closed here once started."""
    # A cancel during the start kills the whole group; from here to the ``try`` no await.
    try:
        proc = await start_process(
            *argv,
            cwd=str(ctx.directory),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            pass_fds=launch.pass_fds if launch is not None else (),
        )
    finally:
        if launch is not None:
            launch.started()
    collector = _Collector()
    assert proc.stdout is not None
    progress = OutputProgress(ctx.emit, ctx.call_id, "Bash")  # live output for front ends
    reader = asyncio.create_task(collector.read(proc.stdout, progress))
    waiter = asyncio.create_task(_wait_exit(proc, reader))
    aborter = asyncio.create_task(ctx.abort.wait())
    timed_out = interrupted = False
    try:
        done, _ = await asyncio.wait(
            {waiter, aborter}, timeout=timeout_ms / 1000, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            interrupted = aborter in done
            timed_out = not interrupted
            await kill_process_group(proc, KILL_GRACE_SECONDS)
            await waiter
    except asyncio.CancelledError:
        await asyncio.shield(kill_process_group(proc, KILL_GRACE_SECONDS))
        raise
    finally:
        aborter.cancel()
        waiter.cancel()
        if proc.returncode is None:
            await asyncio.shield(kill_process_group(proc, grace=0.2))
        try:
            await asyncio.wait_for(asyncio.shield(reader), DRAIN_SECONDS)
        except (TimeoutError, asyncio.CancelledError):
            reader.cancel()
            close_pipes(proc)
        progress.close()
        forget_if_gone(proc)
    exit_code = proc.returncode if proc.returncode is not None else -1
    return _Run(collector.text().rstrip("\n"), exit_code, timed_out, interrupted)


async def _outside_sandbox(
    params: BashParams,
    ctx: ToolContext,
    policy: SandboxPolicy,
    failed: _Run,
    env: dict[str, str],
    timeout_ms: int,
) -> tuple[_Run, str]:
    """A command the sandbox refused something: ask (``sandbox`` permission) to run it
    again without it. The model is told what happened either way."""
    limits = policy.describe(ctx.worktree)
    try:
        await ctx.check_permission(
            "sandbox",
            [params.command],
            # "via", not "tool": rules named after Bash are for commands, not for leaving the sandbox.
            {"via": "Bash", "command": params.command, "description": params.description, "reason": limits},
        )
    except PermissionDenied as refused:
        return failed, (
            f"[etcode] This ran in {limits}; the failure may come from that. Running it outside the "
            f"sandbox was not allowed ({refused}). If the task needs it, ask the user to run it or to allow it."
        )
    again = await _execute([_shell(), "-c", params.command], env, timeout_ms, ctx)
    again.unsandboxed = True
    inside = failed.output[-2000:]
    return again, (
        f"[etcode] It failed inside {limits} (exit {failed.exit_code}: {inside.strip()[-300:]!r}); "
        "the user allowed running it again outside the sandbox, and the output above is from that run."
    )


def _notes(run: _Run, timeout_ms: int, *more: str) -> list[str]:
    """What is said after the output: how the command ended (unless with 0), then ``more``."""
    notes: list[str] = []
    if run.timed_out:
        notes.append(f"Command timed out after {timeout_ms / 1000:g} s and was killed.")
    elif run.interrupted:
        notes.append("Command was interrupted by the user and killed.")
    elif run.exit_code != 0:
        notes.append(f"Exit code: {run.exit_code}")
    return notes + [note for note in more if note]


def _restored_note(restored: list[Path], worktree: Path) -> str:
    """The protected files the sandbox put back, if any."""
    if not restored:
        return ""
    names = ", ".join(
        str(path.relative_to(worktree)) if path.is_relative_to(worktree) else str(path) for path in restored
    )
    return f"[etcode] The sandbox put back {names}: a sandboxed command cannot replace the agents' config or instruction files."


def _data(run: _Run, description: str | None, policy: SandboxPolicy, output_path: str | None) -> JsonObject:
    """The result's data: how the command ended, where it ran, where its full output is."""
    data: JsonObject = {
        "exitCode": run.exit_code,
        "timedOut": run.timed_out,
        "interrupted": run.interrupted,
        "description": description,
    }
    if policy.active:
        data["sandbox"] = "outside" if run.unsandboxed else policy.mode
    if output_path:
        data["outputPath"] = output_path
    if run.terminal_id:
        data["terminalId"] = run.terminal_id
    return data


def _with_notes(output: str, notes: list[str]) -> str:
    """The output, a blank line, the notes; a command that said nothing says so."""
    if not notes:
        return output or "(Command completed with no output)"
    return output + ("\n\n" if output else "") + "\n".join(notes)


class BashTool(Tool):
    name = "Bash"
    description = (
        "Run a shell command (bash) in the working directory and return its combined "
        "stdout and stderr plus the exit code.\n"
        "- Use it for builds, tests, git, package managers and other programs. Do not use it to "
        "read, search or edit files: ReadFile, Grep, Glob and Edit are faster and safer.\n"
        f"- `timeout` is in milliseconds (default {DEFAULT_TIMEOUT_MS}, i.e. 2 minutes; max "
        f"{MAX_TIMEOUT_MS}). On timeout or interruption the command and every process it started "
        "are killed.\n"
        "- The command runs non-interactively (stdin is empty): pass flags such as `-y` or "
        "`--no-pager`, never start editors or prompts. Each call is a new shell: `cd` and "
        "exported variables do not carry over; chain commands with `&&`.\n"
        "- Quote paths containing spaces. A non-zero exit code is reported, not raised.\n"
        "- Environment variables that hold secrets (API keys, tokens, passwords) are not passed "
        "to commands.\n"
        "- Long output keeps its last part; the full output is saved to a file whose path is given.\n"
        "- Give `description`: a short summary of what the command does.\n"
        "- `run_in_background: true` starts a long-running command (a dev server, a test watcher) "
        "and returns at once with its id (`bash_1`…) and first output; `timeout` does not apply. "
        "Poll it with BashOutput, end it with KillBash; you are told when it exits. Do not add `&` "
        "to a command for this."
    )
    Params = BashParams
    is_read_only = False
    checks_permission = True

    async def run(self, params: BashParams, ctx: ToolContext) -> ToolResult:
        # The shell grammar, the environment policy and the sandbox load with the first command.
        from etcode.provider.spec import provider_key_names
        from etcode.security import sandbox
        from etcode.security.sandbox import SandboxPolicy
        from etcode.security.shell_env import ShellEnvPolicy
        from etcode.tools.command_permission import check_command

        await check_command(ctx, params.command, params.description, self.name)
        if params.run_in_background:
            from etcode.tools.bash_background import start_in_background

            return await start_in_background(params.command, params.description or "", ctx, _shell())
        timeout_ms = min(params.timeout or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
        env = (ctx.shell_env or ShellEnvPolicy(key_names=provider_key_names())).environment()
        policy = ctx.sandbox or SandboxPolicy()
        in_editor = client_io.client_terminal(ctx) is not None  # no descriptor can be passed there
        launch = sandbox.prepare(
            policy, params.command, _shell(), ctx.directory, ctx.worktree, pass_fds=not in_editor
        )
        try:
            run = await _execute(launch.argv, sandbox.environment(policy, env), timeout_ms, ctx, launch)
        finally:
            restored = launch.close()
        sandbox_note = ""
        if (
            policy.active
            and not (run.timed_out or run.interrupted)
            and sandbox.looks_refused(run.output, run.exit_code)
        ):
            run, sandbox_note = await _outside_sandbox(params, ctx, policy, run, env, timeout_ms)
        notes = _notes(run, timeout_ms, sandbox_note, _restored_note(restored, ctx.worktree))
        cut = await asyncio.to_thread(truncate_output, _with_notes(run.output, notes), direction="tail")
        data = _data(run, params.description, policy, cut.path)
        return ToolResult(cut.text, is_error=run.timed_out or run.interrupted, data=data)

    def params_summary(self, params: JsonObject) -> str:
        return shorten(str(params.get("command", "")))

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        if result.summary:
            return result.summary
        data = result.data or {}
        if data.get("background"):
            return f"started {data['background']} in the background"
        if "exitCode" not in data:
            return super().result_summary(params, result)
        if data.get("timedOut"):
            return "timed out, killed"
        if data.get("interrupted"):
            return "interrupted"
        if data["exitCode"] != 0:
            return f"exit {data['exitCode']}"
        lines = len(result.output.splitlines())
        if result.output == "(Command completed with no output)":
            return "Done"
        return plural(lines, "line") + " of output"
