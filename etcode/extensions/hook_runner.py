"""Run one hook command: ``bash -c`` (or ``sh -c``) in the given folder, the event as JSON
on stdin, the same environment as a Bash call (``ShellEnvPolicy``), as the user (hooks are
the user's own code: never sandboxed), in its own process group that is killed at its time
limit and at the end, whatever it left running. Output is capped; nothing blocks the loop.

A hook is done when its own process exits (its output read for a short grace after); a child
that left the group (``setsid``, a daemon) is beyond the group kill and keeps running: the
group is the contract, as for Bash calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from etcode.extensions.hook_set import HookCommand
from etcode.util.json_types import JsonObject
from etcode.util.process_group import close_pipes, group_alive, kill_group, start_process

#: What is kept of a hook's stdout and of its stderr (the rest is read and dropped).
OUTPUT_CAP = 64 * 1024
#: How long the output a hook wrote just before it exited may take to be read (the pipes stay
#: open while a child it left running holds them; that child is killed with the group).
_READ_GRACE = 0.5
#: How long the end of a group may take to disappear once killed.
_REAP_SECONDS = 5.0
#: Programs whose first argument (a script) names the hook better than they do.
_INTERPRETERS = frozenset({"python", "python3", "bash", "sh", "zsh", "node", "bun", "deno", "ruby", "perl"})


@dataclass(frozen=True)
class HookOutcome:
    """What one hook did. ``exit_code`` is None when it timed out or could not start
    (``error`` says why); ``data`` is its stdout read as a JSON object, when it is one."""

    command: HookCommand
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    data: JsonObject | None = None
    timed_out: bool = False
    error: str = ""

    @property
    def label(self) -> str:
        return hook_label(self.command.command)


def hook_label(command: str) -> str:
    """A short name for a hook's command line: ``ruff format`` for ``ruff format "$F"``,
    ``fmt.py`` for ``python3 .claude/hooks/fmt.py``. Of a pipeline or a list, the last
    command that does the work: ``cd "$D" && ruff format .`` and ``jq -r … | xargs ruff
    format`` are ``ruff format`` (``cd``, ``jq``, ``echo``, ``exit``… are plumbing; with
    only those, the first command names it)."""
    segments = _segments(command)
    if not segments:
        return command.strip()[:40]
    for words in reversed(segments):
        if words[0] == "xargs":  # the command xargs runs
            words = words[1:]
            while words and (words[0].startswith("-") or words[0].isdigit()):  # ``-n 1``
                words = words[1:]
            if not words:
                continue
        if (os.path.basename(words[0]) or words[0]) not in _PLUMBING:
            return _label(words)
    return _label(segments[0])


#: Commands that move data or control along in a hook's line, not what the hook is about.
_PLUMBING = frozenset({"cd", "jq", "cat", "echo", "printf", "exit", "true", "false", "test", "[", "read", "export", "set", "tee", "xargs", "}", "{", "!"})  # fmt: skip
#: What separates the commands of a line (``shlex``'s punctuation tokens).
_SEPARATORS = frozenset({"&&", "||", "|", ";", "&", ";;", "|&", "(", ")", ";&"})


def _segments(command: str) -> list[list[str]]:
    """The simple commands of ``command`` (their words, without assignments, redirections,
    ``{``/``!``): plain string logic over ``shlex``'s tokens, no shell grammar."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    segments: list[list[str]] = []
    words: list[str] = []
    redirected = False
    for token in [*tokens, ";"]:
        if token in _SEPARATORS:
            if words:
                segments.append(words)
            words, redirected = [], False
        elif redirected or set(token) <= set("<>&"):
            redirected = True  # the rest of this command is its redirections
            if words and words[-1].isdigit():
                words.pop()  # ``2>``'s 2
        elif not words and (token in ("{", "!") or ("=" in token and token.split("=", 1)[0].isidentifier())):
            continue
        else:
            words.append(token)
    return segments


def _label(words: list[str]) -> str:
    program = os.path.basename(words[0]) or words[0]
    rest = words[1:]
    if program in _INTERPRETERS and rest and not rest[0].startswith("-"):
        return os.path.basename(rest[0])[:40]
    word = next((w for w in rest if not w.startswith("-")), "")  # its first non-option word
    if word.replace("-", "").isalpha():
        return f"{program} {word}"[:40]
    return program[:40]


@cache
def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


async def run_hook(
    command: HookCommand, payload: JsonObject, *, cwd: Path, env: Mapping[str, str]
) -> HookOutcome:
    """Run ``command`` with ``payload`` on stdin; never raises for the hook's own failures
    (a start that fails, a time limit, an exit code: all in the outcome)."""
    data = json.dumps(payload).encode()
    try:
        proc = await start_process(
            _shell(),
            "-c",
            command.command,
            cwd=str(cwd),
            env=dict(env),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as failed:
        return HookOutcome(command, None, error=f"could not start: {failed.strerror or failed}")
    except ValueError as failed:  # a NUL byte in the command line or the environment
        return HookOutcome(command, None, error=f"could not start: {failed}")
    out, err = bytearray(), bytearray()
    feeding = asyncio.ensure_future(_feed(proc, data))
    readers = [
        asyncio.ensure_future(_read_capped(proc.stdout, out)),
        asyncio.ensure_future(_read_capped(proc.stderr, err)),
    ]
    try:
        # The hook's own exit decides, not the end of its output: a child it left running
        # (`sleep 30 &`) may hold the pipes open; it goes with the group below.
        try:
            code = await asyncio.wait_for(_exit_code(proc), command.timeout)
        except TimeoutError:
            return HookOutcome(command, None, timed_out=True, error=f"timed out after {command.timeout:g} s")
        await asyncio.wait(readers, timeout=_READ_GRACE)  # what it wrote just before it ended
        stdout = out.decode(errors="replace")
        return HookOutcome(command, code, stdout, err.decode(errors="replace"), _json_object(stdout))
    finally:
        feeding.cancel()
        kill_group(proc.pid)  # whatever it left running (a `sleep &`) goes with it
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        await _reap(proc)
        close_pipes(proc)


async def _exit_code(proc: asyncio.subprocess.Process) -> int:
    """The hook's exit code as soon as it exits (``proc.wait()`` also waits for the end of its
    output pipes, which a child it left behind may hold open)."""
    pause = 0.001
    while proc.returncode is None:
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.02)
    return proc.returncode


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """The event on stdin; a hook that does not read it is fine."""
    stdin = proc.stdin
    if stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(Exception):
        stdin.close()


async def _read_capped(stream: asyncio.StreamReader | None, kept: bytearray) -> None:
    """Everything the hook writes, keeping the first :data:`OUTPUT_CAP` bytes in ``kept``."""
    if stream is None:
        return
    while chunk := await stream.read(65536):
        if len(kept) < OUTPUT_CAP:
            kept += chunk[: OUTPUT_CAP - len(kept)]


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Wait (bounded, despite cancels) for the leader and its group to be gone."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _REAP_SECONDS
    cancelled = False
    while loop.time() < deadline and (proc.returncode is None or group_alive(proc.pid)):
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def _json_object(text: str) -> JsonObject | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
