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
    if _too_deep(source):
        raise ConfigError(f"{where}: front matter nested too deeply")
    try:
        # libyaml's loader when the wheel has it: 5-10 times faster on many small files.
        meta = yaml.load(source, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}  # noqa: S506
    except (yaml.YAMLError, RecursionError):
        raise ConfigError(f"{where}:{_error_line(source)} invalid YAML front matter") from None
    if not isinstance(meta, dict):
        raise ConfigError(f"{where}: front matter must be a mapping of settings")
    return {str(key): value for key, value in meta.items()}, "\n".join(lines[end + 1 :]).strip()


#: Deeper front matter is refused before YAML reads it: libyaml's reader overflows the C stack
#: (the process dies) at some 30,000 nested ``[``, the pure-Python one the recursion limit.
MAX_NESTING = 64


def _too_deep(source: str) -> bool:
    """Whether ``source`` nests collections deeper than :data:`MAX_NESTING` levels: open
    brackets (quotes are not told apart: a string holding that many is refused too) or a
    block line's indentation and leading ``- `` items."""
    depth = 0
    for char in source:
        if char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif char in "]}":
            depth = max(depth - 1, 0)
    for line in source.splitlines():
        body = line.lstrip(" ")
        levels = (len(line) - len(body)) // 2
        while body.startswith(("- ", "? ")):
            levels += 1
            body = body[2:].lstrip(" ")
        if levels > MAX_NESTING:
            return True
    return False


def _error_line(source: str) -> str:
    """`` line N`` (of the file) where YAML's own reader places the error in ``source`` (it
    places it better than libyaml's), or ``""``."""
    import yaml

    try:
        yaml.safe_load(source)
    except RecursionError:
        return ""
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        if mark is not None:
            return f" line {mark.line + 2}"
    return ""
