"""``etcode`` without a sub-command: open the chat, or act as ``etcode run`` in a pipe."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Protocol

from etcode.ui.tui.options import TuiOptions


class Stream(Protocol):
    """A file that can tell whether it is a terminal."""

    def isatty(self) -> bool: ...


def is_interactive(stdin: Stream | None = None, stdout: Stream | None = None) -> bool:
    """True when both stdin and stdout are terminals."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    try:
        return bool(stdin.isatty()) and bool(stdout.isatty())
    except (AttributeError, ValueError):
        return False


def check_options(options: TuiOptions) -> None:
    """The flag combinations ``etcode run`` refuses are refused here too."""
    from etcode.util.errors import UsageError

    if options.fork and not (options.continue_last or options.session_id):
        raise UsageError("--fork needs --continue or --session ID (the session to copy)")
    if options.continue_last and options.session_id:
        raise UsageError("give either --continue or --session ID, not both")
    from etcode.security.sandbox import check_flag

    check_flag(options.sandbox)


def run_tui(options: TuiOptions) -> int:
    """Run the chat until the user quits; returns the exit code."""
    from etcode.config.loader import load_config
    from etcode.instance import Instance
    from etcode.security.redact import register_config

    check_options(options)
    directory = (options.directory or Path.cwd()).resolve()
    with Instance.provide(directory) as instance:
        flags = {"model": options.model, "agent": options.agent, "sandbox": options.sandbox}
        config = load_config(instance.directory, instance.worktree, flags=flags)
        register_config(config)  # the config's API keys stay out of what the app shows
        if options.session_id:
            _check_session(options.session_id)
        from etcode.ui.tui.app import EtcodeApp
        from etcode.ui.tui.history import default_history

        app = EtcodeApp(
            TuiOptions(**{**options.__dict__, "directory": instance.directory}),
            config=config,
            history=default_history(),
        )
        from etcode.ui.tui.early_input import take_typed

        app.typed_at_start = take_typed()  # typed while etcode started: the input's first text
        result = app.run(inline=options.inline)  # the inline frame is cleared on exit
        from etcode.ui.tui.goodbye import print_goodbye

        print_goodbye(app.exit_state, inline=options.inline)
        for warning in app.quit_warnings:  # e.g. the background processes stopped with the session
            print(f"warning: {warning}", file=sys.stderr)
    return int(result or app.exit_code or 0)


def _check_session(prefix: str) -> None:
    """``--session ID`` must name a stored session: fail before the screen opens."""
    from etcode.session.store import SessionNotFoundError, SessionStore
    from etcode.util.errors import UsageError

    store = SessionStore.open()
    try:
        store.resolve_session(prefix, flag="--session")
    except SessionNotFoundError as err:
        raise UsageError(str(err)) from None
    finally:
        store.close()
