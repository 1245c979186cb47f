"""The per-directory context every part of a run sees.

``Instance.provide(directory)`` sets, for the code running inside it (and the asyncio
tasks it starts), the working directory, the worktree (git root, else the directory),
whether it is a git repository, and a stable project id. It uses a ContextVar, so two
sessions in one process stay apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class InstanceInfo:
    directory: Path
    worktree: Path
    vcs: str | None  # "git" or None
    project_id: str

    @property
    def is_git(self) -> bool:
        return self.vcs == "git"


_current: ContextVar[InstanceInfo | None] = ContextVar("etcode_instance", default=None)


def _find_git_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _project_id(worktree: Path, is_git: bool) -> str:
    """Stable id: the first commit's hash for git repos (survives moves), else the path hash."""
    if is_git:
        root_commit = _git_root_commit(worktree)
        if root_commit:
            return root_commit[:16]
    return hashlib.sha256(str(worktree).encode()).hexdigest()[:16]


_GIT_LOCATION_VARS = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "GIT_NAMESPACE"}
)


def _git_root_commit(worktree: Path) -> str | None:
    cache = worktree / ".git" / "etcode"
    if cache.is_file():
        text = cache.read_text(encoding="utf-8", errors="replace").strip()
        if text:
            return text
    import os
    import subprocess

    # Variables such as GIT_DIR (set inside git hooks) would point git at another repo.
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    try:
        out = subprocess.run(
            ["git", "rev-list", "--max-parents=0", "--all"],
            cwd=worktree,
            capture_output=True,
            text=True,
            timeout=5,
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commits = sorted(line.strip() for line in out.stdout.splitlines() if line.strip())
    if out.returncode != 0 or not commits:
        return None
    if (worktree / ".git").is_dir():
        with suppress(OSError):
            cache.write_text(commits[0], encoding="utf-8")
    return commits[0]


def describe(directory: str | Path) -> InstanceInfo:
    """Work out the instance facts for ``directory`` without installing them."""
    folder = Path(directory).expanduser().resolve()
    git_root = _find_git_root(folder)
    worktree = git_root or folder
    vcs = "git" if git_root else None
    return InstanceInfo(folder, worktree, vcs, _project_id(worktree, git_root is not None))


class Instance:
    """Access to the current instance. All accessors raise if none is provided."""

    @staticmethod
    @contextmanager
    def provide(directory: str | Path) -> Iterator[InstanceInfo]:
        info = describe(directory)
        token = _current.set(info)
        try:
            yield info
        finally:
            _current.reset(token)

    @staticmethod
    def current() -> InstanceInfo:
        info = _current.get()
        if info is None:
            raise RuntimeError("no etcode Instance is provided; wrap the call in Instance.provide(dir)")
        return info

    @staticmethod
    def maybe() -> InstanceInfo | None:
        return _current.get()

    @staticmethod
    def directory() -> Path:
        return Instance.current().directory

    @staticmethod
    def worktree() -> Path:
        return Instance.current().worktree

    @staticmethod
    def vcs() -> str | None:
        return Instance.current().vcs

    @staticmethod
    def project_id() -> str:
        return Instance.current().project_id
