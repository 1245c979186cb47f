"""``ReadManyFiles``: read many files (paths and globs) in one call, concurrently."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from etcode.provider.images import (
    ImageError,
    describe,
    image_facts,
    is_image_path,
    prepare_image,
    sniff_media_type,
)
from etcode.provider.types import ImagePart
from etcode.tools.base import PermissionDenied, Tool, ToolContext, ToolResult
from etcode.tools.paths import check_external, display_path, permission_pattern, rule_patterns
from etcode.tools.read_many_output import cut_note, full_parts, plan, render
from etcode.tools.summary import plural
from etcode.tools.truncate import save_full_output
from etcode.util.fs import BINARY_EXTENSIONS, BOM, expand_user, format_size, looks_binary, real_path
from etcode.util.ignore import (
    IgnoreMatcher,
    gitignore_spec,
    glob_escape,
    glob_static_prefix,
    glob_to_regex,
    has_glob,
)
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    import pathspec

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 20 * 1024 * 1024
#: Images one call sends at most (each costs up to ~1600 tokens); the rest are skipped.
MAX_IMAGES = 10
#: Files timed in a worker thread to tell fast storage from slow.
PROBE_SIZE = 8
#: Slow storage: files per thread, and threads at once.
BATCH_SIZE = 32
MAX_CONCURRENT_BATCHES = 8
#: Reading slower than this per file (plus size / FAST_BYTES_PER_SECOND) means I/O bound.
FAST_FILE_SECONDS = 0.0005
FAST_BYTES_PER_SECOND = 300 * 1024 * 1024
#: Fast storage: files are read on the event loop, which gets control back this often.
SLICE_SECONDS = 0.002
#: ... except files larger than this, which go to a worker thread.
INLINE_MAX_BYTES = 1024 * 1024
#: The first read of every file; smaller files need no other system call but open/close.
FIRST_READ_BYTES = 64 * 1024


class ReadManyFilesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(
        min_length=1,
        description=(
            "Files or glob patterns relative to the working directory, e.g. "
            '["README.md", "src/**/*.ts"]. A path naming an existing file is taken literally.'
        ),
    )
    include: list[str] | None = Field(default=None, description="Extra glob patterns to add.")
    exclude: list[str] | None = Field(
        default=None,
        description="Patterns to leave out (gitignore syntax: `*.log` matches at any depth). Exclude wins.",
    )
    use_default_excludes: bool = Field(
        default=True,
        description="Skip .git, node_modules, build output, lock files, binaries, .env/.envrc (default true).",
    )


@dataclass(slots=True)
class _Read:
    """Outcome of reading one file in a worker thread."""

    path: str
    shown: str
    explicit: bool
    pattern: str | None = None  # the permission pattern, when already known
    alias: str | None = None  # a symlink's own name as a pattern (rules hold on both names)
    content: str = ""
    size: int = 0
    lines: int = 0
    truncated: bool = False
    error: str | None = None
    skipped: str | None = None
    deferred: bool = False  # too big to read on the event loop: left for a thread
    image_pending: bool = False  # an image (by its name or content): read and prepared later
    image: ImagePart | None = None
    image_note: str = ""  # what the image is (``describe``): its header in the output
    image_facts: JsonObject | None = None  # the same for ``data`` (``image_facts``)


#: O_NONBLOCK: opening a FIFO must not wait for a writer (non-regular files are then refused).
_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
)


def _read_rest(fd: int, head: bytes, size: int) -> bytes:
    """The whole file, given its first bytes ``head`` and its size from fstat (0 for
    ``/proc``-style files): one more read of the known size, or chunks up to the limit."""
    chunks = [head]
    total = len(head)
    if size > total:
        more = os.read(fd, size - total)
        chunks.append(more)
        total += len(more)
    while total <= MAX_FILE_BYTES:
        chunk = os.read(fd, FIRST_READ_BYTES)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _read_one(item: _Read, inline_limit: int | None = None) -> _Read:
    """Read, sniff, decode and measure one file (every pass while its bytes are in cache).
    A file over ``inline_limit`` bytes is not read but marked ``deferred``; an image (by
    its name, unread, or by its content, its bytes dropped) is marked ``image_pending``:
    :func:`_read_images` reads the first :data:`MAX_IMAGES` one at a time."""
    if is_image_path(item.path):
        item.image_pending = True
        return item
    data = _read_bytes(item, inline_limit)
    return item if data is None else _take(item, data)


def _take(item: _Read, data: bytes, image: bool = False) -> _Read:
    """``item`` filled from its bytes ``data``: text, or binary skipped, or (with ``image``)
    the image made ready to send; without ``image``, an image is left ``image_pending``."""
    by_name = _binary_by_name(item.path)
    if by_name and not is_image_path(item.path):
        item.skipped = "binary file"
        return item
    if sniff_media_type(data[:16]) is not None:  # an image by its content, whatever its name
        item.size = len(data)
        if not image:
            item.image_pending = True
            return item
        try:
            prepared = prepare_image(data, item.shown)
        except ImageError as err:
            item.error = str(err).removeprefix(f"{item.shown}: ")
            return item
        item.image = prepared.image
        item.image_note = describe(prepared)
        item.image_facts = dict(image_facts(prepared))
        return item
    text = None if by_name else _text_of(data)
    if text is None:
        item.skipped = "binary file"
        return item
    item.size = len(data)
    item.lines = _count_lines(data, text)
    item.truncated = item.lines > MAX_LINES or has_long_line(text, MAX_LINE_CHARS)
    item.content = _cut(text, item.lines) if item.truncated else text
    return item


def _binary_by_name(path: str) -> bool:
    """Does the file's extension say binary? (A leading dot is no extension: ``.bashrc``.)"""
    dot = path.rfind(".")
    return dot > path.rfind(os.sep) + 1 and path[dot:].lower() in BINARY_EXTENSIONS


def _read_bytes(item: _Read, inline_limit: int | None) -> bytes | None:
    """The file's bytes; None when it cannot be read (``item.error`` says why) or is left
    for a thread (``item.deferred``)."""
    try:
        fd = os.open(item.path, _OPEN_FLAGS)
    except FileNotFoundError:
        item.error = "File not found"
        return None
    except OSError as err:
        item.error = err.strerror or str(err)
        return None
    try:
        data = _read_open(item, fd, inline_limit)
    except IsADirectoryError:
        item.error = "Is a directory"
        return None
    except OSError as err:
        item.error = err.strerror or str(err)
        return None
    finally:
        os.close(fd)
    if data is not None and len(data) > MAX_FILE_BYTES:
        item.error = f"File too large (over {format_size(MAX_FILE_BYTES)})"
        return None
    return data


def _read_open(item: _Read, fd: int, inline_limit: int | None) -> bytes | None:
    """Read the open file ``fd``. Most files fit in the first read: no fstat needed (a
    short read of a regular file is its end). Nothing or a full buffer may be a FIFO or a
    device: look before reading on."""
    data = os.read(fd, FIRST_READ_BYTES)
    if data and len(data) < FIRST_READ_BYTES:
        return data
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        item.error = "Not a regular file"
        return None
    if info.st_size > MAX_FILE_BYTES:
        item.error = f"File too large ({format_size(info.st_size)} > {format_size(MAX_FILE_BYTES)})"
        return None
    if inline_limit is not None and info.st_size > inline_limit:
        item.deferred = True
        return None
    return _read_rest(fd, data, info.st_size)


def _text_of(data: bytes) -> str | None:
    """``data`` as text without a BOM (undecodable bytes replaced), or None when binary."""
    if data.find(b"\x00", 0, 8192) != -1:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if looks_binary(data[:8192]):
            return None
        text = data.decode("utf-8", errors="replace")
    return text[1:] if text.startswith(BOM) else text


def _count_lines(data: bytes, text: str) -> int:
    """The lines of a file: its newlines, plus one for a last line without one."""
    # Counting by deletion is twice as fast as bytes.count for short lines.
    newlines = len(data) - len(data.replace(b"\n", b""))
    return newlines + (0 if not text or text.endswith("\n") else 1)


def _cut(text: str, line_count: int) -> str:
    """The first :data:`MAX_LINES` lines of ``text``, each within :data:`MAX_LINE_CHARS`
    characters, with a marker saying what was cut."""
    shown = [
        line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "... [line truncated]"
        for line in text.split("\n")[:MAX_LINES]
    ]
    if line_count > MAX_LINES:
        marker = (
            f"\n[... truncated: showing the first {MAX_LINES} of {line_count} lines; "
            f"use ReadFile with offset={MAX_LINES + 1} to read more ...]"
        )
    else:
        marker = "\n[... truncated: lines longer than 2000 characters were cut ...]"
    return "\n".join(shown) + marker


def has_long_line(text: str, limit: int) -> bool:
    """True when a line of ``text`` is longer than ``limit`` characters (without
    splitting: jump from line start to the last newline within ``limit + 1`` chars)."""
    size = len(text)
    start = 0
    while start + limit < size:
        newline = text.rfind("\n", start, start + limit + 1)
        if newline == -1:
            return True
        start = newline + 1
    return False


def _read_batch(items: list[_Read]) -> list[_Read]:
    return [_read_one(item) for item in items]


_ANY_DEPTH_SUFFIX = re.compile(r"\*\*/\*(\.[\w.+-]+)")


def _matcher_of(pattern: str) -> Callable[[str], object]:
    """A test of relative paths against ``pattern``: ``str.endswith`` for the common
    ``**/*.ext`` (a regex match costs five times more, per file), the glob's regex otherwise."""
    suffix = _ANY_DEPTH_SUFFIX.fullmatch(pattern)
    if suffix is not None:
        ending = suffix.group(1)
        return lambda rel: rel.endswith(ending)
    return glob_to_regex(pattern).match


def _walk_matches(
    base: Path,
    cwd: str,
    pattern: str,
    matcher: IgnoreMatcher,
    exclude: pathspec.GitIgnoreSpec | None,
    roots: list[str],
) -> tuple[list[_Read], list[tuple[str, str]]]:
    """The files under ``base`` matching ``pattern``: plain files ready to read, and the
    symlinks as (path, cwd-relative path), which need their own outside-the-worktree check."""
    files: list[_Read] = []
    links: list[tuple[str, str]] = []
    if not base.is_dir():
        return files, links
    match = _matcher_of(pattern)
    prefix = cwd.rstrip(os.sep) + os.sep
    cut = len(prefix)
    cwd_is_root = prefix == roots[0]  # then cwd-relative == worktree-relative (the rule pattern)
    for entry in matcher.iter_entries(base):
        path = entry.path
        if path.startswith(prefix):
            rel = path[cut:] if os.sep == "/" else path[cut:].replace(os.sep, "/")
        else:
            rel = os.path.relpath(path, cwd).replace(os.sep, "/")
        if not match(rel) or (exclude and exclude.match_file(rel)):
            continue
        if entry.is_symlink():
            links.append((path, rel))
        else:
            files.append(_Read(path, rel, False, rel if cwd_is_root else _inside(path, roots)))
    return files, links


def _worktree_prefixes(worktree: Path) -> list[str]:
    raw = os.path.normpath(os.path.abspath(worktree))
    return [p.rstrip(os.sep) + os.sep for p in dict.fromkeys([raw, os.path.realpath(worktree)])]


def _inside(path: str, prefixes: list[str]) -> str | None:
    """``path`` relative to the worktree (``/``-separated) when inside it, else None."""
    for prefix in prefixes:
        if path.startswith(prefix):
            return path[len(prefix) :].replace(os.sep, "/")
    return None


def _rel(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return os.path.relpath(path, cwd).replace(os.sep, "/")


class _Selection:
    """The files one call names, each once: literal paths first, then the folders and
    globs, with an error entry for every name that fails."""

    def __init__(self, ctx: ToolContext, params: ReadManyFilesParams, tool: str) -> None:
        self.ctx = ctx
        self.tool = tool
        self.cwd = ctx.directory
        self.cwd_s = os.path.normpath(str(ctx.directory))
        self.matcher = IgnoreMatcher(ctx.worktree, default_excludes=params.use_default_excludes)
        self.exclude = gitignore_spec(params.exclude) if params.exclude else None
        self.roots = _worktree_prefixes(ctx.worktree)
        self.chosen: dict[str, _Read] = {}
        self.errors: list[dict[str, str]] = []

    async def take(self, entries: list[str]) -> None:
        patterns: list[tuple[str, str]] = []  # (glob, as the model wrote it)
        for entry in entries:
            entry = entry.strip()
            if entry:
                glob = await self._take_entry(entry)
                if glob is not None:
                    patterns.append(glob)
        for pattern, named in patterns:
            await self._take_glob(pattern, named)

    async def _take_entry(self, entry: str) -> tuple[str, str] | None:
        """Take a literal file now; a folder or a glob is returned as (glob, ``entry``)."""
        target = self.ctx.resolve(entry)
        if target.is_file():
            await self._take_file(entry, target)
        elif target.is_dir():  # a literal folder: its name is no glob (``app/[id]``)
            folder = glob_escape(_rel(target, self.cwd).rstrip("/"))
            return (folder + "/**" if target != self.cwd else "**", entry)
        elif has_glob(entry):
            return (entry, entry)
        else:
            error = "Not a regular file" if target.exists() else "File not found"
            self.errors.append({"path": entry, "error": error})
        return None

    async def _take_file(self, entry: str, target: Path) -> None:
        if not await self._may_read(target, entry):
            return
        if self.exclude and self.exclude.match_file(_rel(target, self.cwd)):
            return
        self._add(str(target), display_path(self.ctx, target), os.path.realpath(target), explicit=True)

    async def _take_glob(self, pattern: str, named: str) -> None:
        absolute = expand_user(pattern)
        if absolute.is_absolute():
            pattern = _rel(absolute, self.cwd)
        static, _rest = glob_static_prefix(pattern)
        base = real_path(self.cwd / static) if static else self.cwd
        if not await self._may_read(base, pattern):
            return
        found, links = await asyncio.to_thread(
            _walk_matches, base, self.cwd_s, pattern, self.matcher, self.exclude, self.roots
        )
        if not found and not links:
            self.errors.append({"path": named, "error": "No files matched"})
        for item in found:  # the hot path: thousands of plain files
            if item.path not in self.chosen:
                self.chosen[item.path] = item
        for path, rel in links:  # a link may point anywhere: treat it like a literal path
            if await self._may_read(Path(path), rel):
                self._add(path, rel, os.path.realpath(path), explicit=False)

    async def _may_read(self, path: Path, shown: str) -> bool:
        """May ``path`` be read even if outside the worktree? If not, an error entry says why."""
        try:
            await check_external(self.ctx, path, self.tool, "read")
        except PermissionDenied as err:
            self.errors.append({"path": shown, "error": str(err)})
            return False
        return True

    def _add(self, path: str, shown: str, key: str, *, explicit: bool) -> None:
        if key not in self.chosen:
            names = rule_patterns(self.ctx, Path(path))
            alias = names[0] if len(names) > 1 else None
            self.chosen[key] = _Read(path, shown, explicit, names[-1], alias)
        elif explicit:
            self.chosen[key].explicit = True


class ReadManyFilesTool(Tool):
    name = "ReadManyFiles"
    description = (
        "Read the contents of many files in one call and return them concatenated, each under a "
        "header `=== File: <path> (<size>, <lines> lines) ===`, followed by any errors and a "
        "summary. Use it to load several related files (a module and its tests, all configs, "
        "`src/**/*.py`) instead of many ReadFile calls.\n"
        "- `paths`: file paths or glob patterns, relative to the working directory. An entry that "
        "names an existing file is read literally (brackets in names like `app/[id]/page.tsx` are "
        "fine); other entries are globs: `*` stays within one folder (`*.txt` is not recursive), "
        "`**` crosses folders, `{a,b}` gives alternatives. A folder name reads the folder recursively.\n"
        "- `include` adds patterns; `exclude` removes matches (gitignore syntax, always wins).\n"
        "- By default .git, node_modules, __pycache__, virtualenvs, dist/build, lock files, "
        "binary formats and .env/.envrc files are skipped, and .gitignore is respected; set "
        "`use_default_excludes` to false to include the defaults.\n"
        "- PNG, JPEG, GIF and WebP images named in `paths` (globs match them only with "
        f"`use_default_excludes` false) are returned as images you can see, at most {MAX_IMAGES} per "
        "call.\n"
        f"- Other binary files are skipped; files over {MAX_LINES} lines (or with very long lines) are "
        "truncated with a visible marker (use ReadFile with offset for the rest); files over "
        "20 MB are reported as errors; a missing file is an error entry while the others are still read.\n"
        "- The whole result is kept within about 2000 lines / 50 KB: every file gets a share, a file "
        "cut short says which lines are shown and the offset to continue with ReadFile, the errors and "
        "the summary always come last, and the full text is saved to a file whose path is given."
    )
    Params = ReadManyFilesParams
    is_read_only = True
    checks_permission = True

    async def run(self, params: ReadManyFilesParams, ctx: ToolContext) -> ToolResult:
        selection = _Selection(ctx, params, self.name)
        await selection.take([*params.paths, *(params.include or [])])
        errors = selection.errors
        items = sorted(selection.chosen.values(), key=attrgetter("shown"))
        allowed, refused = await self._permitted(ctx, items)
        errors.extend(refused)
        done = await _read_concurrently(allowed)
        await _read_images(done)
        files, skipped = _outcomes(done, errors)
        reminders = await _reminders(ctx, files)
        return _result(files, skipped, errors, reminders)

    async def _permitted(
        self, ctx: ToolContext, items: list[_Read]
    ) -> tuple[list[_Read], list[dict[str, str]]]:
        """The items the ``read`` permission allows, and an error entry for each refused one.
        One check for the whole batch (one question when several files ask); only when a
        rule denies some file are the files checked one by one, to name each refusal."""
        if not items:
            return [], []
        names = [
            [item.pattern or permission_pattern(ctx, Path(item.path)), *([item.alias] if item.alias else [])]
            for item in items
        ]
        try:
            every = list(dict.fromkeys(pattern for group in names for pattern in group))
            await ctx.check_permission("read", every, {"tool": self.name})
            return items, []
        except PermissionDenied as err:
            if err.asked:  # the user refused these; the rest were allowed
                refused = set(err.patterns)
                allowed = [
                    item for item, group in zip(items, names, strict=True) if refused.isdisjoint(group)
                ]
                errors = [
                    {"path": item.shown, "error": str(err)}
                    for item, group in zip(items, names, strict=True)
                    if not refused.isdisjoint(group)
                ]
                return allowed, errors
        allowed = []
        errors = []
        for item, group in zip(items, names, strict=True):
            try:
                await ctx.check_permission("read", group, {"tool": self.name, "path": item.path})
            except PermissionDenied as err:
                errors.append({"path": item.shown, "error": str(err)})
                continue
            allowed.append(item)
        return allowed, errors

    def params_summary(self, params: JsonObject) -> str:
        paths = [str(p) for p in params.get("paths") or []] + [str(p) for p in params.get("include") or []]
        if len(paths) == 1:
            return paths[0]
        return (
            plural(len(paths), "file") if all(not has_glob(p) for p in paths) else plural(len(paths), "path")
        )

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        if result.summary:
            return result.summary
        data = result.data or {}
        if result.is_error or "totalFiles" not in data:
            return super().result_summary(params, result)
        text = f"Read {plural(data['totalFiles'], 'file')} ({format_size(data['totalSize'])})"
        pictures = sum(1 for f in data["files"] if isinstance(f, dict) and "image" in f)
        if pictures:
            text = text[:-1] + f", {plural(pictures, 'image')})"
        if data["errors"]:
            text += f", {plural(len(data['errors']), 'error')} ⚠"
        return text


def _outcomes(done: list[_Read], errors: list[dict[str, str]]) -> tuple[list[_Read], list[dict[str, str]]]:
    """The files read and the skipped ones; a failed read is added to ``errors``, and so is a
    skip of a file named explicitly."""
    files = [item for item in done if item.error is None and item.skipped is None]
    skipped = [{"path": item.shown, "reason": item.skipped} for item in done if item.skipped]
    for item in done:
        if item.error is not None:
            errors.append({"path": item.shown, "error": item.error})
        elif item.skipped and item.explicit:
            errors.append({"path": item.shown, "error": f"Skipped: {item.skipped}"})
    return files, skipped


def _result(
    files: list[_Read], skipped: list[dict[str, str]], errors: list[dict[str, str]], reminders: list[str]
) -> ToolResult:
    extra = "\n\n" + "\n\n".join(reminders) if reminders else ""
    # Each file gets a share of the output limit; the errors, the summary and the
    # reminders always fit after them (the scheduler's generic cut would drop them).
    budget = plan(files, errors, len(skipped), extra)
    note, saved = "", None
    if budget.cut(len(errors)):
        saved, where = save_full_output(full_parts(budget, files, errors, len(skipped)))
        note = cut_note(budget, len(errors), where)
    output = render(budget, files, errors, len(skipped), note) + extra
    total_size = sum(item.size for item in files)
    images = [item.image for item in files if item.image is not None]
    data: JsonObject = {
        "files": [
            {
                "path": item.shown,
                "content": item.content,
                "size": item.size,
                "lineCount": item.lines,
                "isTruncated": item.truncated,
                **({"image": item.image_facts} if item.image_facts else {}),
            }
            for item in files
        ],
        "totalFiles": len(files),
        "totalSize": total_size,
        "errors": errors,
        "errorCount": len(errors),
        "skipped": skipped,
    }
    if saved:
        data["outputPath"] = saved
    return ToolResult(output, data=data, images=images or None)


async def _read_images(items: list[_Read]) -> None:
    """The images among the items read and made ready to send, in order, one at a time in a
    worker thread (each may decode tens of megapixels; its file's bytes are dropped once it
    is ready); past :data:`MAX_IMAGES` they are skipped without being read."""
    count = 0
    for item in items:
        if not item.image_pending:
            continue
        item.image_pending = False
        if count >= MAX_IMAGES:
            item.size = 0
            item.skipped = f"image (at most {MAX_IMAGES} per call; read it alone)"
            continue
        await asyncio.to_thread(_read_image, item)
        if item.image is not None:
            count += 1


def _read_image(item: _Read) -> None:
    data = _read_bytes(item, None)
    if data is not None:
        _take(item, data, image=True)


async def _read_concurrently(items: list[_Read]) -> list[_Read]:
    """Read every item without stalling the event loop, at the speed the storage allows.

    The first :data:`PROBE_SIZE` files are read in a worker thread and timed. When they
    come slowly (cold cache, network filesystem: I/O bound) the rest is read in up to
    :data:`MAX_CONCURRENT_BATCHES` threads at once. When they come fast (page cache: CPU
    bound) threads would only fight over the GIL, and each fresh thread's malloc arena
    page-faults every byte of content in again; so the rest is read on the event loop in
    slices of :data:`SLICE_SECONDS`, yielding in between, with big files sent to a thread
    and a switch to threads if the storage turns slow.
    """
    if not items:
        return []
    first, rest = items[:PROBE_SIZE], items[PROBE_SIZE:]
    started = time.perf_counter()
    done = await asyncio.to_thread(_read_batch, first)
    if rest and _slow(done, time.perf_counter() - started):
        return done + await _read_in_threads(rest)
    index = 0
    while index < len(rest):
        slice_start = time.perf_counter()
        deadline = slice_start + SLICE_SECONDS
        begin = index
        while index < len(rest):
            _read_one(rest[index], INLINE_MAX_BYTES)
            index += 1
            if time.perf_counter() >= deadline:
                break
        if _slow(rest[begin:index], time.perf_counter() - slice_start) and index < len(rest):
            threaded = await _read_in_threads(rest[index:])
            await _read_deferred(rest[:index])
            return done + rest[:index] + threaded
        await asyncio.sleep(0)
    await _read_deferred(rest)
    return done + rest


def _slow(items: list[_Read], elapsed: float) -> bool:
    """Did reading ``items`` take longer than fast storage would (I/O bound)?"""
    expected = len(items) * FAST_FILE_SECONDS + sum(item.size for item in items) / FAST_BYTES_PER_SECOND
    return elapsed > expected


async def _read_deferred(items: list[_Read]) -> None:
    """Read the items left for a thread (big files), in place."""
    deferred = [item for item in items if item.deferred]
    for item in deferred:
        item.deferred = False
    if deferred:
        await _read_in_threads(deferred)


async def _read_in_threads(items: list[_Read]) -> list[_Read]:
    size = max(1, min(BATCH_SIZE, -(-len(items) // MAX_CONCURRENT_BATCHES)))
    batches = [items[i : i + size] for i in range(0, len(items), size)]
    gate = asyncio.Semaphore(MAX_CONCURRENT_BATCHES)

    async def one(batch: list[_Read]) -> list[_Read]:
        async with gate:
            return await asyncio.to_thread(_read_batch, batch)

    results = await asyncio.gather(*(one(batch) for batch in batches))
    return [item for batch in results for item in batch]


async def _reminders(ctx: ToolContext, files: list[_Read]) -> list[str]:
    """The nested AGENTS.md texts for the folders read (asked once per folder)."""
    reminders: list[str] = []
    folders_seen: set[str] = set()
    for item in files:
        folder = item.path.rpartition(os.sep)[0]
        if folder in folders_seen:
            continue
        folders_seen.add(folder)
        extra = await ctx.instructions_for(Path(item.path))
        if extra and extra not in reminders:
            reminders.append(extra)
    return reminders
