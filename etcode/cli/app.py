"""The Typer application: commands and flags only. Each command imports its world lazily."""

from __future__ import annotations

from typing import Annotated

import typer

from etcode import __version__


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"etcode {__version__}")
        raise typer.Exit()


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="etcode",
        help='etcode: a terminal coding agent. `etcode` opens the chat; `etcode run "task"` for scripts; `etcode doctor` when something is off.',
        no_args_is_help=False,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=None,
    )

    @app.callback(invoke_without_command=True)
    def main(
        ctx: typer.Context,
        version: Annotated[
            bool | None,
            typer.Option(
                "--version", "-V", callback=_version_callback, is_eager=True, help="Print the version."
            ),
        ] = None,
        continue_last: Annotated[
            bool, typer.Option("--continue", "-c", help="Continue the last session in this directory.")
        ] = False,
        session: Annotated[str | None, typer.Option("--session", "-s", help="Open session ID.")] = None,
        fork: Annotated[
            bool, typer.Option("--fork", help="With -c or --session: continue a copy, keep the original.")
        ] = False,
        model: Annotated[str | None, typer.Option("--model", "-m", help="provider/model to use.")] = None,
        agent: Annotated[str | None, typer.Option("--agent", "-a", help="Agent (build, plan, ...).")] = None,
        inline: Annotated[
            bool, typer.Option("--inline", help="Run the chat inline (keeps the terminal's scrollback).")
        ] = False,
        debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on stderr.")] = False,
        sandbox: Annotated[
            str | None,
            typer.Option(
                "--sandbox", help="Confine commands: off, workspace-write or read-only (needs bubblewrap)."
            ),
        ] = None,
    ) -> None:
        """Without a sub-command: the interactive chat (or `etcode run` when piped)."""
        if ctx.invoked_subcommand is not None:
            return
        from etcode.cli.tui import chat_command

        code = chat_command(
            continue_last=continue_last,
            session=session,
            fork=fork,
            model=model,
            agent=agent,
            inline=inline,
            debug=debug,
            sandbox=sandbox,
        )
        if code:
            raise SystemExit(code)

    @app.command("run", help="Run one task non-interactively. Reads stdin too when it is not a terminal.")
    def run(
        message: Annotated[list[str] | None, typer.Argument(help="The task (joined with spaces).")] = None,
        model: Annotated[str | None, typer.Option("--model", "-m", help="provider/model to use.")] = None,
        agent: Annotated[
            str | None, typer.Option("--agent", "-a", help="Agent to run (build, plan, ...).")
        ] = None,
        output_format: Annotated[
            str, typer.Option("--format", "-f", help="Output format: text or json (JSON Lines).")
        ] = "text",
        max_steps: Annotated[
            int | None, typer.Option("--max-steps", help="Stop after N model calls.", min=1)
        ] = None,
        yes: Annotated[
            bool, typer.Option("--yes", "-y", help="Allow actions whose permission is 'ask'.")
        ] = False,
        trust: Annotated[
            bool,
            typer.Option("--trust", help="Trust this project's etcode.json (its MCP servers, endpoints...)."),
        ] = False,
        debug: Annotated[
            bool, typer.Option("--debug", help="Log details and show tracebacks on stderr.")
        ] = False,
        continue_last: Annotated[
            bool, typer.Option("--continue", "-c", help="Continue this project's most recent session.")
        ] = False,
        session: Annotated[
            str | None,
            typer.Option("--session", "-s", help="Continue session ID (see `etcode sessions list`)."),
        ] = None,
        fork: Annotated[
            bool, typer.Option("--fork", help="With -c or --session: continue a copy, keep the original.")
        ] = False,
        sandbox: Annotated[
            str | None,
            typer.Option(
                "--sandbox", help="Confine commands: off, workspace-write or read-only (needs bubblewrap)."
            ),
        ] = None,
        images: Annotated[
            list[str] | None,
            typer.Option(
                "--image",
                metavar="PATH",
                help="Send this image (PNG, JPEG, GIF, WebP) with the task; repeatable.",
            ),
        ] = None,
    ) -> None:
        from etcode.cli.run import RunOptions, run_command

        code = run_command(
            RunOptions(
                message=" ".join(message or []),
                words=list(message or []),
                model=model,
                agent=agent,
                output_format=output_format,
                max_steps=max_steps,
                yes=yes,
                trust=trust,
                debug=debug,
                continue_last=continue_last,
                session=session,
                fork=fork,
                sandbox=sandbox,
                images=list(images or []),
            )
        )
        if code:
            raise SystemExit(code)

    @app.command("acp", help="Speak the Agent Client Protocol on stdin/stdout (for editors: Zed, Toad, ...).")
    def acp(
        model: Annotated[str | None, typer.Option("--model", "-m", help="provider/model to use.")] = None,
        agent: Annotated[
            str | None, typer.Option("--agent", "-a", help="Agent (mode) sessions start in.")
        ] = None,
        sandbox: Annotated[
            str | None,
            typer.Option("--sandbox", help="Confine commands: off, workspace-write or read-only."),
        ] = None,
        trust: Annotated[
            bool,
            typer.Option(
                "--trust",
                help="Approve (and remember) every folder's risky project settings without asking the editor.",
            ),
        ] = False,
        debug: Annotated[
            bool, typer.Option("--debug", help="Log the protocol and tracebacks on stderr.")
        ] = False,
    ) -> None:
        from etcode.cli.acp import acp_command

        code = acp_command(model=model, agent=agent, sandbox=sandbox, trust=trust, debug=debug)
        if code:
            raise SystemExit(code)

    @app.command("doctor", help="Check config, model, key, sandbox, terminal.")
    def doctor(
        model: Annotated[
            str | None,
            typer.Option("--model", "-m", help="provider/model to check (default: the configured one)."),
        ] = None,
        as_json: Annotated[
            bool,
            typer.Option("--json", help='Print {"ok", "checks": [{"name", "status", "detail", "fix"}]}.'),
        ] = False,
        offline: Annotated[bool, typer.Option("--offline", help="Do not ask the model's server.")] = False,
    ) -> None:
        """One line per check with its fix; exit code 1 when any check failed (warnings pass)."""
        from etcode.cli.doctor import doctor_command

        code = doctor_command(model=model, as_json=as_json, offline=offline)
        if code:
            raise SystemExit(code)

    _add_optional_groups(app)
    return app


def _add_optional_groups(app: typer.Typer) -> None:
    """Sub-command groups living in their own modules."""
    from etcode.cli.debug import debug_app

    app.add_typer(debug_app, name="debug", help="Inspect what etcode would send (no model call).")

    from etcode.cli.sessions import add_session_commands

    add_session_commands(app)

    from etcode.cli.mcp import mcp_app

    app.add_typer(mcp_app, name="mcp", help="MCP servers: `etcode mcp list` shows their status and tools.")
