"""``etcode run``: one task, headless. The answer goes to stdout, progress to stderr;
``--format json`` writes JSON Lines. Exit codes: 0 done, 1 failed (or the answer was cut at
the output limit), 2 usage, 130 interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from etcode.util.errors import UsageError

if TYPE_CHECKING:
    from etcode.api import Agent
    from etcode.config.schema import Config
    from etcode.contract.events import Event
    from etcode.extensions.command_expansion import Expansion
    from etcode.provider.types import ImagePart
    from etcode.session.store import SessionStore
    from etcode.ui.command_prompts import TurnChoice
    from etcode.ui.jsonl import JsonLinesRenderer
    from etcode.ui.plain import PlainRenderer

FORMATS = ("text", "json")
#: How long the end of a run waits for the session database to close (seconds).
STORE_CLOSE_SECONDS = 10.0


@dataclass
class RunOptions:
    message: str
    model: str | None = None
    agent: str | None = None
    output_format: str = "text"
    max_steps: int | None = None
    yes: bool = False
    trust: bool = False
    debug: bool = False
    directory: Path | None = None
    continue_last: bool = False
    session: str | None = None
    fork: bool = False
    sandbox: str | None = None
    #: The message's words as given (``etcode run /review a.py "x y"``): a command's
    #: arguments are read from them, quotes kept.
    words: list[str] | None = None
    #: ``--image PATH`` (repeatable): images sent with the task.
    images: list[str] = field(default_factory=list)


def read_task(message: str, stdin: IO[str] | None = None) -> str:
    """The task: the message, plus stdin's text when stdin is not a terminal."""
    from etcode.util.text import clean_text

    stdin = sys.stdin if stdin is None else stdin
    piped = ""
    if stdin is not None and not _is_tty(stdin):
        piped = _read_piped(stdin)
    message = clean_text(message).strip()  # argv bytes that are not UTF-8 arrive as surrogates
    if piped.strip():
        return f"{message}\n\n{piped.rstrip()}" if message else piped.rstrip()
    if not message:
        raise UsageError('no task given: etcode run "what to do" (or pipe text on stdin)')
    return message


def _read_piped(stdin: IO[str]) -> str:
    """All of stdin as text; bytes that are not UTF-8 become U+FFFD (a diff with a Latin-1
    line must not end the run, nor be dropped)."""
    from etcode.util.text import clean_text, decode_bytes

    try:
        buffer = getattr(stdin, "buffer", None)
        return decode_bytes(buffer.read()) if buffer is not None else clean_text(stdin.read())
    except (OSError, ValueError):
        return ""


def _is_tty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def exit_code_for(stop_reason: str) -> int:
    if stop_reason == "end_turn":
        return 0  # a cut answer (max_tokens) is not done: a script must not take it as such
    if stop_reason == "interrupted":
        return 130
    return 1


def run_command(options: RunOptions) -> int:
    if options.output_format not in FORMATS:
        raise UsageError(f'--format must be one of {", ".join(FORMATS)}, not "{options.output_format}"')
    from etcode.config.loader import env_debug
    from etcode.security.hardening import harden_process
    from etcode.util.memory import keep_freed_memory

    harden_process()  # the model's commands cannot read this process's keys (/proc/PID/environ)
    keep_freed_memory()
    if options.debug or env_debug():
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="[%(name)s] %(message)s")
        logging.getLogger("httpx").setLevel(logging.INFO)
        logging.getLogger("httpcore").setLevel(logging.WARNING)
        from etcode.security.redact import install_log_redaction

        install_log_redaction()  # API keys never reach the debug log (httpx's or ours)
    if options.fork and not (options.continue_last or options.session):
        raise UsageError("--fork needs --continue or --session ID (the session to copy)")
    if options.continue_last and options.session:
        raise UsageError("give either --continue or --session ID, not both")
    from etcode.security.sandbox import check_flag

    check_flag(options.sandbox)
    task = read_task(options.message)
    from etcode.util.runner import run_to_end

    return run_to_end(_run(task, options))


async def _run(task: str, options: RunOptions) -> int:
    from etcode.config.loader import load_config
    from etcode.instance import Instance

    directory = options.directory or Path.cwd()
    images = await _flag_images(options.images, directory)
    with Instance.provide(directory) as instance:
        flags = {
            "model": options.model,
            "max_steps": options.max_steps,
            "agent": options.agent,
            "sandbox": options.sandbox,
        }
        config = load_config(instance.directory, instance.worktree, flags=flags)
        _check_trust(config, options)
        from etcode.security.redact import register_config

        register_config(config)  # output, errors and logs redact its keys from here on
        from etcode.session.store import SessionStore

        store = SessionStore.open()
        try:
            return await _run_agent(
                task, options, config, (instance.directory, instance.worktree), store, images
            )
        finally:
            # closed here, not left to the collector: the last connection's close folds the
            # write-ahead log back into the database (a close stuck on a hung disk is left
            # to the runner, which ends the process without it)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.to_thread(store.close), STORE_CLOSE_SECONDS)


async def _flag_images(paths: list[str], directory: Path) -> list[ImagePart]:
    """The ``--image`` files read (none: nothing imported); one that is missing or not an
    image is a usage error naming the flag and the file."""
    if not paths:
        return []
    from etcode.prompt.image_inputs import load_images
    from etcode.provider.images import ImageError

    try:
        return await load_images(paths, directory)
    except ImageError as err:
        raise UsageError(f"--image {err}") from None


def _image_mentions(task: str, directory: Path, trusted: bool, worktree: Path) -> tuple[str, list[ImagePart]]:
    """The task's ``@image.png`` mentions as images (the task keeps a line naming each), with
    a warning on stderr for one not attached. Blocking (reads the files)."""
    from etcode.prompt.mentions import find_mentions

    mentions = [mention for mention in find_mentions(task) if _image_suffix(mention)]
    if not mentions:
        return task, []
    from etcode.prompt.mentions import attach, images_of, resolve_mentions

    attachments = resolve_mentions(" ".join(f"@{m}" for m in mentions), directory, trusted, worktree)
    for item in attachments:
        if item.image is None:
            sys.stderr.write(f"warning: @{item.path}: {item.note}\n")
    return (attach(task, attachments) if attachments else task), images_of(attachments)


def _image_suffix(mention: str) -> bool:
    from etcode.provider.images import is_image_path

    return is_image_path(mention)


async def _run_agent(
    task: str,
    options: RunOptions,
    config: Config,
    folders: tuple[Path, Path],
    store: SessionStore,
    images: list[ImagePart],
) -> int:
    """Run ``task`` with the ``--image`` files (``images``), a custom command's prompt (with
    the images its mentions attach) or the task with its ``@image`` mentions read;
    ``folders``: the directory and its worktree."""
    from etcode.api import Agent

    directory, worktree = folders
    model, agent_name = options.model, options.agent
    found = None
    if task.lstrip().startswith("/"):  # only then are the command files read
        found = await asyncio.to_thread(_custom_command, task, config, options, directory)
    if found is not None:
        task, mentioned = found[0].prompt, found[0].images
        model = found[1].model or model
        agent_name = found[1].agent or agent_name
    else:
        task, mentioned = await asyncio.to_thread(_image_mentions, task, directory, config.trusted, worktree)
    images = [*images, *mentioned]
    from etcode.permission.service import AllowAsker, DenyAsker

    asker = AllowAsker() if options.yes else DenyAsker()  # "re-run with --yes to allow"
    agent = Agent(
        model=model,
        agent=agent_name,
        config=config,
        asker=asker,
        directory=directory,
        store=store,
        session_id=_existing_session(store, options.session),
        continue_last=options.continue_last,
        fork=options.fork,
        trust=None,  # checked above (_check_trust)
        commands=False,  # expanded above (_custom_command), with the command's agent and model
    )
    agent.limit_defaults = "cli"
    if options.max_steps is not None:
        from etcode.wiring.run_limits import run_limits

        agent.limits = run_limits(config, options.max_steps, defaults="cli")
    renderer = _renderer(options.output_format)
    restore = _install_interrupt(agent)
    try:
        async for event in agent.stream(task, images):
            renderer.handle(event)
    finally:
        agent.on_event = _late_hook_warning  # SessionEnd runs after the stream closed
        try:
            await agent.aclose()  # a signal meanwhile still stops it (a second one: at once)
        finally:
            restore()  # from here on a signal quits at once
    result = agent.last_result
    return exit_code_for(result.stop_reason if result else "error")


def _command_words(task: str, options: RunOptions) -> list[str] | None:
    """A command's arguments as the shell split them (``etcode run /review a.py "error
    handling"``: ``$2`` is ``error handling``); None when ``task`` is more than the words
    (piped input) or the name and its arguments came as one word."""
    words = options.words
    if not words or not words[0].startswith("/") or len(words[0].split()) != 1:
        return None
    return words[1:] if task.strip() == " ".join(words).strip() else None


def _custom_command(
    task: str, config: Config, options: RunOptions, directory: Path
) -> tuple[Expansion, TurnChoice] | None:
    """``task`` as a custom command (``/name args``) when it names one, with its agent and
    model, and a line on stderr per command file left out, file not sent and agent or model
    switched; None: ``task`` is a message."""
    from etcode.extensions.commands import command_head
    from etcode.ui.command_prompts import commands_for, expand_text, turn_choice

    if command_head(task) is None:  # "/tmp/x why": a path, no name; nothing to read
        return None
    commands = commands_for(directory, config.trusted)
    for warning in commands.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    expansion = expand_text(task, commands, directory, config.trusted, _command_words(task, options))
    if expansion is None:
        return None
    current = options.agent or config.default_agent or "build"
    choice = turn_choice(
        expansion.command,
        config,
        directory,
        current_agent=current,
        agent_chosen=bool(options.agent or config.default_agent),
        model_chosen=options.model is not None,
    )
    for warning in [*expansion.warnings, *choice.warnings]:
        sys.stderr.write(f"warning: {warning}\n")
    for note in choice.notes:
        sys.stderr.write(f"etcode: {note}\n")
    return expansion, choice


def _check_trust(config: Config, options: RunOptions) -> None:
    """A project config's risky settings need ``--trust`` (remembered) or ``--yes`` (this run)."""
    from etcode.config.trust import describe
    from etcode.trust.project import require_trust

    found = require_trust(config, trust=options.trust, allow=options.yes)
    if found:
        what = "trusted from now on" if options.trust else "allowed for this run (--yes)"
        lines = [f"etcode: project settings {what}:", *describe(found)]
        sys.stderr.write("".join(f"{line}\n" for line in lines))


def _existing_session(store: SessionStore, session: str | None) -> str | None:
    """The full id of ``--session ID`` (a unique prefix is enough); an unknown id is an error."""
    if not session:
        return None
    return store.resolve_session(session, flag="--session").id


def _late_hook_warning(event: Event) -> None:
    """A hook that ran after the run's stream closed (``SessionEnd``) and did not pass, or
    the background processes the session's end stopped: one ``warning:`` line on stderr, in either output format (JSON's ``result`` stays last)."""
    from etcode.contract import events as ev

    if isinstance(event, ev.HookRun) and event.outcome != "ok":
        sys.stderr.write(f"warning: {ev.hook_title(event)}: {ev.hook_result(event)}\n")
        sys.stderr.flush()
    elif isinstance(event, ev.WarningEvent):  # background processes stopped with the session
        sys.stderr.write(f"warning: {event.message}\n")
        sys.stderr.flush()


def _renderer(output_format: str) -> PlainRenderer | JsonLinesRenderer:
    if output_format == "json":
        from etcode.ui.jsonl import JsonLinesRenderer

        return JsonLinesRenderer(sys.stdout)
    from etcode.ui.plain import PlainRenderer

    return PlainRenderer(sys.stdout, sys.stderr)


#: After the first Ctrl-C/SIGTERM/SIGHUP, how long the run may take to stop cleanly
#: (close the stream, end the commands, save) before the process quits anyway.
STOP_GRACE_SECONDS = 15.0


def _install_interrupt(agent: Agent) -> Callable[[], None]:
    """First Ctrl-C, SIGTERM or SIGHUP (the terminal closed) stops the turn cleanly: the
    stream ends, running commands are ended, finished steps are saved. A second signal, or
    a run that has not stopped ``STOP_GRACE_SECONDS`` later, quits at once. The function
    returned (called once the session is closed) leaves the event loop's handlers for ones
    that quit at once, until the process ends: the default would end etcode without
    killing what it started."""
    loop = asyncio.get_running_loop()
    presses = {"count": 0}

    def quit_now() -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("\ninterrupted\n")
            sys.stderr.flush()
        from etcode.util.process_group import kill_all_now

        with contextlib.suppress(Exception):  # nothing may stop the exit
            kill_all_now()  # background groups, and a foreground command still in its grace
        os._exit(130)

    def on_signal() -> None:
        presses["count"] += 1
        if presses["count"] == 1:
            agent.interrupt()
            loop.call_later(STOP_GRACE_SECONDS, quit_now)
        else:
            quit_now()

    installed: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError, AttributeError):
            pass

    def restore() -> None:
        for sig in installed:
            loop.remove_signal_handler(sig)
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, lambda _signum, _frame: quit_now())

    return restore
