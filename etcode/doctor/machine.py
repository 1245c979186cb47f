"""The machine's checks: bubblewrap for the sandbox, the tokenizer files, ripgrep and git.
Each program run here has a time limit."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.doctor.check import Check, fail, ok, warn

if TYPE_CHECKING:
    from etcode.config.schema import Config

INSTALL_BWRAP = "install it: `sudo apt install bubblewrap` (Debian, Ubuntu) or `sudo dnf install bubblewrap`"
USERNS_FIX = (
    "allow unprivileged user namespaces (`sudo sysctl -w kernel.unprivileged_userns_clone=1`; on "
    "Ubuntu 24.04 and later `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`)"
)
OFF = 'or set "sandbox": "off" in etcode.json'


def check_sandbox(config: Config | None, directory: Path, worktree: Path) -> Check:
    """Bubblewrap present and able to build a sandbox (it runs ``true`` in one). A ✗ when
    the user's config or an agent of theirs asks for the sandbox, else a warning: the
    built-in plan/explore agents then run commands without theirs."""
    import sys

    from etcode.security.sandbox import bwrap_path, probe_bwrap

    needed_by = _needed_by(config, directory, worktree)
    bwrap = bwrap_path()
    if not sys.platform.startswith("linux"):
        problem, fix = f"the sandbox needs Linux and bubblewrap; this is {sys.platform}", OFF
    elif bwrap is None:
        problem, fix = "bubblewrap (bwrap) is not installed", INSTALL_BWRAP
    else:
        found = probe_bwrap(bwrap)
        if found is None:
            return ok("sandbox", f"bubblewrap at {bwrap} builds a sandbox (ran `true` in one)")
        problem, fix = f"bubblewrap at {bwrap} cannot build a sandbox here: {found}", USERNS_FIX
    if needed_by:
        return fail("sandbox", f"{problem}; {needed_by} needs it", f"{fix}, {OFF}" if fix != OFF else fix)
    return warn(
        "sandbox",
        f"{problem}: the plan and explore agents run commands without their read-only sandbox "
        "(they run only plain command lines without asking)",
        fix,
    )


def _needed_by(config: Config | None, directory: Path, worktree: Path) -> str | None:
    """Who asks for the sandbox: the config's ``sandbox`` or an agent the user configured."""
    if config is None:
        return None
    if config.sandbox is not None and config.sandbox.mode not in (None, "off"):
        return f'"sandbox": "{config.sandbox.mode}" in {config.origin("sandbox") or "the configuration"}'
    from etcode.agent.registry import load_agents
    from etcode.util.errors import EtcodeError

    try:
        agents = load_agents(config.agent or {}, directory, worktree)
    except EtcodeError:
        return None
    for name, info in agents.items():
        if info.sandbox not in (None, "off") and info.sandbox_source not in (None, "builtin"):
            return f"the {name} agent ({info.sandbox_source})"
    return None


def check_tokenizer(model: str | None) -> Check:
    """tiktoken's encoding files on disk; without them counts are estimated."""
    from etcode.util.tokens import CL100K, O200K, cache_folder, encoding_file, encoding_name

    wanted = encoding_name(model)
    files = {name: encoding_file(name) for name in (O200K, CL100K)}
    cached = [name for name, path in files.items() if path is not None]
    found = files[wanted]
    if found is not None:
        return ok("tokenizer", f"{', '.join(cached)} cached in {found.parent}")
    return warn(
        "tokenizer",
        f"{wanted} is not cached in {cache_folder()}: token counts are estimated (4 bytes a token)",
        "run etcode once online (it fetches the file in the background unless "
        "ETCODE_TOKENIZER_DOWNLOAD=0), or copy the file there (TIKTOKEN_CACHE_DIR names the folder)",
    )


def check_tools() -> list[Check]:
    """ripgrep (Grep/Glob fall back to Python without it) and git (undo, project ids)."""
    from etcode.tools.ripgrep import rg_path

    checks: list[Check] = []
    rg = rg_path()
    if rg is not None:
        checks.append(ok("ripgrep", f"{rg}"))
    else:
        checks.append(
            warn(
                "ripgrep",
                "rg not found: Grep and Glob use a slower Python search",
                "install it: `sudo apt install ripgrep` (or `pip install ripgrep`)",
            )
        )
    git = shutil.which("git")
    if git is not None:
        checks.append(ok("git", git))
    else:
        checks.append(
            warn(
                "git",
                "git not found: projects are told apart by folder, not by repository",
                "install it: `sudo apt install git`",
            )
        )
    return checks
