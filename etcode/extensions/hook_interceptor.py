"""The hooks of a session, run at its events: an :class:`~etcode.engine.interception.Interceptor`
(``PreToolUse``, ``PostToolUse``, ``UserPromptSubmit``, ``SessionStart``, ``Stop``,
``PreCompact``) plus what happens outside a run (``SessionEnd``, ``PreCompact`` of a manual
compaction, ``Notification`` while a permission question waits: :class:`NotifyingAsker`).

Claude Code's contract: the event as JSON on stdin in its field names; exit 0 passes (the
stdout of ``UserPromptSubmit``/``SessionStart`` is added as context), exit 2 blocks
(stderr is the reason), any other code is a warning; a JSON stdout may say more
(``hookSpecificOutput.permissionDecision``/``additionalContext``/``updatedInput``, the older
``decision: block|approve`` with ``reason``, ``continue: false`` with ``stopReason``,
``systemMessage``). Each hook that ran is a :class:`~etcode.contract.events.HookRun` event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from etcode.contract.events import Event, HookRun
from etcode.engine.interception import PROCEED, Decision, StopRun
from etcode.extensions.hook_runner import HookOutcome, run_hook
from etcode.extensions.hook_set import CLAUDE_TOOL_NAMES, HookCommand, HookSet, project_dir
from etcode.provider.types import TextPart
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.config.schema import HookEventName
    from etcode.contract.results import AgentResult
    from etcode.permission.service import Asker, PermissionRequest
    from etcode.permission.service import Decision as Answer
    from etcode.provider.types import Message, ToolCallPart, ToolResultPart
    from etcode.security.shell_env import ShellEnvPolicy

#: The tools whose file a PostToolUse hook may change again (undo is told: ``_rewritten``).
_WRITE_TOOLS = ("WriteFile", "Edit")
#: The arguments Claude Code's tools name otherwise, by tool (``tool_input`` uses its names;
#: an ``updatedInput`` may use either).
_CLAUDE_ARGUMENTS: dict[str, dict[str, str]] = {"Skill": {"name": "skill"}, "Grep": {"include": "glob"}}
#: ``ReadManyFiles`` runs the hooks of ``ReadFile`` (Claude Code's ``Read``) for each path.
_READ_MANY, _READ_ONE = "ReadManyFiles", "ReadFile"
#: The arguments that name a file or folder (made absolute for hooks).
_PATH_KEYS = ("file_path", "path", "notebook_path")
#: How long ``SessionEnd`` (and the notifications still running then) may hold up the end of a
#: session, whatever their own time limit: quitting must not hang on them.
SESSION_END_SECONDS = 5.0
#: The events before whose hooks the transcript file is written again (once a turn or so).
_TRANSCRIPT_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
#: The events whose plain stdout (exit 0) is context for the model.
_CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")


@dataclass
class Verdict:
    """What the hooks of one event said together."""

    block: list[str] = field(default_factory=list)
    permission: Literal["allow", "ask"] | None = None
    context: list[str] = field(default_factory=list)
    stop: str | None = None
    arguments: JsonObject | None = None


class HookInterceptor:
    """A session's hooks (one per :class:`~etcode.api.Agent`; each run attaches its event
    sink). ``source`` is the ``SessionStart`` source the next turn starts with (``startup``,
    ``resume``, ``clear``, ``compact``), None when the session already started."""

    def __init__(
        self,
        hooks: HookSet,
        *,
        session_id: str,
        directory: Path,
        worktree: Path,
        shell_env: ShellEnvPolicy | None,
        source: str | None = "startup",
        state: Callable[[], dict[str, object]] = dict,
        permission_mode: Callable[[], str] = lambda: "default",
        transcript: Callable[[], list[Message]] | None = None,
        transcript_path: Path | None = None,
    ) -> None:
        self.hooks = hooks
        self.session_id = session_id
        self.directory = directory
        self.worktree = worktree
        self.shell_env = shell_env
        self.source = source
        #: The session's tool state (its undo recorder: what a hook leaves in a file it is told).
        self.state = state
        #: Claude Code's ``permission_mode`` of the turn at hand (``default``, ``plan``,
        #: ``bypassPermissions``).
        self.permission_mode = permission_mode
        #: The session's messages so far, written to ``transcript_path`` (JSON Lines) before
        #: the hooks of a turn's events (not before each tool call's: see ``_TRANSCRIPT_EVENTS``).
        self.transcript = transcript
        self.transcript_path = transcript_path
        #: A turn ran since the session (re)started: ``SessionEnd`` is due at the end.
        self.started = False
        self._emit: Callable[[Event], None] | None = None
        self._pending: list[Event] = []
        self._background: set[asyncio.Task[object]] = set()
        self._ending: asyncio.Task[object] | None = None

    # ---- the run's event sink ---------------------------------------------------------
    def attach(self, emit: Callable[[Event], None] | None) -> None:
        """Send hook events to ``emit`` from now on (those made before go first)."""
        self._emit = emit
        if emit is not None:
            pending, self._pending = self._pending, []
            for event in pending:
                emit(event)

    def _show(self, event: Event) -> None:
        if self._emit is not None:
            self._emit(event)
        else:
            self._pending.append(event)

    # ---- the interceptor --------------------------------------------------------------
    async def before_turn(self, prompt: Message) -> Message:
        ending, self._ending = self._ending, None
        if ending is not None:  # ``/clear``'s SessionEnd comes before this turn's SessionStart
            await asyncio.gather(ending, return_exceptions=True)
        context: list[str] = []
        self.started = True
        if self.source is not None:
            source, self.source = self.source, None
            verdict = await self._event("SessionStart", {"source": source}, subject=source)
            context += verdict.context
        verdict = await self._event("UserPromptSubmit", {"prompt": prompt.text})
        if verdict.stop is not None:
            raise StopRun(verdict.stop)
        if verdict.block:
            raise StopRun("the prompt was blocked by a UserPromptSubmit hook: " + " ".join(verdict.block))
        context += verdict.context
        if not context:
            return prompt
        # A blank line before each: the wire formats join a message's text parts as they are.
        return replace(prompt, parts=[*prompt.parts, *(TextPart(f"\n\n{text}") for text in context)])

    async def before_tool(self, call: ToolCallPart) -> Decision:
        if not self.hooks.commands_for("PreToolUse", call.name) and not self._read_hooks("PreToolUse", call):
            return PROCEED
        arguments = _arguments(call)
        verdict = await self._tool_event(
            "PreToolUse",
            call,
            arguments,
            {"tool_name": self.hooks.claude_name(call.name), "tool_input": self._tool_input(call, arguments)},
        )
        if verdict.stop is not None:
            raise StopRun(verdict.stop)
        if verdict.block:
            return Decision.block("\n".join(verdict.block))
        context = "\n\n".join(verdict.context)
        if verdict.arguments is not None:
            return Decision(
                "replace",
                arguments={**arguments, **_etcode_names(call.name, verdict.arguments)},
                permission=verdict.permission,
                context=context,
            )
        if verdict.permission or context:
            return Decision(permission=verdict.permission, context=context)
        return PROCEED

    async def after_tool(self, call: ToolCallPart, result: ToolResultPart) -> ToolResultPart:
        if result.is_error or not (
            self.hooks.commands_for("PostToolUse", call.name) or self._read_hooks("PostToolUse", call)
        ):
            return result  # as Claude Code: PostToolUse follows a call that succeeded
        arguments = _arguments(call)
        verdict = await self._tool_event(
            "PostToolUse",
            call,
            arguments,
            {
                "tool_name": self.hooks.claude_name(call.name),
                "tool_input": self._tool_input(call, arguments),
                "tool_response": self._response(call, result),
            },
        )
        await self._rewritten(call)
        if verdict.stop is not None:
            raise StopRun(verdict.stop)
        notes = [*verdict.block, *verdict.context]
        if not notes:
            return result
        return replace(result, output="\n\n".join([result.output, *notes]))

    def _read_hooks(self, event: HookEventName, call: ToolCallPart) -> list[HookCommand]:
        """The ``Read`` hooks a ``ReadManyFiles`` call also runs (once per path it names):
        a guard on Claude Code's ``Read`` must see every file read, whatever the tool."""
        if call.name != _READ_MANY:
            return []
        return self.hooks.commands_for(event, _READ_ONE)

    async def _tool_event(
        self, event: HookEventName, call: ToolCallPart, arguments: JsonObject, fields: JsonObject
    ) -> Verdict:
        """The hooks of a tool event; for ``ReadManyFiles`` also the ``Read`` hooks, once per
        entry of ``paths`` with a Read-shaped input (``{"file_path": ...}``, tool ``Read``):
        any block blocks the whole call."""
        fields = {**fields, "tool_use_id": call.id}
        reads = self._read_hooks(event, call)
        once = [c for c in self.hooks.commands_for(event, call.name) if c not in reads]
        verdict = await self._event(event, fields, subject=call.name, call=call, commands=once)
        paths = arguments.get("paths")
        answers: list[str | None] = []
        for path in paths if reads and isinstance(paths, list) else []:
            if not isinstance(path, str):
                continue
            read_input = self._absolute({"file_path": path})
            one = await self._event(
                event,
                {**fields, "tool_name": claude_name(_READ_ONE), "tool_input": read_input},
                subject=call.name,
                call=call,
                commands=reads,
            )
            verdict.block += [f"{reason} (reading {read_input['file_path']})" for reason in one.block]
            verdict.context += one.context
            verdict.stop = verdict.stop or one.stop
            answers.append(one.permission)
        # The call's permission question is one for all its paths: an "ask" for any path asks;
        # an "allow" answers it only when the Read hooks allowed every path.
        if "ask" in answers:
            verdict.permission = "ask"
        elif answers and verdict.permission is None and all(answer == "allow" for answer in answers):
            verdict.permission = "allow"
        return verdict

    async def after_turn(self, result: AgentResult) -> None:
        return None

    def _response(self, call: ToolCallPart, result: ToolResultPart) -> JsonObject:
        """``tool_response`` in Claude Code's shape where etcode has it (Bash: ``stdout``,
        ``stderr``, ``interrupted``; Write/Edit: ``filePath``); always ``output``, ``success``."""
        response: JsonObject = {"output": result.output, "success": True}
        data = result.data or {}
        if call.name == "Bash":  # etcode's Bash reads stderr into stdout, as a terminal shows them
            response.update(stdout=result.output, stderr="", interrupted=bool(data.get("interrupted")))
            response["isImage"] = False
        elif call.name in _WRITE_TOOLS:
            path = self._absolute(_arguments(call)).get("file_path")
            if isinstance(path, str):
                response["filePath"] = path
        return response

    async def before_stop(self, active: bool) -> str | None:
        verdict = await self._event("Stop", {"stop_hook_active": active})
        if verdict.stop is not None or not verdict.block:  # continue: false lets it stop
            return None
        from etcode.prompt.templates import load, render

        return render(load("hooks/stop.txt"), {"reason": "\n".join(verdict.block)}).strip()

    async def before_compact(self, trigger: str) -> None:
        trigger = "manual" if trigger == "manual" else "auto"
        await self._event("PreCompact", {"trigger": trigger, "custom_instructions": ""}, subject=trigger)
        self.source = "compact"  # the next turn starts with SessionStart(compact)

    # ---- outside a run -----------------------------------------------------------------
    async def session_end(self, reason: str) -> None:
        """``SessionEnd`` (after the notifications still running: all bounded), when a turn
        ran; a later turn starts the session again (``SessionStart`` with ``resume``)."""
        await self.drain(SESSION_END_SECONDS)
        if not self.started:
            return
        self.started = False
        self.source = "resume"
        await self._event("SessionEnd", {"reason": reason}, cap=SESSION_END_SECONDS)

    def notify(self, message: str) -> None:
        """``Notification``, in the background (awaited by :meth:`drain`)."""
        if not self.hooks.commands_for("Notification"):
            return
        task: asyncio.Task[object] = asyncio.ensure_future(self._notify(message))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _notify(self, message: str) -> None:
        await self._event("Notification", {"message": message})

    def cleared(self) -> None:
        """``/clear``: ``SessionEnd`` (reason ``clear``) now, in the background when a loop
        runs (awaited before the next turn's hooks), and ``SessionStart`` (``clear``) with
        the next turn."""
        self.source = "clear"
        if not self.started:
            return
        self.started = False
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (a plain ``agent.clear()`` from ordinary code): no SessionEnd now
            return
        ending = self._event("SessionEnd", {"reason": "clear"}, cap=SESSION_END_SECONDS)
        task: asyncio.Task[object] = asyncio.ensure_future(ending)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        self._ending = task

    async def drain(self, seconds: float | None = None) -> None:
        """Wait for the background hooks (each ends at its own time limit; those still
        running after ``seconds`` are stopped, their process groups killed)."""
        if not self._background:
            return
        running = set(self._background)
        _, late = await asyncio.wait(running, timeout=seconds)
        for task in late:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    # ---- running and reading hooks --------------------------------------------------------
    async def _event(
        self,
        event: HookEventName,
        fields: JsonObject,
        *,
        subject: str | None = None,
        call: ToolCallPart | None = None,
        cap: float | None = None,
        commands: list[HookCommand] | None = None,
    ) -> Verdict:
        if commands is None:
            commands = self.hooks.commands_for(event, subject)
        if not commands:
            return Verdict()
        if cap is not None:  # a shorter limit than the hooks' own (SessionEnd)
            commands = [replace(c, timeout=min(c.timeout, cap)) for c in commands]
        payload: JsonObject = {
            "session_id": self.session_id,
            "transcript_path": await self._transcript(event),
            "cwd": str(self.directory),
            "permission_mode": self.permission_mode(),
            "hook_event_name": event,
            **fields,
        }
        outcomes = await asyncio.gather(*(self._run(command, payload) for command in commands))
        verdict = Verdict()
        for outcome in outcomes:
            self._show(_read(event, outcome, verdict, call))
        return verdict

    async def _transcript(self, event: str) -> str:
        """``transcript_path``: the session's messages as JSON Lines, written before the hooks
        of a turn's events; a tool call's hooks get the file as the turn started."""
        path = self.transcript_path
        if path is None or self.transcript is None:
            return ""
        if event in _TRANSCRIPT_EVENTS or not path.exists():
            messages = list(self.transcript())
            await asyncio.to_thread(_write_transcript, path, messages)
        return str(path)

    async def _run(self, command: HookCommand, payload: JsonObject) -> HookOutcome:
        from etcode.security.shell_env import ShellEnvPolicy

        env = (self.shell_env or ShellEnvPolicy()).environment()
        env["CLAUDE_PROJECT_DIR"] = env["ETCODE_PROJECT_DIR"] = str(project_dir(command, self.worktree))
        return await run_hook(command, payload, cwd=self.directory, env=env)

    async def _rewritten(self, call: ToolCallPart) -> None:
        """A file WriteFile/Edit wrote, maybe changed again by a hook (a formatter): undo takes
        what is there now as etcode's (it still restores the file as it was before the call)."""
        if call.name not in _WRITE_TOOLS:
            return
        from etcode.tools.snapshot import STATE_KEY, WriteFollower

        recorder = self.state().get(STATE_KEY)
        path = self._absolute(_arguments(call)).get("file_path")
        if isinstance(recorder, WriteFollower) and isinstance(path, str):
            with contextlib.suppress(Exception):  # costs undo its check only, as in the tools
                await recorder.after_write(Path(path))

    def _tool_input(self, call: ToolCallPart, arguments: JsonObject) -> JsonObject:
        """``tool_input``: the arguments in Claude Code's names, file paths absolute."""
        renamed = _CLAUDE_ARGUMENTS.get(call.name, {})
        return self._absolute({renamed.get(key, key): value for key, value in arguments.items()})

    def _absolute(self, arguments: JsonObject) -> JsonObject:
        """The arguments with their file paths absolute, as Claude Code gives them to hooks."""
        shown = dict(arguments)
        for key in _PATH_KEYS:
            value = shown.get(key)
            if isinstance(value, str) and value and not value.startswith(("/", "~")):
                shown[key] = str(self.directory / value)
        return shown


class NotifyingAsker:
    """An :class:`~etcode.permission.service.Asker` that runs the ``Notification`` hooks
    while its question waits for an answer."""

    def __init__(self, inner: Asker, hooks: HookInterceptor) -> None:
        self.inner = inner
        self.hooks = hooks

    async def ask(self, request: PermissionRequest) -> Answer:
        what = request.tool or request.permission
        self.hooks.notify(f"etcode needs your permission to use {what}")
        return await self.inner.ask(request)


def _write_transcript(path: Path, messages: list[Message]) -> None:
    """The messages as JSON Lines (``{"type": role, "message": <OpenAI Chat message>}``),
    in a folder only the user can read; a failure leaves the file as it was."""
    import json
    import os

    from etcode.provider.chat_client import messages_to_openai

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lines = [
            json.dumps({"type": item.get("role"), "message": item}) + "\n"
            for item in messages_to_openai(messages)
        ]
        temporary = path.with_suffix(".tmp")
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.writelines(lines)
        os.replace(temporary, path)
    except (OSError, ValueError, TypeError):
        pass


def claude_name(tool: str) -> str:
    """A tool's name as Claude Code's hooks know it (``WriteFile`` → ``Write``)."""
    return CLAUDE_TOOL_NAMES.get(tool, tool)


def _etcode_names(tool: str, arguments: JsonObject) -> JsonObject:
    """A hook's ``updatedInput`` in etcode's argument names (it may use Claude Code's)."""
    back = {claude: ours for ours, claude in _CLAUDE_ARGUMENTS.get(tool, {}).items()}
    return {back.get(key, key): value for key, value in arguments.items()}


def _arguments(call: ToolCallPart) -> JsonObject:
    try:
        return call.parsed_arguments()
    except ValueError:
        return {}


def _read(event: str, outcome: HookOutcome, verdict: Verdict, call: ToolCallPart | None) -> HookRun:
    """Add what one hook said to ``verdict``; the event that shows it."""
    named = f"{event} hook ({outcome.label})"
    shown = HookRun(event, outcome.label, "ok", outcome.exit_code)
    if call is not None:
        shown.tool, shown.call_id = call.name, call.id
    if outcome.exit_code is None:
        shown.outcome = "timeout" if outcome.timed_out else "failed"
        shown.message = outcome.error
        return shown
    stderr = outcome.stderr.strip()
    if outcome.exit_code == 2:
        reason = stderr or "blocked (exit code 2)"
        verdict.block.append(f"{named}: {reason}")
        shown.outcome, shown.message = "blocked", reason
        return shown
    if outcome.exit_code != 0:
        shown.outcome = "failed"
        first = stderr.splitlines()[0] if stderr else ""
        shown.message = f"exit code {outcome.exit_code}" + (f": {first}" if first else "")
        return shown
    data = outcome.data
    if data is None:
        text = outcome.stdout.strip()
        if text and event in _CONTEXT_EVENTS:
            verdict.context.append(_context(event, text))
        return shown
    _read_json(event, named, data, verdict, shown)
    return shown


def _read_json(event: str, named: str, data: JsonObject, verdict: Verdict, shown: HookRun) -> None:
    message = data.get("systemMessage")
    if isinstance(message, str):
        shown.message = message
    if data.get("continue") is False:
        reason = data.get("stopReason")
        stop = reason if isinstance(reason, str) and reason else f"stopped by {named}"
        verdict.stop = stop
        shown.outcome, shown.message = "blocked", stop
        return
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision = specific.get("permissionDecision") if event == "PreToolUse" else None
    reason_value = specific.get("permissionDecisionReason") or data.get("reason")
    reason = reason_value if isinstance(reason_value, str) else ""
    old = data.get("decision")
    if decision is None and old in ("block", "approve"):
        decision = "deny" if old == "block" else "allow"
    if decision == "deny":
        verdict.block.append(f"{named}: {reason or 'denied'}")
        shown.outcome, shown.message = "blocked", reason or "denied"
    elif decision == "ask":
        verdict.permission = "ask"
    elif decision == "allow" and verdict.permission is None:
        verdict.permission = "allow"
    updated = specific.get("updatedInput")
    if event == "PreToolUse" and isinstance(updated, dict):
        verdict.arguments = {**(verdict.arguments or {}), **updated}
    extra = specific.get("additionalContext")
    if isinstance(extra, str) and extra.strip():
        verdict.context.append(_context(event, extra.strip()))


def _context(event: str, text: str) -> str:
    from etcode.prompt.templates import load, render

    return render(load("hooks/context.txt"), {"event": event, "text": text}).strip()
