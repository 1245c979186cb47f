"""The configuration as read, before validation: a key's place in a file (``Loc``), one
file's raw data (``ConfigFile``) and a copy without some places (``drop_keys``).

It imports nothing of etcode's config, so the loader, the trust check and the agent
registry (markdown agents' front matter) share it without importing each other.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from etcode.util.json_types import JsonObject, JsonValue

#: A key's place in a file's JSON: ``("provider", 0, "baseURL")``.
Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class ConfigFile:
    """One config file as read, kept on the ``Config`` for the project-trust check
    (``trust/project.py``): its data before ``{env:}``/``{file:}`` substitution, so one can
    tell where a value comes from (without what ``load_config(without=...)`` left out),
    and the sha256 of its bytes."""

    path: Path
    #: True for files found in the worktree; the global file and ``ETCODE_CONFIG`` are the user's.
    project: bool
    raw: JsonObject
    sha256: str
    #: The worktree the file was found in (``{file:}`` paths outside it are the user's files).
    root: Path
    #: "config" (an ``etcode.json``), or "agent": a project markdown agent
    #: (``.etcode/agent/<name>.md``) whose front matter sets ``permission``, kept as
    #: ``{"agent": {name: {"permission": ...}}}`` (never substituted; ``trust/agent_files.py``),
    #: or "settings": Claude Code's ``.claude/settings.json``, only its ``hooks`` and
    #: ``disableAllHooks`` kept (never substituted; ``config/claude_settings.py``).
    kind: str = "config"
    #: Why a "settings" file could not be read (one line naming it); its ``raw`` is then empty.
    problem: str = ""


class _Dropped:
    """Marks a list item to remove once every place is dropped (indexes stay valid)."""


_DROPPED = _Dropped()


def drop_keys(data: JsonObject, locs: Sequence[Loc]) -> JsonObject:
    """A copy of ``data`` without the values at ``locs`` (a missing place is ignored)."""
    out = copy.deepcopy(data)
    for loc in locs:  # list items are marked first and removed at the end: indexes stay valid
        parent: JsonValue = out
        for part in loc[:-1]:
            try:
                parent = parent[part]
            except (KeyError, IndexError, TypeError):
                parent = None
                break
        last = loc[-1] if loc else None
        if isinstance(parent, dict) and last in parent:
            del parent[last]
        elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
            parent[last] = _DROPPED
    return {key: _without_dropped(value) for key, value in out.items()}


def _without_dropped(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        return {k: _without_dropped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_dropped(v) for v in value if v is not _DROPPED]
    return value
