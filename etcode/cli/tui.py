"""``etcode`` with no sub-command: the interactive chat in the current directory.

When stdin or stdout is not a terminal it behaves as ``etcode run`` (``echo task | etcode``).
Textual is imported here, inside the command, never on the ``--help`` path.
"""

from __future__ import annotations


def chat_command(
    *,
    continue_last: bool = False,
    session: str | None = None,
    fork: bool = False,
    model: str | None = None,
    agent: str | None = None,
    inline: bool = False,
    debug: bool = False,
    sandbox: str | None = None,
) -> int:
    """Open the TUI, or run headless when not on a terminal. Returns the exit code."""
    from etcode.ui.tui.launch import is_interactive

    if not is_interactive():
        from etcode.cli.run import RunOptions, run_command

        options = RunOptions(
            message="",
            model=model,
            agent=agent,
            debug=debug,
            continue_last=continue_last,
            session=session,
            fork=fork,
            sandbox=sandbox,
        )
        return run_command(options)
    from etcode.security.hardening import harden_process
    from etcode.ui.tui.launch import run_tui
    from etcode.ui.tui.options import TuiOptions
    from etcode.util.memory import keep_freed_memory

    harden_process()  # the model's commands cannot read this process's keys (/proc/PID/environ)
    keep_freed_memory()

    return run_tui(
        TuiOptions(
            model=model,
            agent=agent,
            session_id=session,
            continue_last=continue_last,
            fork=fork,
            inline=inline,
            debug=debug,
            sandbox=sandbox,
        )
    )
