"""What the file tools skip: default excludes and ``.gitignore`` rules (pathspec), plus
glob → regex translation with the usual semantics (``*`` stays in one folder, ``**``
crosses folders, ``{a,b}`` alternatives, ``[...]`` classes)."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # imported on first use: ~12 ms that a run without file tools never needs
    import pathspec

#: Folders and files no file tool should wander into unless asked (gitignore syntax).
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git/", ".hg/", ".svn/", "node_modules/", "bower_components/", "__pycache__/",
    ".venv/", "venv/", ".tox/", ".nox/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    ".cache/", "dist/", "build/", ".next/", ".nuxt/", "coverage/", ".idea/", ".DS_Store",
    "*.egg-info/",
    # lock files
    "*.lock", "package-lock.json", "pnpm-lock.yaml", "npm-shrinkwrap.json",
    # secrets
    ".env", ".env.*", ".envrc", ".envrc.*",
    # binary and generated formats
    "*.pyc", "*.pyo", "*.class", "*.jar", "*.o", "*.a", "*.so", "*.dll", "*.dylib", "*.exe",
    "*.bin", "*.wasm", "*.zip", "*.tar", "*.gz", "*.tgz", "*.bz2", "*.xz", "*.7z", "*.rar",
    "*.png", "*.jpg", "*.jpeg", "*.gif", "*.bmp", "*.ico", "*.webp", "*.tiff", "*.pdf",
    "*.mp3", "*.mp4", "*.wav", "*.mov", "*.avi", "*.woff", "*.woff2", "*.ttf", "*.otf",
    "*.eot", "*.sqlite", "*.sqlite3", "*.db", "*.min.js", "*.min.css", "*.map",
)  # fmt: skip

#: What the search tools (Glob, Grep, ListFiles) skip on top of .gitignore: only folders
#: that are never source. File types stay searchable (``Glob("**/*.png")`` must work).
SEARCH_EXCLUDES: tuple[str, ...] = (
    ".git/", ".hg/", ".svn/", "node_modules/", "__pycache__/", ".venv/", "venv/", ".tox/",
    ".nox/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
)  # fmt: skip

#: Files holding secrets: skipped by ReadManyFiles, Glob and Grep unless named, and
#: reading one asks (the ``read`` permission's default rules). ``.envrc`` is direnv's
#: (``.envrc.local``/``.envrc.private`` are its common per-user companions).
SECRET_FILES: tuple[str, ...] = (".env", ".env.*", ".envrc", ".envrc.*")
#: ``.env.example`` and the like: templates meant to be shared, not secrets.
TEMPLATES: tuple[str, ...] = ("*.example", "*.sample", "*.template", "*.dist")

_GLOB_CHARS = re.compile(r"[*?\[{]")


def is_secret_file(name: str) -> bool:
    """``.env``, ``.envrc``, or either followed by ``.<anything>`` (the file name only)."""
    return name in (".env", ".envrc") or name.startswith((".env.", ".envrc."))


def names_secret_file(pattern: str) -> bool:
    """Whether a glob's last segment asks for ``.env``/``.envrc`` files by name (``.env*``,
    ``**/.env.local``, ``.envrc``)."""
    return pattern.strip().rstrip("/").rsplit("/", 1)[-1].startswith(".env")


def has_glob(pattern: str) -> bool:
    """True when ``pattern`` contains glob syntax (``*``, ``?``, ``[``, ``{``)."""
    return bool(_GLOB_CHARS.search(pattern))


def glob_escape(path: str) -> str:
    """``path`` as a glob matching only itself: ``app/[id]`` -> ``app/[[]id]``."""
    return _GLOB_CHARS.sub(lambda match: f"[{match.group(0)}]", path)


def glob_static_prefix(pattern: str) -> tuple[str, str]:
    """Split ``src/**/*.ts`` into the literal folder part ``src`` and the rest ``**/*.ts``."""
    parts = pattern.split("/")
    static: list[str] = []
    for index, part in enumerate(parts[:-1]):
        if has_glob(part):
            return "/".join(static), "/".join(parts[index:])
        static.append(part)
    return "/".join(static), parts[-1]


def _split_braces(body: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in body:
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
            continue
        depth += char == "{"
        depth -= char == "}"
        current.append(char)
    items.append("".join(current))
    return items


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        regex, i = _translate_at(pattern, i)
        out.append(regex)
    return "".join(out)


def _translate_at(pattern: str, i: int) -> tuple[str, int]:
    """The regex of the glob element at ``pattern[i]``, and the index after the element."""
    char = pattern[i]
    if char == "*":
        return _star(pattern, i)
    if char == "?":
        return "[^/]", i + 1
    if char == "[":
        return _bracket(pattern, i)
    if char == "{":
        return _braces(pattern, i)
    return re.escape(char), i + 1


def _star(pattern: str, i: int) -> tuple[str, int]:
    """``*`` stays within a folder; ``**`` as a whole segment crosses folders (``**/``
    also matches no folder at all)."""
    if not pattern.startswith("**", i):
        return "[^/]*", i + 1
    at_start = i == 0 or pattern[i - 1] == "/"
    j = i + 2
    if at_start and pattern[j : j + 1] == "/":
        return "(?:.*/)?", j + 1
    if at_start and j == len(pattern):
        return ".*", j
    return "[^/]*", j


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """A character class ``[...]`` (``[!...]``/``[^...]`` negated); a ``[`` never closed is itself."""
    end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
    if end == -1:
        return re.escape("["), i + 1
    body = pattern[i + 1 : end]
    if body[:1] in ("!", "^"):
        body = "^" + body[1:]
    return "[" + body.replace("\\", "\\\\").replace("[", "\\[") + "]", end + 1


def _braces(pattern: str, i: int) -> tuple[str, int]:
    """Alternatives ``{a,b}`` (nested ones too); a ``{`` never closed is itself."""
    depth, j = 0, i
    while j < len(pattern):
        depth += pattern[j] == "{"
        depth -= pattern[j] == "}"
        if depth == 0:
            break
        j += 1
    if j >= len(pattern):
        return re.escape("{"), i + 1
    options = _split_braces(pattern[i + 1 : j])
    return "(?:" + "|".join(_translate(opt) for opt in options) + ")", j + 1


def gitignore_spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    """A gitignore spec of ``lines``, skipping lines git would not use (``!`` alone, ``/``):
    one bad line in a .gitignore must not break every file tool."""
    import pathspec

    lines = list(lines)
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError):
        pass
    usable = []
    for line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except (ValueError, TypeError):
            continue
        usable.append(line)
    return pathspec.GitIgnoreSpec.from_lines(usable)


@lru_cache(maxsize=512)
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob (matched against ``/``-separated relative paths) to a regex."""
    return re.compile(r"(?s:" + _translate(pattern.lstrip("/") if pattern != "/" else pattern) + r")\Z")


def glob_match(pattern: str, path: str) -> bool:
    """``glob_match("src/**/*.ts", "src/a/b.ts")`` — anchored, ``*`` does not cross ``/``."""
    return glob_to_regex(pattern).match(path) is not None


def _any_of(regexes: list[str]) -> re.Pattern[str] | None:
    """One regex matching what any of ``regexes`` matches (None for none)."""
    return re.compile("|".join(regexes)) if regexes else None


#: How :class:`PatternSet` answers one pattern: a set of names, extensions or folder names, a
#: tuple of suffixes or prefixes, a regex of name or folder globs, or pathspec ("rest").
_Shape = Literal["name", "dir_name", "extension", "suffix", "prefix", "name_glob", "dir_glob", "rest"]


def _needs_pathspec(core: str) -> bool:
    """Nothing, a path (``/``), ``**`` or an escape: more than a name's fast lookups answer."""
    return not core or "/" in core or "**" in core or "\\" in core


def _shape(pattern: str, negated: bool) -> tuple[_Shape, str]:
    """How ``pattern`` is answered, and what it adds there (a name, ``.ext``, a suffix, a
    prefix, a regex, or the pattern itself). With any negation in the set, every pattern
    goes to pathspec: then their order matters."""
    dir_only = pattern.endswith("/")
    core = pattern.rstrip("/")
    if negated or _needs_pathspec(core):
        return "rest", pattern
    if dir_only:
        return ("dir_glob", fnmatch.translate(core)) if has_glob(core) else ("dir_name", core)
    if core.startswith("*.") and not has_glob(core[1:]) and core.count(".") == 1:
        return "extension", core[1:]  # "*.log"
    if core.startswith("*") and not has_glob(core[1:]):
        return "suffix", core[1:]  # "*.min.js"
    if core.endswith("*") and not has_glob(core[:-1]):
        return "prefix", core[:-1]  # ".env.*"
    if has_glob(core):
        return "name_glob", fnmatch.translate(core)
    return "name", core


class PatternSet:
    """Gitignore-style patterns, with the common shapes (``name``, ``dir/``, ``*.ext``)
    answered by set lookups and one regex; anything else goes through pathspec."""

    def __init__(self, patterns: Iterable[str]) -> None:
        patterns = [raw.strip() for raw in patterns]
        negated = any(pattern.startswith("!") for pattern in patterns)  # order matters: pathspec
        shapes: dict[_Shape, list[str]] = defaultdict(list)
        for pattern in patterns:
            if pattern and not pattern.startswith("#"):
                shape, key = _shape(pattern, negated)
                shapes[shape].append(key)
        self.dir_names: set[str] = set(shapes["dir_name"])
        self.names: set[str] = set(shapes["name"])
        #: ``*.ext`` patterns: the extension (``.ext``, one dot) looked up in a set.
        self.extensions: set[str] = set(shapes["extension"])
        self._suffixes = tuple(shapes["suffix"])
        self._prefixes = tuple(shapes["prefix"])
        self._dir_glob = _any_of(shapes["dir_glob"])
        self._name_glob = _any_of(shapes["name_glob"])
        self._rest = gitignore_spec(shapes["rest"]) if shapes["rest"] else None
        #: Whether :meth:`match` looks at ``rel`` at all (walks can skip computing it).
        self.needs_rel = self._rest is not None

    def match(self, name: str, rel: str, is_dir: bool) -> bool:
        """Does the entry ``name`` at root-relative path ``rel`` match (its parents are
        assumed not to: walks prune ignored folders)?"""
        if name in self.names or (self._name_glob is not None and self._name_glob.match(name)):
            return True
        if name.endswith(self._suffixes) or name.startswith(self._prefixes):
            return True
        if self.extensions:
            dot = name.rfind(".")
            if dot != -1 and name[dot:] in self.extensions:
                return True
        if is_dir and (name in self.dir_names or (self._dir_glob is not None and self._dir_glob.match(name))):
            return True
        return self._rest is not None and self._rest.match_file(rel + "/" if is_dir else rel)

    def match_path(self, rel: str, is_dir: bool) -> bool:
        """Does ``rel`` (``/``-separated) or any folder above it match?"""
        parts = rel.split("/")
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if self.match(part, "/".join(parts[: index + 1]), is_dir or not last):
                return True
        return False


class IgnoreMatcher:
    """Decides whether a path is ignored: default excludes (True for
    :data:`DEFAULT_EXCLUDES`, or a list of patterns), extra gitignore-style patterns, and
    every ``.gitignore`` from ``root`` down to the path (deeper files win)."""

    def __init__(
        self,
        root: Path,
        *,
        default_excludes: bool | Iterable[str] = True,
        gitignore: bool = True,
        extra: Iterable[str] = (),
    ) -> None:
        self.root = root.resolve()
        self._root_s = str(self.root)
        # The root as given may differ from the resolved one (e.g. /tmp -> /private/tmp).
        self._roots = list(dict.fromkeys([self._root_s, os.path.normpath(os.path.abspath(root))]))
        if default_excludes is True:
            default_excludes = DEFAULT_EXCLUDES
        patterns = [*(default_excludes or ()), *extra]
        self._excludes = PatternSet(patterns) if patterns else None
        self._gitignore = gitignore
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}

    def _spec_for(self, folder: str) -> pathspec.GitIgnoreSpec | None:
        if folder in self._specs:
            return self._specs[folder]
        lines: list[str] = []
        sources = [os.path.join(folder, ".gitignore")]
        if folder in self._roots:
            sources.append(os.path.join(folder, ".git", "info", "exclude"))
        for source in sources:
            with contextlib.suppress(OSError), open(source, encoding="utf-8", errors="replace") as handle:
                lines.extend(handle.read().splitlines())
        spec = gitignore_spec(lines) if any(line.strip() for line in lines) else None
        self._specs[folder] = spec
        return spec

    def _rel(self, path: str) -> str | None:
        """``path`` relative to root, or None when outside it."""
        for root in self._roots:
            if path == root:
                return ""
            prefix = root.rstrip(os.sep) + os.sep
            if path.startswith(prefix):
                return path[len(prefix) :].replace(os.sep, "/")
        return None

    def _chain(self, folder: str) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
        """The .gitignore specs that apply inside ``folder``: root's first."""
        if not self._gitignore:
            return []
        rel = self._rel(folder)
        if rel is None:
            return []
        chain = []
        current = next(r for r in self._roots if folder == r or folder.startswith(r.rstrip(os.sep) + os.sep))
        for part in ["", *(rel.split("/") if rel else [])]:
            if part:
                current = os.path.join(current, part)
            spec = self._spec_for(current)
            if spec is not None:
                chain.append((current, spec))
        return chain

    @staticmethod
    def _chain_verdict(chain: list[tuple[str, pathspec.GitIgnoreSpec]], path: str, is_dir: bool) -> bool:
        ignored = False
        for folder, spec in chain:
            sub = path[len(folder) + 1 :].replace(os.sep, "/") + ("/" if is_dir else "")
            verdict = spec.check_file(sub).include
            if verdict is not None:
                ignored = verdict
        return ignored

    def is_ignored(self, path: Path, is_dir: bool | None = None) -> bool:
        """True when ``path`` (absolute, or relative to root) or a folder above it is skipped."""
        if not path.is_absolute():
            path = self.root / path
        if is_dir is None:
            is_dir = path.is_dir()
        text = os.path.normpath(str(path))
        rel = self._rel(text)
        shown = rel if rel is not None else text.lstrip(os.sep).replace(os.sep, "/")
        if not shown:
            return False
        if self._excludes is not None and self._excludes.match_path(shown, is_dir):
            return True
        if rel is None or not self._gitignore:
            return False
        parts = rel.split("/")
        current = next(r for r in self._roots if text == r or text.startswith(r.rstrip(os.sep) + os.sep))
        for index, part in enumerate(parts):
            chain = self._chain(current)
            child = os.path.join(current, part)
            if self._chain_verdict(chain, child, is_dir or index < len(parts) - 1):
                return True
            current = child
        return False

    def iter_entries(self, base: Path | str, *, follow_symlinks: bool = False) -> Iterator[os.DirEntry[str]]:
        """Every file entry under ``base`` that is not ignored, pruning ignored folders."""
        start = os.path.normpath(str(base))
        start_rel = self._rel(start)
        stack = [(start, start_rel, self._chain(start))]
        excludes = self._excludes
        needs_rel = excludes is not None and excludes.needs_rel
        while stack:
            folder, folder_rel, chain = stack.pop()
            try:
                with os.scandir(folder) as entries:
                    items = list(entries)
            except OSError:
                continue
            for entry in items:
                try:
                    is_dir = entry.is_dir(follow_symlinks=follow_symlinks)
                except OSError:
                    continue
                name = entry.name
                if excludes is not None:
                    rel = f"{folder_rel}/{name}" if needs_rel and folder_rel else name
                    if excludes.match(name, rel, is_dir):
                        continue
                if chain and self._chain_verdict(chain, entry.path, is_dir):
                    continue
                if is_dir:
                    sub_rel = None if folder_rel is None else f"{folder_rel}/{name}" if folder_rel else name
                    sub_chain = chain
                    if self._gitignore and sub_rel is not None:
                        spec = self._spec_for(entry.path)
                        if spec is not None:
                            sub_chain = [*chain, (entry.path, spec)]
                    stack.append((entry.path, sub_rel, sub_chain))
                else:
                    yield entry

    def walk(self, base: Path, *, follow_symlinks: bool = False) -> Iterator[Path]:
        """Every file under ``base`` that is not ignored, pruning ignored folders."""
        for entry in self.iter_entries(base, follow_symlinks=follow_symlinks):
            yield Path(entry.path)
