"""Custom slash commands: Markdown prompts found in the project and the user's folders, in
Claude Code's format (front matter ``description``, ``argument-hint``, ``agent``, ``model``;
other keys such as ``allowed-tools`` are read and ignored).

Where, lowest precedence first (a later one with the same name wins): ``~/.claude/commands``,
``<config dir>/commands`` (``$XDG_CONFIG_HOME/etcode``), then from the worktree root down to
the working directory ``.claude/commands`` and ``.etcode/commands`` (the nearest wins) — but
a project's command never replaces the user's own of the same name (as with skills: a cloned
repository cannot change what your ``/review`` does); that file is ignored with a warning
naming both. A file in a subfolder is namespaced: ``git/commit.md`` is ``/git:commit``. etcode's own
commands of this kind (``/init``: ``prompts/commands/*.md``) and the chat's built-in names
win over a file, with a warning naming it. The expansion of a command's text is
``command_expansion.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject

#: A project's command folders at each level, lowest precedence first.
PROJECT_DIRS = (".claude/commands", ".etcode/commands")
#: etcode's own commands of this kind: ``prompts/commands/<name>.md``.
BUILTIN_PROMPTS = ("init",)
MAX_DESCRIPTION = 100


@dataclass(frozen=True)
class CustomCommand:
    """One command: its name (``git:commit``), what the completion shows, the prompt
    template (``body``), the agent and model it runs with (None: the session's), and the file
    it came from (``prompts/commands/init.md`` for a built-in)."""

    name: str
    body: str
    description: str = ""
    argument_hint: str = ""
    agent: str | None = None
    model: str | None = None
    source: str = ""
    builtin: bool = False
    #: Read from the project's folders (not the user's, not etcode's own): what its text
    #: names (``@path``, ``agent:``) is held to the project's trust.
    project: bool = False


@dataclass
class CommandSet:
    """The commands in force by name (sorted), and one warning per file left out."""

    commands: dict[str, CustomCommand] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> CustomCommand | None:
        return self.commands.get(name)

    def all(self) -> list[CustomCommand]:
        return list(self.commands.values())


def command_head(text: str) -> tuple[str, str] | None:
    """``(name, args)`` of a ``/name args`` text, None when it cannot be a command
    (no slash, ``//x``, ``/ x``, or a path like ``/tmp/x``: the name holds no further slash).
    The arguments may start on the next line."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//") or len(stripped) < 2:
        return None
    if stripped[1].isspace():
        return None
    head = stripped[1:].split(maxsplit=1)[0]
    if "/" in head:
        return None
    return head, stripped[1 + len(head) :].strip()


def user_folders() -> list[Path]:
    """The user's command folders, lowest precedence first."""
    from etcode.util.paths import config_dir

    return [Path.home() / ".claude" / "commands", config_dir() / "commands"]


def project_folders(directory: Path, worktree: Path) -> list[Path]:
    """The project's command folders from the worktree root down to ``directory``."""
    from etcode.util.paths import folders_between

    return [folder / sub for folder in folders_between(directory, worktree) for sub in PROJECT_DIRS]


def load_commands(
    directory: Path,
    worktree: Path,
    *,
    reserved: Iterable[str] = (),
    trusted: bool = False,
    user_dirs: list[Path] | None = None,
) -> CommandSet:
    """Every command in force for ``directory``. ``reserved``: the front end's built-in
    command names (they win). A project file reached through a link out of the project
    (or to a secret or ignored file) is skipped unless the user ``trusted`` the project.
    Blocking: call it in a worker thread from async code."""
    found = CommandSet()
    here = Path(directory).resolve()
    top = Path(worktree).resolve()
    builtins = _builtin_commands()
    taken = {name.lower() for name in reserved} | set(builtins)
    for folder in user_folders() if user_dirs is None else user_dirs:
        _read_folder(folder, None, found, taken, project=False)
    for folder in project_folders(here, top):
        _read_folder(folder, None if trusted else top, found, taken, project=True)
    merged = {**found.commands, **builtins}
    found.commands = {name: merged[name] for name in sorted(merged)}
    return found


def _builtin_commands() -> dict[str, CustomCommand]:
    from etcode.prompt import templates

    commands: dict[str, CustomCommand] = {}
    for name in BUILTIN_PROMPTS:
        where = f"commands/{name}.md"
        command = _command(name, templates.load(where), where)
        commands[name] = replace(command, builtin=True)
    return commands


def _read_folder(
    folder: Path, root: Path | None, found: CommandSet, taken: set[str], *, project: bool
) -> None:
    """Add ``folder``'s commands to ``found``. ``root``: the project whose links are checked."""
    if not folder.is_dir():
        return
    try:
        paths = sorted(folder.rglob("*.md"))
    except OSError as err:
        found.warnings.append(f"{folder}: commands not read: {err.strerror or err}")
        return
    linked = root is not None and _linked(folder, root)
    for path in paths:
        name = ":".join(path.relative_to(folder).with_suffix("").parts)
        if path.is_dir() or not name:  # a FIFO or a broken link is read, and warned about
            continue
        if root is not None and (linked or _linked(path, folder)):
            from etcode.prompt.project_files import refusal, skip_warning

            reason = refusal(path, root)
            if reason is not None:
                found.warnings.append(skip_warning("command", path, reason))
                continue
        if name.lower() in taken:
            found.warnings.append(f"{path}: /{name} is a built-in command; this file is ignored")
            continue
        mine = found.commands.get(name)
        if project and mine is not None and not mine.project:  # a cloned repository cannot replace yours
            found.warnings.append(f"{path}: /{name} is also your command {mine.source}; yours is used")
            continue
        try:
            command = _read_command(name, path)
            found.commands[name] = replace(command, project=True) if project else command
        except (OSError, UnicodeDecodeError) as err:
            found.warnings.append(f"{path}: command not read: {getattr(err, 'strerror', None) or err}")
        except ConfigError as err:
            found.warnings.append(f"{err} (command /{name} skipped)")


def _linked(path: Path, top: Path) -> bool:
    """Is ``path`` or a folder between ``top`` and it a symbolic link? (The common case, no
    link at all, costs a few ``lstat`` calls; a link goes to the full check.)"""
    current = str(path)
    stop = os.path.dirname(str(top))
    while len(current) > len(stop):
        if os.path.islink(current):
            return True
        current = os.path.dirname(current)
    return False


#: Files read before, by (path, name, modification time, size): the chat reads the folders
#: again every few seconds, and parsing YAML is what costs (about 1 ms a file).
_READ: dict[tuple[Path, str, int, int], CustomCommand] = {}


#: A command file larger than this is not read (a cloned project supplies them).
MAX_COMMAND_BYTES = 256 * 1024


def _read_command(name: str, path: Path) -> CustomCommand:
    stat = path.stat()
    key = (path, name, stat.st_mtime_ns, stat.st_size)
    command = _READ.get(key)
    if command is None:
        from etcode.util.fs import read_regular_capped

        text = read_regular_capped(path, MAX_COMMAND_BYTES).decode("utf-8")
        command = _command(name, text, str(path))
        if len(_READ) > 1000:
            _READ.clear()
        _READ[key] = command
    return command


def _command(name: str, text: str, where: str) -> CustomCommand:
    """One command file read; :class:`ConfigError` naming ``where`` for a bad setting."""
    from etcode.agent.claude_agents import model_setting
    from etcode.util.front_matter import split_front_matter

    try:
        meta, body = split_front_matter(text, where)
    except ConfigError:
        plain = _plain_front_matter(text)
        if plain is None:
            raise
        meta, body = plain
    texts: dict[str, str] = {}
    for key in ("description", "argument-hint", "agent", "model"):
        value = meta.get(key)
        if isinstance(value, list) and key == "argument-hint":
            value = " ".join(f"[{item}]" for item in value)  # ``[a] [b]`` read as YAML: [a, b]
        if value is not None and not isinstance(value, str | int | float):
            raise ConfigError(f"{where}: {key}: expected a string")
        if value is not None:
            texts[key] = str(value).strip()
    description = texts.get("description") or _first_line(body)
    return CustomCommand(
        name=name,
        body=body,
        description=description,
        argument_hint=texts.get("argument-hint", ""),
        agent=texts.get("agent") or None,
        model=model_setting(texts.get("model")),
        source=where,
    )


def _first_line(body: str) -> str:
    """A command without a description is described by its first line (as Claude Code does)."""
    line = next((line.strip().lstrip("#").strip() for line in body.splitlines() if line.strip()), "")
    return line if len(line) <= MAX_DESCRIPTION else line[: MAX_DESCRIPTION - 1] + "…"


def _plain_front_matter(text: str) -> tuple[JsonObject, str] | None:
    """Front matter that is not valid YAML read as Claude Code reads it: ``key: value``
    lines, each value a plain string (``argument-hint: [pr-number] [priority]`` is a YAML
    error). None when the front matter is not closed."""
    lines = text.removeprefix("\ufeff").splitlines()
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if not lines or lines[0].strip() != "---" or end is None:
        return None
    meta: JsonObject = {}
    for line in lines[1:end]:
        key, colon, value = line.partition(":")
        if colon and key.strip() and not line[:1].isspace():
            meta[key.strip()] = _unquote(value.strip())
    return meta, "\n".join(lines[end + 1 :]).strip()


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
