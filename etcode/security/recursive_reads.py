"""Commands that read every file under a folder (``grep -r``, ``rg``, ``git grep
--untracked``, ``find … -exec`` or ``find … | xargs``, ``tar c``, ``cp -r``, ``zip -r``,
``rsync``, ``diff -r``) and the folders they read, for the ``read`` rules: ``grep -r sk- .``
reads ``.env`` as surely as ``cat .env`` does (issue 27, item 6).

:func:`folder_reads` reads a command's words; :func:`guarded_files` walks the folders
(breadth first, at most :data:`MAX_WALK_ENTRIES` entries per command, links not followed,
``.git`` not entered) and returns the rule patterns of the files the rules do not simply
allow. Options are matched as the programs read them, abbreviations included
(``--recur`` is ``--recursive`` to GNU grep, ``--untr`` is ``--untracked`` to git).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from etcode.security.shell_commands import ShellCommand, git_subcommand, path_text
from etcode.security.shell_plain import base_name
from etcode.util.fs import real_path, walk_breadth_first

#: Directory entries looked at per command (the shallow ones first); what lies deeper in
#: a larger tree is not looked at (the values of secret files are redacted anyway).
MAX_WALK_ENTRIES = 20_000
#: Files named in one question at most.
MAX_REPORTED = 20
_SKIPPED_DIRS = frozenset({".git"})


@dataclass(frozen=True)
class FolderRead:
    """A folder a command reads every file of. ``hidden``: dot-files and dot-folders too
    (ripgrep skips them unless told); ``names``: only files whose name matches one of
    these globs (``grep --include``, ``find -name``); ``skip``: names left out."""

    folder: str
    hidden: bool = True
    names: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    skip_dirs: tuple[str, ...] = ()


def long_option(word: str, full: str, shortest: int = 4) -> bool:
    """``word`` (its part before ``=``) is ``full`` or an abbreviation of it at least
    ``shortest`` characters long, as getopt_long and git's parse-options accept."""
    name = word.split("=", 1)[0]
    return name == full or (len(name) >= shortest and name.startswith("--") and full.startswith(name))


def _short_flags(word: str) -> str:
    """The letters of a bundle of short options (``-rn`` → ``rn``); "" for anything else."""
    return word[1:] if word.startswith("-") and not word.startswith("--") and len(word) > 1 else ""


def folder_reads(commands: Iterable[ShellCommand]) -> list[FolderRead]:
    """The folders the commands read whole (their words as written, relative to the
    working directory)."""
    found: list[FolderRead] = []
    commands = [command for command in commands if not command.dynamic and command.words]
    names = [base_name(command.words[0].text) for command in commands]
    fed = any(name in _FED_PROGRAMS for name in names)  # ``find . | xargs cat``
    for command, name in zip(commands, names, strict=True):
        args = [text for text in map(path_text, command.words[1:]) if text is not None]
        if name == "find":
            found.extend(_find(args, fed))
            continue
        reader = _READERS.get(name)
        if reader is not None:
            found.extend(reader(args))
    return list(dict.fromkeys(found))


#: Programs that run a command on the names they read (``find . -type f | xargs cat``).
_FED_PROGRAMS = frozenset({"xargs", "parallel"})


# ---- one reader per program ---------------------------------------------------------------

_GREP_VALUE_SHORT = frozenset("efmABCdD")
_GREP_VALUE_LONG = (
    "--regexp", "--file", "--max-count", "--after-context", "--before-context", "--context",
    "--directories", "--devices", "--include", "--exclude", "--exclude-dir", "--exclude-from",
    "--label", "--binary-files",
)  # fmt: skip


@dataclass
class _GrepWords:
    """What grep's words say, read one at a time: recursive or not, the file filters, the
    operands (the pattern first, unless ``-e``/``-f`` gave it)."""

    recursive: bool
    pattern_given: bool = False
    includes: list[str] = field(default_factory=list)
    excludes: list[str] = field(default_factory=list)
    exclude_dirs: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)

    def read_long(self, word: str, rest: Iterator[str]) -> None:
        """``--option``, ``--option=value`` or ``--option value`` (taken from ``rest``)."""
        option = next((o for o in _GREP_VALUE_LONG if long_option(word, o, 5)), "")
        value = word.split("=", 1)[1] if "=" in word else None
        if option and value is None:
            value = next(rest, None)
        self.pattern_given = self.pattern_given or option in ("--regexp", "--file")
        filters = {"--include": self.includes, "--exclude": self.excludes, "--exclude-dir": self.exclude_dirs}
        if option in filters and value:
            filters[option].append(value)
        self.recursive = (
            self.recursive
            or (option == "--directories" and value == "recurse")
            or any(long_option(word, o, 5) for o in ("--recursive", "--dereference-recursive"))
        )

    def read_short(self, letters: str, rest: Iterator[str]) -> None:
        """A bundle of short options (``-rn``); the first that takes a value takes the rest
        of the bundle, or else the next word."""
        for position, letter in enumerate(letters):
            if letter in "rR":
                self.recursive = True
            if letter in _GREP_VALUE_SHORT:
                value = letters[position + 1 :] or next(rest, "")
                self.pattern_given = self.pattern_given or letter in "ef"
                self.recursive = self.recursive or (letter == "d" and value == "recurse")
                return

    def folder_reads(self) -> list[FolderRead]:
        """Every folder operand (``.`` when none), read with the same filters."""
        folders = self.operands if self.pattern_given else self.operands[1:]
        names, skip, skip_dirs = tuple(self.includes), tuple(self.excludes), tuple(self.exclude_dirs)
        return [
            FolderRead(folder, names=names, skip=skip, skip_dirs=skip_dirs) for folder in folders or ["."]
        ]


def _grep(args: list[str], always: bool = False) -> list[FolderRead]:
    """grep (``rgrep``: ``always`` recursive) reads folders whole with ``-r``/``-R``/
    ``--recursive``/``-d recurse``, filtered by ``--include``/``--exclude``/``--exclude-dir``."""
    words = _GrepWords(recursive=always)
    rest = iter(args)
    for word in rest:
        if word == "--":
            words.operands.extend(rest)
            break
        if word.startswith("--"):
            words.read_long(word, rest)
        elif letters := _short_flags(word):
            words.read_short(letters, rest)
        else:
            words.operands.append(word)
    return words.folder_reads() if words.recursive else []


_RG_VALUE_SHORT = frozenset("efgtTmABCMjEr")


def _rg(args: list[str], unrestricted_from: int = 2) -> list[FolderRead]:
    """ripgrep (and ag): recursive always; hidden files only with ``--hidden``/``-.``/``-uu``
    (ag: ``-u``)."""
    hidden = False
    pattern_given = False
    unrestricted = 0
    operands: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            operands.extend(args[index:])
            break
        if word.startswith("--"):
            if word in ("--hidden", "--unrestricted", "--all-types", "--search-zip"):
                hidden = hidden or word != "--search-zip"
            if word.split("=", 1)[0] in ("--regexp", "--file"):
                pattern_given = True
                if "=" not in word:
                    index += 1
            continue
        letters = _short_flags(word)
        if not letters:
            operands.append(word)
            continue
        for position, letter in enumerate(letters):
            if letter == ".":
                hidden = True
            elif letter == "u":
                unrestricted += 1
            elif letter in _RG_VALUE_SHORT:
                if letter in "ef":
                    pattern_given = True
                if position == len(letters) - 1:
                    index += 1
                break
    hidden = hidden or unrestricted >= unrestricted_from
    folders = operands if pattern_given else operands[1:]
    return [FolderRead(folder, hidden=hidden) for folder in folders or ["."]]


def _git(args: list[str]) -> list[FolderRead]:
    """``git grep --untracked``/``--no-index`` and ``git diff --no-index`` read files git
    does not track."""
    subcommand, rest = git_subcommand(args)
    if subcommand not in ("grep", "diff") or not _reads_untracked(subcommand, rest):
        return []
    operands = _git_grep_paths(rest) if subcommand == "grep" else [w for w in rest if not w.startswith("-")]
    return [FolderRead(folder) for folder in operands or ["."]]


#: ``git grep``'s short options whose value is the rest of the bundle or the next word.
_GIT_GREP_VALUE_SHORT = "efABCm"
#: ``git grep``'s long options whose value may be the next word.
_GIT_GREP_VALUE_LONG = (
    "--regexp",
    "--file",
    "--after-context",
    "--before-context",
    "--context",
    "--max-count",
    "--max-depth",
    "--threads",
    "--parent-basename",
)


def _git_grep_paths(rest: list[str]) -> list[str]:
    """The paths ``git grep`` searches: its words that are neither options, option values,
    the ``( )`` of ``--and``/``--or`` expressions nor the pattern (the first operand, unless
    ``-e``/``-f`` gave it); everything after ``--``."""
    operands: list[str] = []
    pattern_given = False
    words = iter(rest)
    for word in words:
        if word == "--":
            return (operands if pattern_given else operands[1:]) + list(words)
        if word.startswith("--"):
            option = next((o for o in _GIT_GREP_VALUE_LONG if long_option(word, o, 5)), "")
            if option and "=" not in word:
                next(words, None)
            pattern_given = pattern_given or option in ("--regexp", "--file")
        elif letters := _short_flags(word):
            letters = letters.split("O", 1)[0]  # -O<pager>: the rest of the word is its pager
            position = next((i for i, letter in enumerate(letters) if letter in _GIT_GREP_VALUE_SHORT), -1)
            if position >= 0:
                pattern_given = pattern_given or letters[position] in "ef"
                if position == len(letters) - 1:
                    next(words, None)
        elif word not in ("(", ")"):
            operands.append(word)
    return operands if pattern_given else operands[1:]


def _reads_untracked(subcommand: str, rest: list[str]) -> bool:
    """``--no-index``, or for ``grep`` ``--untracked`` too."""
    options = [w for w in rest if w.startswith("--")]
    if any(long_option(w, "--no-index", 6) for w in options):
        return True
    return subcommand == "grep" and any(long_option(w, "--untracked", 4) for w in options)


def _find(args: list[str], fed: bool = False) -> list[FolderRead]:
    """``find … -exec``/``-execdir``/``-ok`` runs a program on each file found (and so
    does ``xargs`` on the names ``find`` prints, when ``fed``)."""
    runs = ("-exec", "-execdir", "-ok", "-okdir")
    if not fed and not any(w in runs for w in args):
        return []
    index = 0
    while index < len(args) and args[index] in ("-H", "-L", "-P", "-O0", "-O1", "-O2", "-O3"):
        index += 1
    starts: list[str] = []
    while index < len(args) and not args[index].startswith(("-", "(", "!", ")")):
        starts.append(args[index])
        index += 1
    expression = args[index:]
    exec_at = next((i for i, w in enumerate(expression) if w in runs), len(expression))
    tests = expression[:exec_at]
    names: tuple[str, ...] = ()
    if not any(w in ("-o", "-or", "!", "-not", "(", ",") for w in tests):
        names = tuple(tests[i + 1] for i, w in enumerate(tests[:-1]) if w == "-name")
    return [FolderRead(folder, names=names) for folder in starts or ["."]]


def _tar(args: list[str]) -> list[FolderRead]:
    """``tar c``/``-c``/``--create`` (also append and update) puts the folders' files in an archive."""
    if not args:
        return []
    first = args[0]
    bundled = not first.startswith("-") and any(c in first for c in "cru")
    creating = bundled or any(
        any(c in _short_flags(w) for c in "cru")
        or long_option(w, "--create", 4)
        or long_option(w, "--append", 4)
        or long_option(w, "--update", 4)
        for w in args
    )
    if not creating:
        return []
    return [FolderRead(w) for w in (args[1:] if bundled else args) if not w.startswith("-")]


def _recursive_copy(
    letters: str, longs: tuple[str, ...], drop_last: bool
) -> Callable[[list[str]], list[FolderRead]]:
    def reader(args: list[str]) -> list[FolderRead]:
        on = any(
            any(c in _short_flags(w) for c in letters) or any(long_option(w, full, 5) for full in longs)
            for w in args
        )
        if not on:
            return []
        operands = [w for w in args if not w.startswith("-")]
        target_given = any("t" in _short_flags(w) or long_option(w, "--target-directory", 5) for w in args)
        if drop_last and not target_given:
            operands = operands[:-1]
        return [FolderRead(w) for w in operands]

    return reader


_READERS: dict[str, Callable[[list[str]], list[FolderRead]]] = {
    "grep": _grep,
    "egrep": _grep,
    "fgrep": _grep,
    "zgrep": _grep,
    "rgrep": lambda args: _grep(args, always=True),
    "rg": _rg,
    "ag": lambda args: _rg(args, unrestricted_from=1),
    "git": _git,
    "tar": _tar,
    "bsdtar": _tar,
    "cp": _recursive_copy("rRa", ("--recursive", "--archive"), drop_last=True),
    "scp": _recursive_copy("r", (), drop_last=True),
    "rsync": _recursive_copy("ra", ("--recursive", "--archive"), drop_last=True),
    "zip": _recursive_copy("rR", ("--recurse-paths", "--recurse-patterns"), drop_last=False),
    "diff": _recursive_copy("r", ("--recursive",), drop_last=False),
}


# ---- the walk -------------------------------------------------------------------------------


def guarded_files(
    reads: list[FolderRead],
    worktree: Path,
    resolve: Callable[[str], Path],
    patterns_of: Callable[[Path], list[str]],
    guarded: Callable[[str], bool],
) -> list[str]:
    """The rule patterns of files under the folders that ``guarded`` says the rules do
    not simply allow: at most :data:`MAX_REPORTED`, after at most :data:`MAX_WALK_ENTRIES`
    entries per folder. ``worktree`` is resolved; a plain file's pattern is its path from
    there (as :func:`etcode.tools.paths.rule_patterns` gives it), a link's comes from
    ``patterns_of`` (the link and its target). Runs in a worker thread."""
    found: list[str] = []
    for read in reads:
        try:
            root = real_path(resolve(read.folder))
            if not root.is_dir():
                continue
        except (OSError, ValueError):
            continue
        base = _relative(root, worktree)
        for relative, is_link in _walk(root, read):
            if is_link:
                patterns = patterns_of(root / relative)
            else:
                patterns = [f"{base}/{relative}" if base not in (".", "") else relative]
            found.extend(p for p in patterns if guarded(p))
            if len(found) >= MAX_REPORTED:
                return list(dict.fromkeys(found))[:MAX_REPORTED]
    return list(dict.fromkeys(found))


def _relative(path: Path, worktree: Path) -> str:
    """``path`` from the worktree (``.`` for itself), or absolute outside it."""
    try:
        return path.relative_to(worktree).as_posix() or "."
    except ValueError:
        return path.as_posix().rstrip("/")


def _walk(root: Path, read: FolderRead) -> Iterable[tuple[str, bool]]:
    """The files under ``root`` that ``read`` reads, as ``/``-joined paths from it and
    whether each is a link, breadth first, within the bound."""

    def visible(name: str) -> bool:
        return read.hidden or not name.startswith(".")

    def descend(entry: os.DirEntry[str], _depth: int) -> bool:
        name = entry.name
        return visible(name) and name not in _SKIPPED_DIRS and not _matches(name, read.skip_dirs)

    for relative, entry, _depth in walk_breadth_first(root, MAX_WALK_ENTRIES, descend):
        name = entry.name
        if not visible(name):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                continue
            is_link = entry.is_symlink()
        except OSError:
            continue
        if read.names and not _matches(name, read.names):
            continue
        if _matches(name, read.skip):
            continue
        yield relative, is_link


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)
