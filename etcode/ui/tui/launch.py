"""``etcode`` without a sub-command: open the chat, or act as ``etcode run`` in a pipe."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from etcode.ui.tui.options import TuiOptions


def is_interactive(stdin: Any = None, stdout: Any = None) -> bool:
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

    check_options(options)
    directory = (options.directory or Path.cwd()).resolve()
    with Instance.provide(directory) as instance:
        flags = {"model": options.model, "agent": options.agent, "sandbox": options.sandbox}
        config = load_config(instance.directory, instance.worktree, flags=flags)
        _redact_keys(config)
        if options.session_id:
            _check_session(options.session_id)
        from etcode.ui.tui.app import EtcodeApp
        from etcode.ui.tui.history import default_history

        app = EtcodeApp(
            TuiOptions(**{**options.__dict__, "directory": instance.directory}),
            config=config,
            history=default_history(),
        )
        result = app.run(inline=options.inline)  # the inline frame is cleared on exit
        from etcode.ui.tui.goodbye import print_goodbye

        print_goodbye(app.exit_state, inline=options.inline)
    return int(result or app.exit_code or 0)


def _redact_keys(config: object) -> None:
    """Keep the config's API keys out of what the app shows (when the core offers it)."""
    try:
        from etcode.security.redact import register_config
    except ImportError:
        return
    register_config(config)


def _check_session(prefix: str) -> None:
    """``--session ID`` must name a stored session: fail before the screen opens."""
    try:
        from etcode.session.store import SessionNotFoundError, SessionStore
    except ImportError:
        return
    from etcode.util.errors import UsageError

    try:
        SessionStore.open().resolve_session(prefix, flag="--session")
    except SessionNotFoundError as err:
        raise UsageError(str(err)) from None
