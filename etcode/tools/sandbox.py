"""An OS sandbox for ``Bash`` commands: bubblewrap (``bwrap``) on Linux.

Modes:

- ``off``: commands run as the user, as they always did;
- ``workspace-write``: the whole file system read-only except the worktree (and the working
  directory), the temp dir and the config's ``writable`` paths; inside the worktree the
  ``.git`` folder and etcode's own config (``etcode.json``, ``.etcode/``) stay read-only;
  no network unless ``network`` is true;
- ``read-only``: nothing writable but a private, empty ``/tmp``; no network unless allowed.

Rules decide *whether* a command runs; the sandbox bounds *what it can do* when a rule (or
a careless "allow") let through more than it should — a command hidden in a variable, a
script that deletes outside the project, a build step that phones home.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal, cast

from etcode.util.errors import ConfigError

Mode = Literal["off", "workspace-write", "read-only"]
MODES: tuple[str, ...] = ("off", "workspace-write", "read-only")
#: How strict each mode is (a stricter one wins when config and agent differ).
STRICTNESS = {"off": 0, "workspace-write": 1, "read-only": 2}
CONFIG_NAMES = ("etcode.json", "etcode.jsonc")

#: Output that says a sandboxed command was refused something by the sandbox.
_DENIED = re.compile(
    r"Read-only file system|Permission denied|Operation not permitted|Network is unreachable|"
    r"Temporary failure in name resolution|Could not resolve host|Name or service not known|"
    r"getaddrinfo|No address associated with hostname|network is unreachable",
)


class SandboxUnavailable(ConfigError):
    """A sandbox mode was asked for and cannot be had here."""


@dataclass(frozen=True)
class SandboxPolicy:
    """How commands are confined. ``required``: asked for by the user (config or flag),
    so a missing bubblewrap is an error; otherwise (a built-in agent's default) a warning."""

    mode: Mode = "off"
    network: bool = False
    writable: tuple[Path, ...] = ()
    required: bool = False
    #: Extra read-only paths (the global config folder, given by the runtime).
    protected: tuple[Path, ...] = field(default=())
    #: The agent's sandbox could not be had (plan, explore without bubblewrap): only
    #: provably plain command lines may be allowed by a rule; the rest is asked.
    plain_commands_only: bool = False

    @property
    def active(self) -> bool:
        return self.mode != "off"

    def describe(self, worktree: Path) -> str:
        """One sentence on what the sandbox allows (for the model and the user)."""
        if self.mode == "read-only":
            where = "nothing is writable but a private /tmp"
        else:
            places = [str(worktree), tempfile.gettempdir(), *(str(p) for p in self.writable)]
            where = f"only {', '.join(dict.fromkeys(places))} are writable (.git and etcode's config are read-only)"
        network = "network allowed" if self.network else "no network"
        return f"etcode's sandbox ({self.mode}): {where}; {network}"


def stricter(first: str | None, second: str | None) -> str | None:
    """The stricter of two modes (None when both are None)."""
    known = [mode for mode in (first, second) if mode is not None]
    return max(known, key=lambda mode: STRICTNESS[mode]) if known else None


def as_mode(value: str) -> Mode:
    if value not in MODES:
        raise ConfigError(f'sandbox: expected "off", "workspace-write" or "read-only", got "{value}"')
    return cast(Mode, value)


def check_flag(mode: str | None) -> None:
    """``--sandbox MODE`` takes one of the modes (a usage error otherwise)."""
    from etcode.util.errors import UsageError

    if mode is not None and mode not in MODES:
        raise UsageError(f'--sandbox must be one of {", ".join(MODES)}, not "{mode}"')


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@lru_cache(maxsize=4)
def probe_bwrap(bwrap: str) -> str | None:
    """None when ``bwrap`` can build a sandbox here (it runs ``true`` in one, 10 s at most),
    else its one-line complaint. Cached per executable for the process."""
    try:
        proc = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--", "true"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    if proc.returncode == 0:
        return None
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit code {proc.returncode}"


def unavailable_reason() -> str | None:
    """Why no sandbox can be built on this machine (None: it can)."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux and bubblewrap; this is {sys.platform}"
    bwrap = bwrap_path()
    if bwrap is None:
        return 'bubblewrap (bwrap) is not installed; install the Debian package bubblewrap or set "sandbox": "off"'
    problem = probe_bwrap(bwrap)
    if problem is not None:
        return f'bubblewrap cannot create a sandbox here ({problem}); set "sandbox": "off"'
    return None


def _config_paths(directory: Path, worktree: Path) -> list[Path]:
    """etcode's own files from the worktree root down to the working directory."""
    found: list[Path] = []
    here = directory.resolve()
    top = worktree.resolve()
    folders = [here, *here.parents]
    for folder in folders:
        for name in (*CONFIG_NAMES, ".etcode"):
            candidate = folder / name
            if candidate.exists():
                found.append(candidate)
        if folder == top:
            break
    return found


def command_argv(
    policy: SandboxPolicy, command: str, shell: str, directory: Path, worktree: Path
) -> list[str]:
    """``bwrap … -- shell -c command`` for ``policy`` (the plain shell when it is off)."""
    if not policy.active:
        return [shell, "-c", command]
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable(unavailable_reason() or "bubblewrap is missing")
    args = [
        bwrap,
        "--die-with-parent",
        "--unshare-pid",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if policy.mode == "read-only":
        args += ["--tmpfs", "/tmp"]  # private scratch space; a project under /tmp is put back:
        for path in dict.fromkeys(p.resolve() for p in (worktree, directory)):
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
    else:
        writable = [Path(tempfile.gettempdir()), worktree, directory, *policy.writable]
        for path in dict.fromkeys(p.resolve() for p in writable):
            if path.exists():
                args += ["--bind", str(path), str(path)]
        protected = [worktree / ".git", *_config_paths(directory, worktree), *policy.protected]
        for path in dict.fromkeys(p.resolve() for p in protected):
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
    if not policy.network:
        args.append("--unshare-net")
    args += ["--chdir", str(directory), "--", shell, "-c", command]
    return args


def environment(policy: SandboxPolicy, env: dict[str, str]) -> dict[str, str]:
    """The command's environment inside the sandbox (a temp dir that is writable)."""
    if policy.mode == "read-only":
        return {**env, "TMPDIR": "/tmp"}
    return env


def looks_refused(output: str, exit_code: int) -> bool:
    """Whether a failed sandboxed command's output shows the sandbox said no."""
    return exit_code != 0 and _DENIED.search(output) is not None


def config_dir_paths() -> tuple[Path, ...]:
    """The global config folder, kept read-only in a sandbox."""
    from etcode.util.paths import config_dir

    folder = config_dir(os.environ)
    return (folder,) if folder.exists() else ()
