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
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip() == "---"), None)
    if end is None:
        raise ConfigError(f"{where}: front matter is not closed with ---")
    source = "\n".join(lines[1:end])
    try:
        # libyaml's loader when the wheel has it: 5-10 times faster on many small files.
        meta = yaml.load(source, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}  # noqa: S506
    except yaml.YAMLError:
        raise ConfigError(f"{where}:{_error_line(source)} invalid YAML front matter") from None
    if not isinstance(meta, dict):
        raise ConfigError(f"{where}: front matter must be a mapping of settings")
    return {str(key): value for key, value in meta.items()}, "\n".join(lines[end + 1 :]).strip()


def _error_line(source: str) -> str:
    """`` line N`` (of the file) where YAML's own reader places the error in ``source`` (it
    places it better than libyaml's), or ``""``."""
    import yaml

    try:
        yaml.safe_load(source)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        if mark is not None:
            return f" line {mark.line + 2}"
    return ""
