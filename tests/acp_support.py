"""A scripted ACP client on the Python SDK's client side (``acp.spawn_agent_process``,
``ClientSideConnection``): it starts ``python -m etcode acp`` as a subprocess, records every
``session/update``, answers permission requests as told and, when it offers them, serves
``fs/*`` and ``terminal/*`` from real files and real processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

REPO = Path(__file__).resolve().parent.parent
#: Long enough for a loaded CI box; a healthy run takes well under a second per step.
STEP_TIMEOUT = 60.0


@dataclass
class _Terminal:
    proc: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reader: asyncio.Task[None] | None = None


class RecordingClient:
    """The client half. ``answers`` are permission option kinds used in turn
    (``allow_once``, ``allow_always``, ``reject_once``, ``cancel``); ``buffers`` are
    "unsaved editor buffers" served by ``fs/read_text_file`` instead of the disk."""

    def __init__(self, answers: list[str] | None = None, buffers: dict[str, str] | None = None) -> None:
        self.answers = list(answers or [])
        self.buffers = dict(buffers or {})
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[Any] = []
        self.fs_calls: list[tuple[str, str]] = []
        self.terminals: dict[str, _Terminal] = {}
        self.terminal_commands: list[list[str]] = []
        self.update_seen = asyncio.Event()
        self.permission_asked = asyncio.Event()

    # ---- what the agent sends
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if update.session_update != "available_commands_update":  # sent on its own after session/new
            self.update_seen.set()

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append(tool_call)
        self.permission_asked.set()
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if answer == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        if answer == "hold":  # never answer: the turn must end on session/cancel
            await asyncio.Event().wait()
        chosen = next(option for option in options if option.kind == answer)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> ReadTextFileResponse:
        self.fs_calls.append(("read", path))
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.fs_calls.append(("write", path))
        self.buffers[path] = content
        Path(path).write_text(content, encoding="utf-8")
        return WriteTextFileResponse()

    async def create_terminal(
        self, command: str, session_id: str, args: list[str] | None = None, env: Any = None, cwd: str | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:  # fmt: skip
        argv = [command, *(args or [])]
        self.terminal_commands.append(argv)
        environment = {item.name: item.value for item in env or []}
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=environment or None, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        terminal = _Terminal(proc)

        async def read() -> None:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(4096):
                terminal.output += chunk

        terminal.reader = asyncio.ensure_future(read())
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        code = await terminal.proc.wait()
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        if terminal.proc.returncode is not None and terminal.reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(terminal.reader, 10)
        status = None
        if terminal.proc.returncode is not None:
            status = TerminalExitStatus(exit_code=terminal.proc.returncode)
        return TerminalOutputResponse(
            output=terminal.output.decode(errors="replace"), truncated=False, exit_status=status
        )

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        terminal = self.terminals[terminal_id]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(terminal.proc.pid, 9)
        await terminal.proc.wait()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        return ReleaseTerminalResponse()

    def on_connect(self, conn: Any) -> None:
        pass

    # ---- reading what was recorded
    def kinds(self) -> list[str]:
        return [update.session_update for _, update in self.updates]

    def of_kind(self, kind: str) -> list[Any]:
        return [update for _, update in self.updates if update.session_update == kind]

    def message_text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(update.content.text for update in self.of_kind(kind))

    def tool_updates(self, call_id: str | None = None) -> list[Any]:
        found = [u for u in self.of_kind("tool_call_update") if call_id is None or u.tool_call_id == call_id]
        return found


def agent_env() -> dict[str, str]:
    """The test's environment (its HOME and XDG folders) with this repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def capabilities(fs: bool = False, terminal: bool = False) -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal
    )


@contextlib.asynccontextmanager
async def acp_agent(
    client: RecordingClient, cwd: Path, *args: str, stderr_path: Path | None = None
) -> AsyncIterator[tuple[Any, asyncio.subprocess.Process]]:
    """``python -m etcode acp ARGS`` in ``cwd`` with ``client`` connected to it."""
    log = open(stderr_path or (cwd.parent / "acp-stderr.log"), "ab")  # noqa: SIM115 - closed below
    try:
        async with acp.spawn_agent_process(
            client, sys.executable, "-m", "etcode", "acp", *args, env=agent_env(), cwd=cwd,
            transport_kwargs={"stderr": log, "shutdown_timeout": 20.0},
        ) as (conn, proc):  # fmt: skip
            yield conn, proc
    finally:
        log.close()


async def step(awaitable: Any, timeout: float = STEP_TIMEOUT) -> Any:
    """One request to the agent, with a limit so a broken agent fails the test, not hangs it."""
    return await asyncio.wait_for(awaitable, timeout)
