"""An OS sandbox for ``Bash`` commands: bubblewrap (``bwrap``) on Linux.

Modes:

- ``off``: commands run as the user, as they always did;
- ``workspace-write``: the whole file system read-only except the worktree (and the working
  directory), a private ``/tmp`` and the config's ``writable`` paths; inside the worktree
  ``.git`` and the config and instruction files (``etcode.json``, ``.etcode/``, ``.claude/``,
  ``AGENTS.md``…, see :data:`PROTECTED_NAMES`) stay read-only and cannot be created;
  no network unless ``network`` is true;
- ``read-only``: nothing writable but a private, empty ``/tmp``; no network unless allowed.

In both, credential stores (``~/.ssh``, ``~/.aws``…, etcode's data folder) are hidden,
``socket(AF_UNIX)`` fails (a seccomp filter, :mod:`etcode.security.seccomp`) unless the config
lists ``allowUnixSockets``, and the variables naming host sockets are not passed.

Rules decide *whether* a command runs; the sandbox bounds *what it can do* when a rule (or
a careless "allow") let through more than it should — a command hidden in a variable, a
script that deletes outside the project, a build step that phones home.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from etcode.util.errors import ConfigError

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

Mode = Literal["off", "workspace-write", "read-only"]
MODES: tuple[str, ...] = ("off", "workspace-write", "read-only")
#: How strict each mode is (a stricter one wins when config and agent differ).
STRICTNESS = {"off": 0, "workspace-write": 1, "read-only": 2}
CONFIG_NAMES = ("etcode.json", "etcode.jsonc")
#: Folders of etcode's (and other agents') configuration: agents, prompts, skills, commands.
PROTECTED_FOLDERS = (".etcode", ".claude", ".agents")
#: What a sandboxed command may not write or create in each folder from the worktree root
#: down to the working directory: what the next session reads as config or instructions.
PROTECTED_NAMES = (*CONFIG_NAMES, *PROTECTED_FOLDERS, "AGENTS.md", "ETCODE.md", "CLAUDE.md")
#: Credential stores under the home folder, hidden from every sandboxed command.
SECRET_HOME_PATHS = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".kube", ".gnupg", ".config/gh", ".password-store",
    ".docker/config.json", ".netrc", ".git-credentials", ".pgpass",
)  # fmt: skip
#: Variables that point commands at host services over unix sockets.
SOCKET_VARIABLES = frozenset(
    {"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS",
     "DBUS_SYSTEM_BUS_ADDRESS", "XDG_RUNTIME_DIR", "DOCKER_HOST", "CONTAINER_HOST"}
)  # fmt: skip

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
    #: ``allowUnixSockets``: when any, the unix-socket filter is off (seccomp cannot tell
    #: one socket path from another) and these are bound into the private ``/tmp``.
    unix_sockets: tuple[Path, ...] = field(default=())
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
            places = [str(worktree), *(str(p) for p in self.writable)]
            where = (
                f"only {', '.join(dict.fromkeys(places))} and a private /tmp are writable "
                "(.git and the agents' config and instruction files are read-only)"
            )
        network = "network allowed" if self.network else "no network"
        sockets = "listed unix sockets reachable" if self.unix_sockets else "no unix sockets"
        return f"etcode's sandbox ({self.mode}): {where}; credential stores hidden; {network}; {sockets}"


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
    """None when ``bwrap`` can build a sandbox here (it runs ``true`` in one, with the
    seccomp filter, 10 s at most), else its one-line complaint. Cached per executable."""
    from etcode.security.seccomp import filter_fd

    fd = filter_fd()
    seccomp = ["--seccomp", str(fd)] if fd is not None else []
    try:
        proc = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", *seccomp, "--", "true"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            pass_fds=(fd,) if fd is not None else (),
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    finally:
        if fd is not None:
            os.close(fd)
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


def _folders(directory: Path, worktree: Path) -> list[Path]:
    """The worktree root down to the working directory (just the directory when it is
    outside the worktree)."""
    here, top = directory.resolve(), worktree.resolve()
    chain = [here, *here.parents]
    return list(reversed(chain[: chain.index(top) + 1])) if top in chain else [here]


def _first_missing(path: Path) -> Path | None:
    """The first component of ``path`` that does not exist (None if it does), links
    followed. One ``lstat`` for a plain name in an existing, resolved folder."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return None
    except FileNotFoundError:
        if path.parent.is_dir() and not path.parent.is_symlink():
            return path
    except OSError:
        pass
    path = path.resolve()
    if path.exists():
        return None
    missing = path
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    return missing


def _under(path: Path, folders: Iterable[Path]) -> bool:
    return any(path.is_relative_to(folder) for folder in folders)


@lru_cache(maxsize=1)
def _blanks() -> tuple[Path, Path]:
    """An empty read-only file and folder of this process, bound over the protected names
    that do not exist yet (removed at exit)."""
    folder = Path(tempfile.mkdtemp(prefix="etcode-sandbox-"))
    blank_file, blank_dir = folder / "empty", folder / "empty.d"
    blank_file.touch(mode=0o444)
    blank_dir.mkdir(mode=0o555)
    atexit.register(_remove_blanks, folder)
    return blank_file, blank_dir


def _remove_blanks(folder: Path) -> None:
    release_mount_points(list(_mount_users), force=True)  # those of other processes wait
    for child in (folder / "empty.d", folder / "empty", folder / "seccomp.bpf"):
        with contextlib.suppress(OSError):
            child.chmod(0o700)
            child.rmdir() if child.is_dir() else child.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()


@lru_cache(maxsize=1)
def _filter_file() -> Path | None:
    """The seccomp filter as a file, for a command run by the editor's terminal (no fd can
    be passed there): read-only, in this process's private folder."""
    from etcode.security.seccomp import unix_socket_filter

    program = unix_socket_filter()
    if program is None:
        return None
    path = _blanks()[0].parent / "seccomp.bpf"
    path.write_bytes(program)
    path.chmod(0o444)
    return path


# Mount points bwrap creates in the project for protected names that do not exist yet:
# removed once no running command uses them (removing one while another sandbox runs would
# detach that sandbox's mount). A command that finds a placeholder of another one still
# running shares it. Other etcode processes in the same worktree count too: each command
# holds a shared lock on the worktree's lock file (in etcode's state folder, hidden from
# sandboxes) while it runs, and a placeholder is removed only under the exclusive lock,
# taken without waiting; if another command holds it, the removal is tried again after
# this process's next command, and at exit (an empty file may then stay behind). The
# removal waits on the kernel's mount teardown (several ms), so it runs in a worker
# thread, after the command's result.
_mount_lock = threading.RLock()
_mount_users: dict[Path, int] = {}
#: Each placeholder in use: the lock file of its worktree.
_mount_owners: dict[Path, Path] = {}
#: Placeholders no command of this process uses whose removal waits for another process.
_pending: dict[Path, Path] = {}
_remover: ThreadPoolExecutor | None = None


def worktree_lock(worktree: Path) -> Path:
    """The lock file the sandboxed commands of every etcode process in ``worktree`` share."""
    import hashlib

    from etcode.util.paths import state_dir

    folder = state_dir() / "sandbox"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"{hashlib.sha256(str(worktree.resolve()).encode()).hexdigest()[:24]}.lock"


def _lock(path: Path, exclusive: bool) -> int | None:
    """An open descriptor of ``path`` holding a shared lock (waited for: the exclusive one
    is only ever held for a removal) or an exclusive one (not waited for); None when it
    cannot be had."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def _claim_mount_points(paths: list[Path], lock: Path | None) -> None:
    with _mount_lock:
        for path in paths:
            _mount_users[path] = _mount_users.get(path, 0) + 1
            _pending.pop(path, None)
            if lock is not None:
                _mount_owners[path] = lock


def release_mount_points(paths: list[Path], lock: Path | None = None, force: bool = False) -> None:
    """Forget ``paths`` for one command; remove each that no command uses any more (in
    this process, and in any other that holds ``lock``) and that is still an empty file or
    folder (what bwrap left). ``force``: this process's counts no longer matter (exit)."""
    with _mount_lock:
        for path in paths:
            left = 0 if force else _mount_users.get(path, 1) - 1
            if left > 0:
                _mount_users[path] = left
                continue
            _mount_users.pop(path, None)
            owner = _mount_owners.pop(path, None) or lock
            if owner is not None:
                _pending[path] = owner
        for lock_path in dict.fromkeys(_pending.values()):
            fd = _lock(lock_path, exclusive=True)
            if fd is None:
                continue  # another command runs in this worktree: later
            try:
                for path in [p for p, owner in _pending.items() if owner == lock_path]:
                    del _pending[path]
                    _remove_if_empty(path)
            finally:
                os.close(fd)


def _remove_if_empty(path: Path) -> None:
    with contextlib.suppress(OSError):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode) and info.st_size == 0:
            path.unlink()
        elif stat.S_ISDIR(info.st_mode) and not any(path.iterdir()):
            path.rmdir()


def _release_later(paths: list[Path], lock: Path | None) -> None:
    global _remover
    if not paths and not _pending:
        return
    with _mount_lock:
        if _remover is None:  # its thread is joined at exit, before atexit's final sweep
            from concurrent.futures import ThreadPoolExecutor

            _remover = ThreadPoolExecutor(max_workers=1, thread_name_prefix="etcode-sandbox")
        _remover.submit(release_mount_points, paths, lock)


def settle(timeout: float = 10.0) -> None:
    """Wait (at most ``timeout`` s) until the placeholders of ended commands are removed."""
    with _mount_lock:
        remover = _remover
    if remover is not None:
        remover.submit(lambda: None).result(timeout)


def protected_paths(directory: Path, worktree: Path) -> list[Path]:
    """etcode's config and the instruction files of each folder from the worktree root down
    to the working directory, existing or not, and the worktree's ``.git`` if it exists."""
    git = worktree.resolve() / ".git"
    found = [git, *_hooks_folders(git)] if git.exists() else []
    for folder in _folders(directory, worktree):
        found += [folder / name for name in PROTECTED_NAMES]
    return found


_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def _hooks_folders(git: Path) -> list[Path]:
    """The hooks folder the repository's ``core.hooksPath`` names when it is in the worktree
    (Husky's ``.husky/_`` with the ``.husky`` scripts it runs): git runs them outside."""
    try:
        text = (git / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for value in _HOOKS_PATH.findall(text):
        if value.strip('"').startswith("~"):
            continue  # in the home folder: read-only already
        folder = (git.parent / value.strip('"')).resolve()
        if folder.is_relative_to(git.parent) and folder != git.parent:
            found.append(folder)
            if folder.name == "_" and folder.parent != git.parent:
                found.append(folder.parent)
    return found


def hidden_paths(env: Mapping[str, str] | None = None) -> list[Path]:
    """Credential stores in the home folder and etcode's config, data and state folders (a
    literal ``apiKey``, sessions, trust records), as they exist now: hidden from every
    sandboxed command."""
    from etcode.util.paths import config_dir, data_dir, state_dir

    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    candidates = [home / name for name in SECRET_HOME_PATHS] + [
        config_dir(env),
        data_dir(env),
        state_dir(env),
    ]
    return [path for path in candidates if path.exists()]


@dataclass
class Launch:
    """How to start one sandboxed command: ``argv``, the file descriptors to pass (the
    seccomp filter), and what to clean up after it (:meth:`close`)."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    mount_points: list[Path] = field(default_factory=list)
    #: The worktree's lock file and this command's shared lock on it (see
    #: :func:`release_mount_points`), held from before its placeholders were chosen.
    lock: Path | None = None
    lock_fd: int | None = None
    #: Protected names that are symbolic links, and their targets: a bind protects the
    #: target, not the link, so a link the command replaced is put back after it.
    links: dict[Path, str] = field(default_factory=dict)

    def started(self) -> None:
        """The command has started: its copy of the filter is all that is needed."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()

    def close(self) -> list[Path]:
        """After the command (and with it the sandbox) has ended. Returns the protected
        links it replaced, now put back."""
        self.started()
        if self.lock_fd is not None:
            os.close(self.lock_fd)  # first: the removal needs every command's lock gone
            self.lock_fd = None
        _release_later(self.mount_points, self.lock)
        self.mount_points = []
        links, self.links = self.links, {}
        return _restore_links(links)


def _restore_links(links: dict[Path, str]) -> list[Path]:
    restored = []
    for path, target in links.items():
        with contextlib.suppress(OSError):
            if os.readlink(path) == target:
                continue
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)  # (never follows the links inside)
            else:
                path.unlink()
        with contextlib.suppress(OSError):
            os.symlink(target, path)
        restored.append(path)
    return restored


def prepare(
    policy: SandboxPolicy,
    command: str,
    shell: str,
    directory: Path,
    worktree: Path,
    *,
    pass_fds: bool = True,
) -> Launch:
    """The start of ``command`` under ``policy`` (the plain shell when it is off).
    ``pass_fds``: the filter goes to bwrap as an inherited memfd; otherwise (a command the
    editor's terminal runs) a shell opens the filter file for bwrap."""
    if not policy.active:
        return Launch([shell, "-c", command])
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable(unavailable_reason() or "bubblewrap is missing")
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc", "--tmpfs", "/tmp"]  # fmt: skip
    # A private, empty /tmp in both modes; a project (or writable path) under /tmp is put back.
    writable = _bind_project(args, policy, directory, worktree)
    protected = [*protected_paths(directory, worktree), *policy.protected]
    lock = worktree_lock(worktree) if writable else None
    # Before the placeholders are chosen: one seen now is not removed by any process
    # (nor by this one: the mount lock) until this command has ended.
    lock_fd = _lock(lock, exclusive=False) if lock is not None else None
    with _mount_lock:
        mount_points = _protect(args, protected, writable)
        _claim_mount_points(mount_points, lock)
    launch = Launch(args, mount_points=mount_points, lock=lock, lock_fd=lock_fd)
    try:
        launch.links = {
            path: os.readlink(path) for path in protected if writable and _is_link(path, writable)
        }
        _hide(args, [directory.resolve(), worktree.resolve()])
        _bind_network(args, policy)
        if not policy.unix_sockets:
            args, launch.pass_fds = _with_filter(args, shell, pass_fds)
        launch.argv = args + ["--chdir", str(directory), "--", shell, "-c", command]
    except BaseException:
        launch.links = {}  # nothing ran: nothing to put back
        launch.close()  # the claims, the lock and the filter's descriptor are given back
        raise
    return launch


def _bind_project(args: list[str], policy: SandboxPolicy, directory: Path, worktree: Path) -> list[Path]:
    """Adds to ``args`` the binds of the project: read-only, or (with the policy's
    writable paths) read-write. Returns the paths writable (none when read-only)."""
    if policy.mode == "read-only":
        for path in dict.fromkeys(p.resolve() for p in (worktree, directory)):
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
        return []
    places = dict.fromkeys(p.resolve() for p in (worktree, directory, *policy.writable))
    writable = [path for path in places if path.exists()]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    return writable


def _bind_network(args: list[str], policy: SandboxPolicy) -> None:
    """Adds to ``args`` the unix sockets the policy lists and, without network, a network
    namespace of its own."""
    for path in policy.unix_sockets:
        if path.exists():
            args += ["--bind", str(path), str(path)]  # a listed socket under the private /tmp
    if not policy.network:
        args.append("--unshare-net")


def _is_link(path: Path, writable: list[Path]) -> bool:
    return path.is_symlink() and _under(path.parent, writable)


def _protect(args: list[str], paths: list[Path], writable: list[Path]) -> list[Path]:
    """Add read-only binds over ``paths`` where they are writable: an existing one over
    itself, a missing one as an empty file or folder at its first missing component
    (bwrap creates that mount point; :func:`release_mount_points` removes it). Returns the
    mount points made."""
    made: list[Path] = []
    if not writable:
        return made  # read-only: all of it is read-only already
    blank_file, blank_dir = _blanks()
    for path in dict.fromkeys(paths):
        missing = _first_missing(path)
        if missing is None:
            target = str(path.resolve()) if path.is_symlink() else str(path)
            args += ["--ro-bind", target, target]
            if path in _mount_users:  # another command's placeholder: shared until both end
                made.append(path)
        elif _under(missing, writable):
            leaf = missing == path or missing == path.resolve()  # else a folder on the way is missing
            folder = not leaf or path.name in PROTECTED_FOLDERS
            args += ["--ro-bind", str(blank_dir if folder else blank_file), str(missing)]
            made.append(missing)
    return made


def _hide(args: list[str], shown: list[Path]) -> None:
    """Add an empty tmpfs over each credential folder and an empty file over each
    credential file (never over the project itself)."""
    from etcode.util.paths import tool_output_dir as output_dir

    hidden = [path for path in hidden_paths() if not any(place.is_relative_to(path) for place in shown)]
    for path in hidden:
        args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", str(_blanks()[0]), str(path)]
    outputs = (
        output_dir()
    )  # the saved full outputs of earlier tools stay readable (the model was pointed at them)
    if outputs.is_dir() and _under(outputs, hidden):
        args += ["--ro-bind", str(outputs), str(outputs)]


def _with_filter(args: list[str], shell: str, pass_fds: bool) -> tuple[list[str], tuple[int, ...]]:
    """``args`` with the unix-socket filter (unchanged on a machine it is not built for)."""
    from etcode.security.seccomp import filter_fd

    if pass_fds:
        fd = filter_fd()
        return (args, ()) if fd is None else ([*args, "--seccomp", str(fd)], (fd,))
    path = _filter_file()
    if path is None:
        return args, ()
    return [shell, "-c", 'exec "$@" 9<"$0"', str(path), *args, "--seccomp", "9"], ()


def environment(policy: SandboxPolicy, env: dict[str, str]) -> dict[str, str]:
    """The command's environment inside the sandbox: ``/tmp`` as the temp dir, and none of
    the variables that point at host sockets (an SSH agent, D-Bus, Docker…) unless the
    socket is one of ``allowUnixSockets``."""
    if not policy.active:
        return env
    allowed = {str(path) for path in policy.unix_sockets}
    kept = {
        name: value
        for name, value in env.items()
        if not _points_at_a_socket(name, value) or _socket_path(value) in allowed
    }
    for name in ("TMPDIR", "TMP", "TEMP"):
        if name in kept or name == "TMPDIR":
            kept[name] = "/tmp"
    return kept


def _socket_path(value: str) -> str:
    for prefix in ("unix://", "unix:path=", "unix:"):
        if value.startswith(prefix):
            return value[len(prefix) :].split(",", 1)[0]
    return value


def _points_at_a_socket(name: str, value: str) -> bool:
    if name in ("DOCKER_HOST", "CONTAINER_HOST"):
        return value.startswith(("unix:", "/"))
    return name in SOCKET_VARIABLES


def looks_refused(output: str, exit_code: int) -> bool:
    """Whether a failed sandboxed command's output shows the sandbox said no."""
    return exit_code != 0 and _DENIED.search(output) is not None


def config_dir_paths() -> tuple[Path, ...]:
    """The global config folder, kept read-only in a sandbox."""
    from etcode.util.paths import config_dir

    folder = config_dir(os.environ)
    return (folder.resolve(),) if folder.exists() else ()
