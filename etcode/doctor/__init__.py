"""``etcode doctor``: what a newcomer checks when something is off. Each check returns
:class:`Check` data (nothing here prints; ``etcode/cli/doctor.py`` renders them): the
config files and their trust, the model and its key, the server's answer (one bounded
request, none with ``offline``), bubblewrap, the tokenizer files, ripgrep and git, the
terminal and tmux. Every probe has a time limit, so the whole run is bounded."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from etcode.doctor.check import Check, Status

__all__ = ["Check", "Status", "run_checks"]


async def run_checks(
    directory: Path,
    worktree: Path,
    *,
    model: str | None = None,
    offline: bool = False,
    env: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
) -> list[Check]:
    """Every check, in the order they are shown. The slow ones (the server, bubblewrap,
    tmux) run at the same time; ``stream`` is the terminal to judge (stdout)."""
    from etcode.doctor import machine, terminal
    from etcode.doctor.check import skip
    from etcode.doctor.reach import check_reach
    from etcode.doctor.setup import check_setup

    env = os.environ if env is None else env
    setup = await asyncio.to_thread(check_setup, directory, worktree, model, env)
    spec = setup.spec
    if offline:
        reach = asyncio.sleep(0, skip("reachable", "not asked (--offline)"))
    elif spec is None:
        reach = asyncio.sleep(0, skip("reachable", "not asked: no model with a key"))
    else:
        reach = check_reach(spec, setup.key_source)
    model_id = spec.full_id if spec is not None else model
    found = await asyncio.gather(
        reach,
        asyncio.to_thread(machine.check_sandbox, setup.config, directory, worktree),
        asyncio.to_thread(machine.check_tokenizer, model_id),
        asyncio.to_thread(machine.check_tools),
        asyncio.to_thread(terminal.check_terminal, stream or sys.stdout, env),
    )
    reached, sandbox, tokenizer, tools, screen = found
    return [*setup.checks, reached, sandbox, tokenizer, *tools, *screen]
