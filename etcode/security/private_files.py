"""Files inside a project that are the user's own, not the repository's: what a project
config must not read unasked (``{file:.env}``, ``"instructions": [".env"]``).

A file is the user's when git ignores it (``.env``, ``secrets/key.txt`` a README told you
to create), or when it is not tracked and its name says it holds secrets (``.env``,
``.env.local``, ``.envrc``, ``*.pem``, ``id_rsa``...). A file the repository tracks is its
author's content, whatever its name. Outside a git work tree only the name is known.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from etcode.util.ignore import TEMPLATES
from etcode.util.wildcard import wildcard_match

#: Names of files that hold secrets (the ``read`` permission asks for the ``.env`` ones).
SECRET_NAMES: tuple[str, ...] = (
    ".env", ".env.*", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*",
    "id_ecdsa*", "id_ed25519*", ".netrc", ".npmrc", ".pypirc", ".pgpass", "credentials*",
    "*.keystore", "*.jks",
)  # fmt: skip
#: Variables that would point git at another repository (set inside git hooks).
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")
GIT_TIMEOUT = 5.0


def secret_name(name: str) -> bool:
    """Does a file name (or a glob's last segment) name a secrets file?"""
    if any(wildcard_match(name, t) for t in TEMPLATES):
        return False
    if any(wildcard_match(name, pattern) for pattern in SECRET_NAMES):
        return True
    # a glob such as ".env*" or ".*" that would pick such files up (glob matches hidden
    # files only with a pattern that starts with ".")
    hidden = (".env", ".envrc", ".env.local", ".netrc", ".npmrc", ".pypirc", ".pgpass")
    if not name.startswith("."):
        return False
    from etcode.util.ignore import glob_match  # the Glob tool's own semantics

    return any(glob_match(name, example) for example in hidden)


def _git(root: Path, *args: str) -> int | None:
    """Run ``git -C root args``; its exit code, None when git could not run or answer."""
    if not (root / ".git").exists():
        return None
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    try:
        out = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, timeout=GIT_TIMEOUT, env=env,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.returncode if out.returncode in (0, 1) else None


def git_ignored(path: Path, root: Path) -> bool | None:
    """Does git ignore ``path`` (a file or folder under the work tree ``root``)? Tracked
    files are not ignored. None: not a git work tree, or git cannot tell."""
    code = _git(root, "check-ignore", "-q", "--", str(path))
    return None if code is None else code == 0


def git_ignored_many(paths: Sequence[Path], root: Path) -> set[Path] | None:
    """Which of ``paths`` (absolute, under the work tree ``root``) git ignores, asked in one
    ``git check-ignore --stdin -z``. None: not a git work tree, or git cannot tell."""
    if not paths:
        return set()
    if not (root / ".git").exists():
        return None
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    request = b"".join(os.fsencode(path) + b"\0" for path in paths)
    try:
        out = subprocess.run(
            ["git", "check-ignore", "--stdin", "-z"], cwd=root, input=request, capture_output=True,
            timeout=GIT_TIMEOUT, env=env,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode not in (0, 1):
        return None
    return {Path(os.fsdecode(name)) for name in out.stdout.split(b"\0") if name}


def git_tracked(path: Path, root: Path) -> bool | None:
    """Is ``path`` tracked by git in the work tree ``root``? None: git cannot tell."""
    code = _git(root, "ls-files", "--error-unmatch", "--", str(path))
    return None if code is None else code == 0


def users_file(path: Path, root: Path) -> bool:
    """Is ``path`` (inside ``root``) the user's own file rather than the repository's?"""
    path, root = path.resolve(), root.resolve()
    if git_ignored(path, root):
        return True
    return secret_name(path.name) and not git_tracked(path, root)
