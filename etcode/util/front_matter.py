"""YAML front matter of a Markdown file (``---`` / settings / ``---`` / body): the shape of
markdown agents, skills (``SKILL.md``) and custom commands."""

from __future__ import annotations

from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject


def split_front_matter(text: str, where: str = "<markdown>") -> tuple[JsonObject, str]:
    """``(settings, body)`` of ``text``; ``({}, text)`` when it has no front matter.

    Raises :class:`ConfigError` naming ``where`` (and the line) for front matter that is not
    closed, not YAML, or not a mapping."""
    import yaml

    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        return {}, text.strip()
    lines = text.splitlines()
    if lines[0].strip() != "---":
        return {}, text.strip()
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        raise ConfigError(f"{where}: front matter is not closed with ---")
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 2}" if mark is not None else ""
        raise ConfigError(f"{where}:{line} invalid YAML front matter") from None
    if not isinstance(meta, dict):
        raise ConfigError(f"{where}: front matter must be a mapping of settings")
    return {str(key): value for key, value in meta.items()}, "\n".join(lines[end + 1 :]).strip()
