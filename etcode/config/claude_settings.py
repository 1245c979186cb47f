"""Claude Code's settings files, read for their hooks (issue 28): ``.claude/settings.json``
and ``.claude/settings.local.json`` in the worktree root and every folder down to the
working directory (the project's, outermost first), and ``~/.claude/settings.json`` (the
user's; ``$CLAUDE_CONFIG_DIR/settings.json`` when that is set).

Only ``hooks`` and ``disableAllHooks`` are kept (Claude Code's other keys mean nothing to
etcode). A file that cannot be read never stops a start: it is kept with its ``problem``
(``extensions/hook_set.py`` turns that into a warning). They are read with the config, once,
so the hooks that run are the ones the project-trust check saw (``trust/project.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from etcode.config.jsonc import parse_jsonc
from etcode.config.raw import ConfigFile, Loc, drop_keys
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue

SETTINGS_NAMES = ("settings.json", "settings.local.json")
KEPT_KEYS = ("hooks", "disableAllHooks")
#: A settings file larger than this is not read (a cloned project's file is read before it is trusted).
MAX_BYTES = 4 << 20


def user_settings_file(env: Mapping[str, str]) -> Path:
    """``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/settings.json`` (``$HOME``)."""
    folder = env.get("CLAUDE_CONFIG_DIR", "")
    if folder:
        return Path(folder).expanduser() / "settings.json"
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude" / "settings.json"


def project_settings_files(directory: Path, worktree: Path) -> list[Path]:
    """The project's settings files that exist, outermost folder first, ``settings.json``
    before ``settings.local.json`` in each (``directory`` alone when it is not inside
    ``worktree``). Plain ``os.path`` calls: this runs at every start, mostly to find nothing."""
    here, top = str(directory), str(worktree)
    folders = [here]
    while here != top:
        parent = os.path.dirname(here)
        if parent == here:  # the worktree is not above: the directory alone
            folders = [str(directory)]
            break
        here = parent
        folders.append(here)
    found: list[Path] = []
    for folder in reversed(folders):
        claude = os.path.join(folder, ".claude")
        if os.path.isdir(claude):
            found.extend(
                Path(claude, name) for name in SETTINGS_NAMES if os.path.isfile(os.path.join(claude, name))
            )
    return found


def _read_bytes(path: Path) -> bytes:
    """A regular file of at most ``MAX_BYTES`` (a FIFO or device raises instead of blocking)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES >> 20} MiB")
    return data


def _parse(text: str, path: Path) -> JsonValue:
    """Claude Code writes plain JSON: parsed as such (fast); JSONC's reader (comments, and an
    error naming the line and column) only when that fails."""
    try:
        value: JsonValue = json.loads(text)
        return value
    except (ValueError, RecursionError):  # not JSON, or nested too deeply
        return parse_jsonc(text, str(path))


def read_settings(path: Path, project: bool, root: Path, dropped: Sequence[Loc] = ()) -> ConfigFile:
    """One settings file as a ``ConfigFile`` (kind "settings"): its ``hooks`` and
    ``disableAllHooks`` (``dropped`` places left out), or the ``problem`` that kept it unread."""
    data = b""
    try:
        data = _read_bytes(path)
        value = _parse(data.decode("utf-8"), path)
    except UnicodeDecodeError:
        problem = f"{path}: not valid UTF-8 text"
    except OSError as err:
        problem = f"{path}: cannot read: {err.strerror or err}"
    except (ValueError, ConfigError) as err:
        problem = str(err) if isinstance(err, ConfigError) else f"{path}: {err}"
    else:
        if isinstance(value, dict):
            raw: JsonObject = {key: value[key] for key in KEPT_KEYS if key in value}
            raw = drop_keys(raw, dropped) if dropped else raw
            return ConfigFile(path, project, raw, hashlib.sha256(data).hexdigest(), root, "settings")
        problem = f"{path}: expected a JSON object at the top level, got {type(value).__name__}"
    return ConfigFile(path, project, {}, hashlib.sha256(data).hexdigest(), root, "settings", problem)


def settings_files(
    directory: Path,
    worktree: Path,
    env: Mapping[str, str],
    without: Mapping[Path, Sequence[Loc]] | None = None,
) -> list[ConfigFile]:
    """The user's settings file then the project's, each that exists and sets ``hooks`` or
    ``disableAllHooks`` (or could not be read). The user's file found inside the project
    (etcode started in the home folder) stays the user's."""
    user = user_settings_file(env)
    found: list[ConfigFile] = []
    seen: set[Path] = set()
    candidates = [(user, False)] if user.is_file() else []
    candidates += [(path, True) for path in project_settings_files(directory, worktree)]
    for path, project in candidates:
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        file = read_settings(path, project, worktree, (without or {}).get(path, ()))
        if file.raw or file.problem:
            found.append(file)
    return found
