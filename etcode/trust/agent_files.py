"""The project's markdown agents as layers for the trust check: their front matter can set
``permission`` rules, which a project must not loosen unasked (``project.py``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.config.raw import ConfigFile, Loc, drop_keys
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.config.schema import Config


def agent_file_layers(
    directory: Path, worktree: Path, without: Mapping[Path, Sequence[Loc]] | None = None
) -> list[ConfigFile]:
    """The project's markdown agents whose front matter sets ``permission`` rules, as
    ``ConfigFile``s for the trust check (one that cannot be read is left to the agent
    registry, which reports it)."""
    from etcode.agent.registry import TRUSTED_SETTINGS, parse_markdown, project_agent_files

    found: list[ConfigFile] = []
    for path in project_agent_files(directory, worktree):
        try:
            data = path.read_bytes()
            meta, _ = parse_markdown(data.decode("utf-8"), str(path))
        except (OSError, UnicodeDecodeError, ConfigError):
            continue
        judged = {key: meta[key] for key in TRUSTED_SETTINGS if key in meta}
        if not judged:
            continue
        raw: JsonObject = {"agent": {path.stem: judged}}
        dropped = (without or {}).get(path)
        raw = drop_keys(raw, dropped) if dropped else raw
        found.append(ConfigFile(path, True, raw, hashlib.sha256(data).hexdigest(), worktree, "agent"))
    return found


def trust_layers(config: Config) -> list[ConfigFile]:
    """The files a loaded ``Config`` was read from, then its project's markdown agents that
    set ``permission`` rules (each file's settings left out as ``load_config(without=...)``)."""
    files = list(getattr(config, "files", None) or [])
    folders: tuple[Path, Path] | None = getattr(config, "folders", None)
    if folders is not None:
        directory, worktree = folders
        files.extend(agent_file_layers(directory, worktree, config.without))
    return files
