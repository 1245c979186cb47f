"""The ``etcode`` entry point. Commands import their world inside the function, so
``etcode --help`` and ``etcode --version`` stay fast."""

from __future__ import annotations

import gc
import os
import sys

from etcode import __version__


def _debug_enabled(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("ETCODE_DEBUG", "").lower() in ("1", "true", "yes")


def entry() -> None:
    """Console script. Turns every failure into one line and an exit code (0/1/2/130)."""
    try:
        _run(sys.argv[1:])
    finally:
        # Objects still alive now live until exit: moving them out of the collector's
        # reach spares the interpreter's last full collection (~25 ms of a one-answer run).
        gc.freeze()


def _run(argv: list[str]) -> None:
    try:
        _run_command(argv)
        sys.stdout.flush()  # a reader gone by now is found here, not at the interpreter's exit
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise
        _quiet_exit_for_a_gone_reader()


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe nobody reads any more (``etcode … | head -1``)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(mask & select.POLLERR for _, mask in poller.poll(0))
    except (OSError, ValueError):
        return False


def _quiet_exit_for_a_gone_reader() -> None:
    """The reader left: nothing is wrong with etcode, so no error line; exit 1 as the output was
    not all delivered. Stdout points at /dev/null so the interpreter's last flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(1)


def _run_command(argv: list[str]) -> None:
    if argv in (["--version"], ["-V"]):  # fast path: no Typer, nothing heavy
        sys.stdout.write(f"etcode {__version__}\n")
        return
    debug = _debug_enabled(argv)
    from etcode.util.errors import EtcodeError
    from etcode.util.lean_imports import defer_httpx_cli, skip_trio

    defer_httpx_cli()
    skip_trio()

    import contextlib

    hold: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if not argv or argv[0].startswith("-"):  # a subcommand is never the chat: no etcode.ui
        from etcode.ui.tui.early_input import hold_for_chat

        hold = hold_for_chat(argv)  # the chat: what is typed while it starts is kept (Enter too)
    try:
        with hold:
            _dispatch(argv)
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        sys.exit(130)
    except EtcodeError as err:
        if debug:
            _print_traceback()
        sys.stderr.write(f"error: {_redact(str(err))}\n")
        sys.exit(err.exit_code)
    except SystemExit:
        raise
    except BrokenPipeError:
        if _stdout_reader_gone():
            raise  # handled in _run, after anything still buffered
        _report_unexpected(BrokenPipeError(), debug)
    except Exception as err:  # click usage errors and genuine bugs
        _report_unexpected(err, debug)


def _dispatch(argv: list[str]) -> None:
    """Run the command ``argv`` names. A plain ``etcode run`` skips Typer (see run_args.py)."""
    options = None
    if argv[:1] == ["acp"]:  # an editor's spawn: Typer's parse costs a fifth of the start
        from etcode.cli.acp import acp_command, parse_acp_args

        flags = parse_acp_args(argv[1:])
        if flags is not None:
            code = acp_command(
                model=flags.model,
                agent=flags.agent,
                sandbox=flags.sandbox,
                trust=flags.trust,
                debug=flags.debug,
            )
            if code:
                raise SystemExit(code)
            return
    if argv[:1] == ["run"]:
        from etcode.cli.run_args import parse_run_args

        options = parse_run_args(argv)
    if options is None:
        from etcode.cli.app import build_app

        build_app()(args=argv, prog_name="etcode", standalone_mode=False)
        return
    from etcode.cli.run import run_command

    code = run_command(options)
    if code:
        raise SystemExit(code)


def _report_unexpected(err: Exception, debug: bool) -> None:
    # Typer vendors its own click (``typer._click``), so match click's exceptions by shape.
    names = {cls.__name__ for cls in type(err).__mro__}
    if "Abort" in names:
        sys.stderr.write("\ninterrupted\n")
        sys.exit(130)
    if "ClickException" in names and hasattr(err, "show"):
        err.show()
        sys.exit(int(getattr(err, "exit_code", 2)))
    if debug:
        _print_traceback()
    else:
        sys.stderr.write(
            f"error: internal error: {type(err).__name__}: {_redact(str(err))} "
            "(run with --debug for the traceback)\n"
        )
    sys.exit(1)


def _redact(text: str) -> str:
    """Error text without API keys (those of the environment and the loaded config)."""
    from etcode.security.redact import redact

    return redact(text)


def _print_traceback() -> None:
    import traceback

    sys.stderr.write(_redact(traceback.format_exc()))
