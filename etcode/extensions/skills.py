"""Skills: folders holding a ``SKILL.md`` (the Agent Skills format Claude Code, Codex, opencode
and Gemini CLI read), found where a team and a user keep them.

Where, highest first (a name found again lower down is that skill's shadow, silently):
the ``Agent(skills=[...])`` folders (``"api"``), the user's ``~/.config/etcode/skills/``
(``$XDG_CONFIG_HOME``) and ``~/.claude/skills/`` (``"user"``: Claude Code's order, personal
over project, so a cloned repository cannot replace a skill of yours), the project's
``.etcode/skills/``, ``.claude/skills/`` and ``.agents/skills/`` from the working directory up
to the worktree root (``"project"``, nearest first), then ``config.skills.paths``
(``"config"``: a skill folder or a folder of skills, relative to the worktree, ``~/``
allowed). ``config.skills.disabled`` leaves skills out by name (never by folder).

Discovery reads only each ``SKILL.md``'s front matter (the body is read when a skill is
loaded). As in Claude Code, a skill with no ``name`` takes its folder's, and one with no
``description`` its body's first paragraph. A broken skill — front matter that is not YAML,
no description at all, a name another skill of the same level took — is one warning naming
its file, never an error.
A project's skill reached through a link out of the project is skipped with a warning unless
the project is trusted (``prompt/project_files.refusal``, as instruction files).
``allowed-tools`` is kept for information only: it never changes a permission.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

from etcode.util.json_types import JsonObject, JsonValue
from etcode.util.paths import config_dir, folders_between

if TYPE_CHECKING:
    from etcode.config.schema import Config

logger = logging.getLogger("etcode.extensions")

SKILL_FILE = "SKILL.md"
#: The project's skill folders at each level, first wins a name clash there.
PROJECT_FOLDERS = (".etcode/skills", ".claude/skills", ".agents/skills")
#: A skill name: what ``/skills NAME`` and the Skill tool take (the Agent Skills spec asks
#: lowercase letters, digits and hyphens; upper case, ``_`` and ``.`` are let through).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
#: Front matter longer than this (lines) is not a skill's.
MAX_FRONT_LINES = 400
#: ... or longer than this (bytes).
MAX_FRONT_BYTES = 64 * 1024
#: A skill's body is read up to this many bytes (the rest is cut, with a line saying so): with
#: its files listed, a loaded skill stays under the chat's 100 KB attachment cap.
MAX_BODY_BYTES = 64 * 1024
_BLOCK = 4096
#: The line that closes the front matter (with the line break before it).
_FENCE = re.compile(rb"\n---[ \t]*\r?(?=\n|$)")  # (at the line's start: ``  ---`` is text)
#: Bundled files listed for the model (the rest is counted, up to ``MAX_COUNTED_FILES``).
MAX_LISTED_FILES = 100
MAX_COUNTED_FILES = 5000
#: Folders a skill's listing walks at most (``Skill.files``).
MAX_VISITED_FOLDERS = 2000
_SKIPPED_FOLDERS = frozenset({".git", "__pycache__", "node_modules", ".venv"})

Source = Literal["api", "project", "config", "user"]


@dataclass(frozen=True)
class Skill:
    """One skill: ``name`` and ``description`` from its front matter, ``path`` of its
    ``SKILL.md`` (its folder holds the bundled files), where it was found (``source``), and
    whether only the user may load it (``user_only``). Its ``allowed-tools`` (recorded,
    never granted) and the other front-matter keys (``extra``) are read when first asked
    for: discovery reads no more than the three keys it needs (and no YAML for them)."""

    name: str
    description: str
    path: Path
    source: Source
    #: ``disable-model-invocation: true`` (Claude Code's): only ``/skills NAME`` loads it.
    user_only: bool = False
    #: The worktree of an untrusted project whose skill this is: loading checks again that
    #: ``SKILL.md`` does not link out of it (it may have changed since discovery).
    guard: Path | None = field(default=None, compare=False, hash=False)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def model_invocable(self) -> bool:
        """False for a skill whose front matter says ``disable-model-invocation: true``
        (Claude Code's: only the user loads it, with ``/skills NAME``)."""
        return not self.user_only

    @cached_property
    def meta(self) -> JsonObject:
        """The whole front matter (read now, with YAML when it needs it; ``{}`` when it
        cannot be read any more)."""
        try:
            return _front_matter(self.path)
        except (SkillError, OSError):
            return {}

    @property
    def allowed_tools(self) -> tuple[str, ...]:
        """``allowed-tools`` as names: shown to the model as a note, never a permission."""
        return tool_names(self.meta.get("allowed-tools", self.meta.get("allowed_tools")))

    @property
    def extra(self) -> JsonObject:
        """The front-matter keys besides ``name``, ``description`` and ``allowed-tools``."""
        skip = ("name", "description", "allowed-tools", "allowed_tools")
        return {key: value for key, value in self.meta.items() if key not in skip}

    def body(self) -> str:
        """The instructions: ``SKILL.md`` without its front matter (read now, at most
        :data:`MAX_BODY_BYTES`: a longer one is cut, with a line saying so)."""
        if self.guard is not None:
            from etcode.prompt.project_files import refusal

            reason = refusal(self.path, self.guard)
            if reason is not None:
                raise SkillError(f"{self.path}: {reason}")
        with open_regular(self.path) as handle:
            data = handle.read(MAX_BODY_BYTES + 1)
        text = strip_front_matter(data[:MAX_BODY_BYTES].decode("utf-8", errors="replace"))
        if len(data) > MAX_BODY_BYTES:
            text += f"\n\n[… {self.path} is cut at {MAX_BODY_BYTES // 1024} KB: read the rest with ReadFile]"
        return text

    def files(self, limit: int = MAX_LISTED_FILES) -> tuple[list[str], int, bool]:
        """The files bundled beside ``SKILL.md`` (paths relative to :attr:`folder`, sorted;
        hidden and dependency folders left out): at most ``limit``, how many there are, and
        whether the walk stopped early (past :data:`MAX_COUNTED_FILES` files or
        :data:`MAX_VISITED_FOLDERS` folders: a skill is no place for a whole tree, and thousands
        of empty folders must not stall a turn)."""
        found: list[str] = []
        stopped = False
        for visited, (top, folders, names) in enumerate(os.walk(self.folder), start=1):
            if visited > MAX_VISITED_FOLDERS:
                stopped = True
                break
            folders[:] = sorted(f for f in folders if f not in _SKIPPED_FOLDERS and not f.startswith("."))
            relative = Path(top).relative_to(self.folder)
            found.extend((relative / n).as_posix() for n in names if not n.startswith("."))
            if len(found) > MAX_COUNTED_FILES:
                stopped = True
                break
        found = sorted(f for f in found if f != SKILL_FILE)
        return found[:limit], len(found), stopped


class SkillSet:
    """The skills in force, in listing order (api, user, project, config; by name within
    each), and the warnings discovery gave (one line each, naming the file)."""

    def __init__(self, skills: list[Skill] | None = None, warnings: list[str] | None = None) -> None:
        self.skills: list[Skill] = skills or []
        self.warnings: list[str] = warnings or []

    def __bool__(self) -> bool:
        return bool(self.skills)

    def __len__(self) -> int:
        return len(self.skills)

    def __repr__(self) -> str:
        return f"SkillSet({self.names()!r}, {len(self.warnings)} warnings)"

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)

    def names(self) -> list[str]:
        return [skill.name for skill in self.skills]

    def for_model(self) -> SkillSet:
        """The skills the model may load (listed in its prompt, offered by the Skill tool)."""
        return SkillSet([skill for skill in self.skills if skill.model_invocable])


# ---- where ----------------------------------------------------------------------------------


def user_folders(env: Mapping[str, str] | None = None) -> list[Path]:
    """The user's skill folders: etcode's (``$XDG_CONFIG_HOME/etcode/skills``) and Claude Code's."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    return [config_dir(env) / "skills", home / ".claude" / "skills"]


def project_levels(directory: Path, worktree: Path) -> list[list[Path]]:
    """The project's skill folders, one list per level from ``directory`` (nearest) up to
    ``worktree``."""
    return [
        [level / sub for sub in PROJECT_FOLDERS] for level in reversed(folders_between(directory, worktree))
    ]


def config_folders(paths: Iterable[str], worktree: Path) -> list[Path]:
    """``config.skills.paths`` as folders: ``~`` expanded, relative to ``worktree``."""
    found = []
    for entry in paths:
        if entry.strip():
            path = Path(os.path.expanduser(entry.strip()))
            found.append(path if path.is_absolute() else worktree / path)
    return found


# ---- finding --------------------------------------------------------------------------------


def find_skills(
    directory: Path,
    worktree: Path | None = None,
    *,
    config: Config | None = None,
    extra: Sequence[str | Path] = (),
    env: Mapping[str, str] | None = None,
) -> SkillSet:
    """Every skill in force for ``directory`` (see the module docstring). ``config`` gives
    ``skills.paths``, ``skills.disabled`` and ``trusted``; ``extra`` the caller's own folders
    (each a skill or a folder of skills). Blocking: call it in a worker thread."""
    directory = Path(os.path.abspath(directory))
    worktree = Path(os.path.abspath(worktree)) if worktree is not None else directory
    disabled = frozenset(config.skills.disabled) if config is not None else frozenset()
    trusted = config.trusted if config is not None else False
    scan = _Scan(worktree, disabled, trusted)
    scan.level([Path(os.path.abspath(Path(p).expanduser())) for p in extra], "api", either=True)
    # The user's before the project's (Claude Code's order: personal over project): a cloned
    # repository does not replace a skill of yours by naming one of its own the same.
    scan.level(user_folders(env), "user")
    for level in project_levels(directory, worktree):
        scan.level(level, "project")
    if config is not None:
        scan.level(config_folders(config.skills.paths, worktree), "config", either=True)
    return SkillSet(scan.skills, scan.warnings)


class _Scan:
    """One discovery: the skills kept so far (first wins a name) and the warnings."""

    def __init__(self, worktree: Path, disabled: frozenset[str], trusted: bool) -> None:
        self.worktree = worktree
        self.disabled = disabled
        self.trusted = trusted
        self.skills: list[Skill] = []
        self.warnings: list[str] = []
        self._by_name: dict[str, Skill] = {}
        self._seen: set[tuple[int, int]] = set()  # files taken
        self._warned: set[tuple[int, int]] = set()  # broken files (one warning each)
        self._refused: set[tuple[int, int]] = set()  # refused through a link (one warning each)
        self._verdicts: dict[str, str | None] = {}  # linked project files: why refused, or None

    def level(self, roots: Sequence[Path], source: Source, either: bool = False) -> None:
        """The skills of one level (its folders in order; a name taken twice here warns).
        ``either``: each root may be a skill itself or a folder of skills."""
        here: dict[str, Skill] = {}
        guarded = source in ("project", "config") and not self.trusted
        for root in roots:
            if either and not os.path.isdir(root):  # a folder named by the user or the caller
                self._warn(f"skills folder not found: {root}")
                continue
            root_linked = guarded and _through_link(root, self.worktree)
            files = [(path, root_linked or linked) for path, linked in _skill_files(str(root), either)]
            if guarded:
                # (a SKILL.md that is itself a link, rare, is judged alone in ``_read``)
                self._judge([path for path, linked in files if linked])
            for path, linked in files:
                skill = self._read(path, source, guarded, linked)
                if skill is None:
                    continue
                if skill.name in here:
                    self._warn(
                        f"skipped skill {path}: the name {skill.name!r} is taken by {here[skill.name].path}"
                    )
                    continue
                here[skill.name] = skill
        for skill in sorted(here.values(), key=lambda s: s.name):
            if skill.name not in self._by_name and skill.name not in self.disabled:
                self._by_name[skill.name] = skill
                self.skills.append(skill)

    def _judge(self, paths: list[str]) -> None:
        """The verdicts on linked project files, asked of git at once (see ``_read``)."""
        if paths:
            from etcode.prompt.project_files import refusals

            self._verdicts.update(zip(paths, refusals(paths, self.worktree), strict=True))

    def _read(self, path: str, source: Source, guarded: bool, linked: bool) -> Skill | None:
        """The skill of ``path`` or None (no such file, seen already, refused, broken).
        ``guarded``: a project's file, checked when it is reached through a link below the
        worktree (``linked``: a folder on the way is one; or ``SKILL.md`` itself). A file is
        "seen" only once taken: a copy refused through a project's link stays the user's."""
        try:
            facts = os.lstat(path)
            if stat.S_ISLNK(facts.st_mode):
                linked = True
                facts = os.stat(path)
        except OSError:  # a folder without SKILL.md (or a link to nothing): no skill
            if not (guarded and linked and os.path.islink(path)):
                return None
            facts = None
        identity = (facts.st_dev, facts.st_ino) if facts is not None else (-1, hash(path))
        if identity in self._seen:  # the same file through another folder (a linked .agents/skills)
            return None
        if guarded and linked:
            from etcode.prompt.project_files import refusal, skip_warning

            reason = self._verdicts[path] if path in self._verdicts else refusal(path, self.worktree)
            if reason is not None:  # (the same file reached another way may still be taken)
                if identity not in self._refused:
                    self._refused.add(identity)
                    self._warn(skip_warning("skill", path, reason))
                return None
        if facts is not None and not stat.S_ISREG(facts.st_mode):  # a FIFO, a device: never read
            if identity not in self._warned:
                self._warned.add(identity)
                self._warn(f"skipped skill {path}: not a regular file")
            return None
        if identity in self._warned:  # broken, and said so already
            return None
        try:
            skill = read_skill(path, source, self.worktree if guarded else None)
        except SkillError as err:
            self._warn(f"skipped skill {err}")
        except OSError as err:
            self._warn(f"skipped skill {path}: {err.strerror or err}")
        else:
            if skill.name in self.disabled:
                return None
            self._seen.add(identity)
            return skill
        self._warned.add(identity)
        return None

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        logger.debug("%s", message)


def _through_link(folder: Path, worktree: Path) -> bool:
    """Is ``folder`` (inside ``worktree``) reached through a symbolic link below it? (The
    full verdict on such a path is ``prompt/project_files.refusal``'s.)"""
    try:
        parts = folder.relative_to(worktree).parts
    except ValueError:
        return False  # outside the project: not the project's file
    current = str(worktree)
    for part in parts:
        current = os.path.join(current, part)
        if os.path.islink(current):
            return True
    return False


def _skill_files(root: str, either: bool) -> list[tuple[str, bool]]:
    """The places of ``SKILL.md`` files in ``root`` — its own when ``either`` and it has one,
    else one in each sub-folder (by name; hidden ones left out), not checked to exist — and
    whether the sub-folder is a link. (Strings, not ``Path``: a hundred skills are listed
    in a few milliseconds.)"""
    own = os.path.join(root, SKILL_FILE)
    if either and os.path.isfile(own):
        return [(own, False)]
    try:
        with os.scandir(root) as listing:
            entries = sorted(
                (e for e in listing if not e.name.startswith(".") and e.is_dir()), key=lambda e: e.name
            )
    except OSError:  # no such folder (the usual case), or not a folder
        return []
    return [(os.path.join(entry.path, SKILL_FILE), entry.is_symlink()) for entry in entries]


# ---- reading --------------------------------------------------------------------------------


class SkillError(Exception):
    """A ``SKILL.md`` that is no skill: the message starts with its path."""


def read_skill(path: str | Path, source: Source, guard: Path | None = None) -> Skill:
    """The skill of ``path`` (a ``SKILL.md``) from its front matter alone (its ``name``,
    ``description`` and ``disable-model-invocation`` scanned, or YAML when a line needs it).
    Raises :class:`SkillError` naming the file for one that is not a skill."""
    lines = _front_lines(path)
    meta = simple_front_matter(lines)  # the usual: plain lines, all of it read at once
    quick = scan_front_matter(lines) if meta is None else None
    if quick is None:
        meta = meta if meta is not None else _yaml_front_matter(lines, path)
        quick = (meta.get("name"), meta.get("description"), meta.get("disable-model-invocation") is True)
    name, description, user_only = quick
    if name is None or (isinstance(name, str) and not name.strip()):
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))  # Claude Code's fallback
    if not isinstance(name, str):
        raise SkillError(f"{path}: the name in its front matter is not text")
    name = name.strip()
    if not NAME.fullmatch(name):
        raise SkillError(f"{path}: the name {name!r} is not 1-64 letters, digits, '-', '_' or '.'")
    if description is None or (isinstance(description, str) and not description.strip()):
        description = _first_paragraph(path)  # Claude Code's fallback: the body's start
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{path}: no description in its front matter, nor a first paragraph")
    skill = Skill(name, " ".join(description.split()), Path(path), source, user_only, guard)
    if meta is not None:
        skill.__dict__["meta"] = meta  # read already (cached_property's own slot)
    return skill


#: The keys discovery needs; a line it cannot read as YAML would sends the whole front matter
#: to YAML.
_WANTED = frozenset({"name", "description", "disable-model-invocation"})
_TOP_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]|$)(.*)")
_BLOCK_INDICATOR = re.compile(r"[|>][+-]?[1-9]?|[|>][1-9]?[+-]?")
_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})


def scan_front_matter(lines: Sequence[str]) -> tuple[str | None, str | None, bool] | None:
    """``(name, description, disable-model-invocation)`` scanned from the front matter's
    lines without YAML: top-level ``key:`` lines, a block scalar (``|``, ``>``, ``>-``...) or
    plain text going on over indented lines (either is folded to spaces: a description is
    whitespace-collapsed anyway), a one-line quoted value; other keys' values (maps, lists)
    skipped whatever they hold. None when a line of the three keys (or one at the top level
    that is not a key) needs YAML to be read as YAML reads it."""
    found: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] in " \t-":  # a value of the key before (skipped)
            continue
        match = _TOP_KEY.fullmatch(line)
        if match is None:
            return None
        key, rest = match.group(1), match.group(2).strip()
        if key not in _WANTED:
            continue
        if key in found or "\t" in line:
            return None
        more: list[str] = []
        while index < len(lines) and (not lines[index].strip() or lines[index][0] == " "):
            more.append(lines[index].strip())
            index += 1
        lines_after = [m for m in more if m]
        if key == "disable-model-invocation":
            if lines_after or rest.lower() not in _TRUE | _FALSE:
                return None
            value: str | None = rest.lower()
        else:
            value = _scanned_value(rest, lines_after)
        if value is None:
            return None
        found[key] = value
    return found.get("name"), found.get("description"), found.get("disable-model-invocation") in _TRUE


def _scanned_value(rest: str, more: list[str]) -> str | None:
    """The text of one value (``rest`` after the colon, ``more`` its indented lines), or None
    when YAML would read it otherwise (quotes over lines, comments, ``: `` inside, a map...)."""
    if _BLOCK_INDICATOR.fullmatch(rest):
        return " ".join(more)
    if not rest:
        return None  # a map or list under the key, or nothing: YAML says
    if rest[0] in "'\"":
        return _quoted(rest) if not more else None
    for text in (rest, *more):
        if ": " in text or " #" in text or text.endswith(":") or "\t" in text:
            return None
    if rest[0] in _NOT_PLAIN_START or rest[0] in "+." or rest[0].isdigit():
        return None
    if not more and rest.lower() in _YAML_WORDS:
        return None  # a boolean or null to YAML
    return " ".join([rest, *more])


def _first_paragraph(path: str | Path) -> str:
    """The first paragraph of ``path``'s body that is not a heading (read up to
    :data:`MAX_FRONT_BYTES`), or ``""``."""
    with open_regular(path) as handle:
        text = strip_front_matter(handle.read(MAX_FRONT_BYTES).decode("utf-8", errors="replace"))
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if lines:
            return " ".join(" ".join(lines).split())[:1024]
    return ""


def tool_names(value: JsonValue) -> tuple[str, ...]:
    """``allowed-tools`` as names: a list, or one string separated by spaces or commas
    (``"Bash(git add:*) Read, Grep"``: a pattern in brackets stays whole)."""
    if isinstance(value, list):
        return tuple(str(item).strip() for item in value if str(item).strip())
    if isinstance(value, str):
        return tuple(re.findall(r"[^\s,(]+(?:\([^)]*\))?", value))
    return ()


def _front_matter(path: str | Path) -> JsonObject:
    """The front matter of ``path``, reading no further than its closing ``---`` (in blocks)."""
    lines = _front_lines(path)
    simple = simple_front_matter(lines)
    return simple if simple is not None else _yaml_front_matter(lines, path)


def _front_lines(path: str | Path) -> list[str]:
    """The lines between the ``---`` fences at the start of ``path`` (read in blocks, no
    further than the closing fence's block, nor than :data:`MAX_FRONT_BYTES`)."""
    with open_regular(path) as handle:
        data = handle.read(_BLOCK).removeprefix(b"\xef\xbb\xbf")
        first = data.split(b"\n", 1)[0]
        if first.strip() != b"---":
            raise SkillError(f"{path}: no front matter (--- then name: and description:)")
        start = len(first)
        lines = data.count(b"\n")
        while True:
            fence = _FENCE.search(data, start)
            if fence is not None and fence.end() < len(data):
                break
            more = handle.read(_BLOCK)  # (a fence at the block's end may go on in the next one)
            if not more:
                if fence is None:
                    raise SkillError(f"{path}: front matter is not closed with ---")
                break
            # Search again from the last line that was not whole: the fence may start there.
            start = max(len(first), data.rfind(b"\n"))
            data += more
            lines += more.count(b"\n")
            if len(data) > MAX_FRONT_BYTES or lines > MAX_FRONT_LINES:
                raise SkillError(
                    f"{path}: front matter is not closed with --- within {MAX_FRONT_LINES} lines"
                    f" or {MAX_FRONT_BYTES // 1024} KB"
                )
    text = data[len(first) + 1 : fence.start()].decode("utf-8", errors="replace")
    return [line.rstrip("\r") for line in text.split("\n")]


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (after links); a FIFO or a device
    (``/dev/zero``) raises :class:`SkillError` instead of hanging or never ending."""
    from etcode.util.fs import NotRegularFileError, regular_opener

    try:
        return open(path, "rb", opener=regular_opener)
    except (NotRegularFileError, IsADirectoryError):
        raise SkillError(f"{path}: not a regular file") from None


def _yaml_front_matter(lines: list[str], path: str | Path) -> JsonObject:
    from etcode.util.errors import ConfigError
    from etcode.util.front_matter import split_front_matter

    try:
        meta, _ = split_front_matter("---\n" + "\n".join(lines) + "\n---\n", str(path))
    except ConfigError as err:
        raise SkillError(str(err)) from None
    return meta


#: Plain values YAML would read as something else than the text itself, or parse in its own way.
_NOT_PLAIN_START = frozenset("'\"[]{}&*!|>%@`#,?:-")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"})
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def simple_front_matter(lines: Sequence[str]) -> JsonObject | None:
    """Front matter of ``key: plain text`` lines read without YAML (the usual ``SKILL.md``,
    in a fraction of the time); None when any line needs YAML to be read as YAML reads it
    (quotes, lists, block text, a ``: `` or `` #`` inside a value, numbers, booleans...)."""
    meta: JsonObject = {}
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        key, colon, rest = line.partition(":")
        if not colon or not key or key[0] in "-0123456789" or not _KEY_CHARS.issuperset(key):
            return None
        value = rest.strip()
        if not rest.startswith(" ") or "\t" in line or key in meta or not value:
            return None
        quoted = _quoted(value)
        if quoted is not None:
            meta[key] = quoted
            continue
        if (
            value[0] in _NOT_PLAIN_START
            or value[0] in "+."
            or value[0].isdigit()
            or value.lower() in _YAML_WORDS
        ):
            return None
        if ": " in value or " #" in value or value.endswith(":"):
            return None
        meta[key] = value
    return meta


def _quoted(value: str) -> str | None:
    """A one-line quoted YAML value's text (``"..."`` with the escapes JSON and YAML share;
    ``'...'`` with ``''`` for a quote); None for anything else (YAML reads it)."""
    if len(value) >= 2 and value[0] == value[-1] == "'":
        inner = value[1:-1]
        return inner.replace("''", "'") if "'" not in inner.replace("''", "") else None
    if len(value) >= 2 and value[0] == value[-1] == '"' and "\\u" not in value and "\\/" not in value:
        import json

        try:
            text = json.loads(value)
        except ValueError:
            return None
        return text if isinstance(text, str) else None
    return None


def strip_front_matter(text: str) -> str:
    """``text`` without the front matter at its start (as :func:`_front_matter` reads it)."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return text.strip()
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip() == "---"), None)
    return text.strip() if end is None else "\n".join(lines[end + 1 :]).strip()
