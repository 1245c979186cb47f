"""The one check for files etcode sends to the model because a project names or holds them
(issue 27.5): instruction files (``AGENTS.md``, ``CLAUDE.md`` at every level, sub-folder
ones), files an ``instructions`` glob picks up inside the project, ``@path`` mentions — and
later skills and commands.

A repository can commit a symbolic link: ``AGENTS.md -> ~/.ssh/id_rsa`` would put the
user's key into the system prompt. A file reached through a link (the file itself or a
folder on its way) is refused when the link leads outside the project, or to a secret file
(``.env``, ``id_rsa``...: ``security/private_files.SECRET_NAMES``) or a git-ignored one. A
file that is no link is the repository's own (or one the user put there): not refused.
Callers skip a refused file with a warning naming it, unless the user trusted the project
for the session (``Config.trusted``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

TRUST_HINT = "`etcode run --trust` sends it"


def _linked(path: Path, root: Path) -> bool:
    """Is ``path`` (inside ``root``) reached through a symbolic link below ``root``?"""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return False
    current = root
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            return True
    return False


def refusal(path: str | Path, root: str | Path) -> str | None:
    """Why ``path`` — a file the project ``root`` names or holds — must not be sent to the
    model (``"a link to /home/u/.ssh/id_rsa, outside the project"``), None when it may be.
    A path outside ``root`` (as written, before links) is not the project's: None."""
    from etcode.security.private_files import git_ignored, secret_name

    root = Path(os.path.abspath(Path(root).expanduser()))
    path = Path(os.path.abspath(Path(path).expanduser()))
    if not _linked(path, root):
        return None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "a link that leads nowhere or loops"
    real_root = root.resolve()
    if not target.is_relative_to(real_root):
        return f"a link to {target}, outside the project"
    if secret_name(target.name):
        return f"a link to {target}, a secret file"
    if git_ignored(target, real_root):
        return f"a link to {target}, a git-ignored file"
    return None


def refusals(paths: Sequence[str | Path], root: str | Path) -> list[str | None]:
    """:func:`refusal` of each of ``paths``, with one ``git check-ignore`` for all of them
    (a hundred linked skills would otherwise start a hundred git processes) and the links
    on the way looked up once per folder."""
    from etcode.security.private_files import git_ignored_many, secret_name

    top = os.path.abspath(os.path.expanduser(root))
    real_root = os.path.realpath(top)
    links: dict[str, bool] = {}

    def linked(path: str) -> bool:
        if not path.startswith(top + os.sep):
            return False
        current = top
        for part in path[len(top) + 1 :].split(os.sep):
            current = os.path.join(current, part)
            if current not in links:
                links[current] = os.path.islink(current)
            if links[current]:
                return True
        return False

    reasons: list[str | None] = []
    pending: list[tuple[int, str]] = []
    for index, entry in enumerate(paths):
        path = os.path.abspath(os.path.expanduser(entry))
        reason: str | None = None
        if linked(path):
            try:
                target = os.path.realpath(path, strict=True)
            except (OSError, RuntimeError):
                reason = "a link that leads nowhere or loops"
            else:
                if target != real_root and not target.startswith(real_root.rstrip(os.sep) + os.sep):
                    reason = f"a link to {target}, outside the project"
                elif secret_name(os.path.basename(target)):
                    reason = f"a link to {target}, a secret file"
                else:
                    pending.append((index, target))
        reasons.append(reason)
    ignored = git_ignored_many([Path(target) for _, target in pending], Path(real_root)) or set()
    for index, target in pending:
        if Path(target) in ignored:
            reasons[index] = f"a link to {target}, a git-ignored file"
    return reasons


def skip_warning(kind: str, path: str | Path, reason: str) -> str:
    """The warning for a refused file: ``skipped instructions AGENTS.md: a link to ...``."""
    return f"skipped {kind} {path}: {reason} ({TRUST_HINT})"


def named_file_refusal(mention: str, root: str | Path) -> str | None:
    """Why a file a project's own text names (``@path`` in a project's command file: the
    repository wrote it, not the user) must not be sent unless the project is trusted —
    links or not: it lies outside the worktree ``root``, is a secret (``.env``, ``id_rsa``)
    or is git-ignored. None when it may be sent, or names no file (it stays text)."""
    from etcode.security.private_files import git_ignored, secret_name

    root = Path(os.path.abspath(Path(root).expanduser()))
    path = Path(mention).expanduser()
    path = Path(os.path.abspath(path if path.is_absolute() else root / path))
    if not path.is_file():
        return None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "a link that leads nowhere or loops"
    real_root = root.resolve()
    if not path.is_relative_to(root) or not target.is_relative_to(real_root):
        return f"{target} is outside the project"
    if secret_name(path.name) or secret_name(target.name):
        return f"{target} is a secret file"
    if git_ignored(target, real_root):
        return f"{target} is git-ignored"
    return None
