"""Claude Code's settings files, read for their hooks (issue 28): ``.claude/settings.json``
and ``.claude/settings.local.json`` in the worktree root and every folder down to the
working directory (the project's, outermost first), and ``~/.claude/settings.json`` (the
user's; ``$CLAUDE_CONFIG_DIR/settings.json`` when that is set). Which of them exist is the
config loader's question (``config/loader.claude_settings_paths``: plain ``os.path`` calls);
this module is imported only when one does.

Only ``hooks`` and ``disableAllHooks`` are kept (Claude Code's other keys mean nothing to
etcode). A file that cannot be read never stops a start: it is kept with its ``problem``
(``extensions/hook_set.py`` turns that into a warning). They are read with the config, once,
so the hooks that run are the ones the project-trust check saw (``trust/project.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from etcode.config.jsonc import parse_jsonc
from etcode.config.raw import ConfigFile, Loc, drop_keys
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue

KEPT_KEYS = ("hooks", "disableAllHooks")
#: A settings file larger than this is not read (a cloned project's file is read before it is trusted).
MAX_BYTES = 4 << 20


def _read_bytes(path: Path) -> bytes:
    """A regular file of at most ``MAX_BYTES`` (a FIFO or device raises instead of blocking)."""
    from etcode.util.fs import read_regular_capped

    return read_regular_capped(path, MAX_BYTES)


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
    candidates: Sequence[tuple[Path, bool]],
    worktree: Path,
    without: Mapping[Path, Sequence[Loc]] | None = None,
) -> list[ConfigFile]:
    """The settings files of ``candidates`` (``(path, project)``, the user's first:
    ``config/loader.claude_settings_paths``) that set ``hooks`` or ``disableAllHooks`` (or
    could not be read). The user's file found inside the project (etcode started in the
    home folder) stays the user's."""
    found: list[ConfigFile] = []
    seen: set[Path] = set()
    for path, project in candidates:
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        file = read_settings(path, project, worktree, (without or {}).get(path, ()))
        if file.raw or file.problem:
            found.append(file)
    return found
