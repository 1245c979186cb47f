"""``etcode acp``: speak the Agent Client Protocol on stdin/stdout (editors start it).
stdout carries protocol messages only; logs go to stderr."""

from __future__ import annotations

import logging
import sys


def acp_command(
    *,
    model: str | None = None,
    agent: str | None = None,
    sandbox: str | None = None,
    trust: bool = False,
    debug: bool = False,
) -> int:
    from etcode.config.loader import env_debug
    from etcode.security.hardening import harden_process
    from etcode.security.sandbox import check_flag

    harden_process()  # the model's commands cannot read this process's keys (/proc/PID/environ)
    check_flag(sandbox)
    level = logging.DEBUG if debug or env_debug() else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr, format="[%(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(max(level, logging.INFO))
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    from etcode.security.redact import install_log_redaction

    install_log_redaction()
    from etcode.acp.main import protect_stdout, serve
    from etcode.acp.server import AcpOptions
    from etcode.util.runner import run_to_end

    stdout_fd = protect_stdout()
    options = AcpOptions(model=model, agent=agent, sandbox=sandbox, trust=trust)
    return run_to_end(serve(options, sys.stdin.fileno(), stdout_fd))
