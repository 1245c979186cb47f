"""``etcode acp``: speak the Agent Client Protocol on stdin/stdout (editors start it).
stdout carries protocol messages only; logs go to stderr.

The ACP SDK loads in a thread from the first line on, while the client's ``initialize`` is
read and answered without it (``etcode/acp/startup.py``)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from etcode.cli.quick_args import CliOption, read_options
from etcode.util.errors import EtcodeError


class AcpLoadError(EtcodeError):
    """The ACP SDK (or etcode's server on it) failed to import."""


def acp_command(
    *,
    model: str | None = None,
    agent: str | None = None,
    sandbox: str | None = None,
    trust: bool = False,
    debug: bool = False,
) -> int:
    from etcode.acp.startup import SdkImport, answer_initialize, protect_stdout

    sdk = SdkImport()  # about a second of imports, beside everything below
    from etcode.security.hardening import harden_process
    from etcode.security.sandbox import check_flag

    harden_process()  # the model's commands cannot read this process's keys (/proc/PID/environ)
    check_flag(sandbox)
    level = logging.DEBUG if debug or _env_debug() else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr, format="[%(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(max(level, logging.INFO))
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    from etcode.security.redact import install_log_redaction

    install_log_redaction()
    stdout_fd = protect_stdout()
    with _signals_interrupt():  # until serve() watches them: an editor's SIGTERM is exit 130
        start = answer_initialize(sys.stdin.fileno(), stdout_fd)
        try:
            sdk.wait()
        except Exception as err:
            raise AcpLoadError(f"etcode acp: the ACP library did not load: {err}") from err
    from etcode.acp.main import serve
    from etcode.acp.server import AcpOptions
    from etcode.util.runner import run_to_end

    options = AcpOptions(model=model, agent=agent, sandbox=sandbox, trust=trust)
    return run_to_end(serve(options, sys.stdin.fileno(), stdout_fd, start))


#: ``etcode acp``'s options (app.py holds their help).
ACP_OPTIONS: tuple[CliOption, ...] = (
    CliOption(("--model", "-m"), "model", "str"),
    CliOption(("--agent", "-a"), "agent", "str"),
    CliOption(("--sandbox",), "sandbox", "str"),
    CliOption(("--trust",), "trust", "flag"),
    CliOption(("--debug",), "debug", "flag"),
)


@dataclass
class AcpFlags:
    """``etcode acp``'s options as :func:`acp_command` takes them."""

    model: str | None = None
    agent: str | None = None
    sandbox: str | None = None
    trust: bool = False
    debug: bool = False


def parse_acp_args(args: list[str]) -> AcpFlags | None:
    """``etcode acp``'s arguments read without Typer (``--model X``, ``--model=X``, ``-m X``,
    the flags); None for anything else (help, an unknown option, a missing value), which
    Typer then parses and answers as before."""
    flags = AcpFlags()
    return flags if read_options(args, ACP_OPTIONS, flags) == [] else None


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt (``interrupted``, exit 130) meanwhile."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _env_debug() -> bool:
    """``ETCODE_DEBUG``; the config loader (a tenth of a second of imports) reads it only
    when it is set, to say what is wrong with an odd value."""
    if not os.environ.get("ETCODE_DEBUG", "").strip():
        return False
    from etcode.config.loader import env_debug

    return env_debug()
