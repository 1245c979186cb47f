"""The text ``ReadManyFiles`` returns, budgeted per file so one big file cannot crowd out the
others: every file gets its header and a fair share of the output limit, a file cut short
says which lines are shown and how to read the rest, and the Errors and Summary sections
always come last, whole (a very long error list is shortened, with a count). The result stays
within the scheduler's limits (:mod:`etcode.tools.truncate`), so its generic cut never applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from etcode.tools import truncate
from etcode.tools.summary import plural
from etcode.util.fs import format_size

#: Room left under the scheduler's limits: a redacted secret may grow, a loop note is appended.
OUTPUT_MAX_LINES = truncate.MAX_LINES - 20
OUTPUT_MAX_BYTES = truncate.MAX_BYTES - 2 * 1024
#: The error list takes at most this fraction of the budget; the rest is counted.
ERRORS_SHARE = 4
#: A file's header, its cut marker and the blank line after it, at least.
_FILE_MIN_LINES = 3
#: The least room any file takes (an empty file's header and blank line).
_SMALLEST_FLOOR = (2, len("=== File:  (0 B, 0 lines) ===\n") + 1)
#: The shortest header, without the file's name.
_HEADER_LEAST = len("=== File:  (0 B, 1 line) ===\n")
#: The line naming the files left out (its list of names is cut to fit).
_OMITTED_BYTES = 800
_OMITTED_NAMES_BYTES = 500
#: A cut marker without the file's name, at most (line numbers up to 7 digits).
_MARKER_BYTES = 150
#: The summary's note about a cut, without the saved file's folder.
_NOTE_BYTES = 400


class FileRead(Protocol):
    """What the formatter needs of one file read (``read_many_files._Read``)."""

    shown: str
    content: str
    size: int
    lines: int
    truncated: bool
    explicit: bool
    #: For an image (sent to the model beside the text): what it is; "" for a text file.
    image_note: str


def _byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def header(item: FileRead) -> str:
    if item.image_note:
        return f"=== Image: {item.image_note}, shown below ===\n"
    return f"=== File: {item.shown} ({format_size(item.size)}, {plural(item.lines, 'line')}) ===\n"


def _separator(content: str) -> str:
    return "\n" if not content or content[-1] == "\n" else "\n\n"


def full_parts(
    budget: Budgeted, files: Sequence[FileRead], errors: list[dict[str, str]], skipped: int
) -> list[str]:
    """The whole result as pieces, nothing cut (what is saved when the budget cuts)."""
    parts: list[str] = []
    for item in files:
        content = item.content
        parts += [header(item), content, _separator(content)]
    if not files:
        parts.append("No files were read.\n\n")
    if errors:
        parts.append(_errors_section(errors, len(errors)))
    parts.append(_summary(files, errors, skipped))
    return parts


def _errors_section(errors: list[dict[str, str]], shown: int) -> str:
    lines = "".join(f"- {e['path']}: {e['error']}\n" for e in errors[:shown])
    if shown < len(errors):
        lines += f"- ... and {len(errors) - shown} more (every error is in the saved full output)\n"
    return "=== Errors ===\n" + lines + "\n"


def _summary(files: Sequence[FileRead], errors: list[dict[str, str]], skipped: int) -> str:
    text = f"--- Summary ---\nTotal: {plural(len(files), 'file')}, {format_size(sum(f.size for f in files))}"
    if errors:
        text += f"\nErrors: {len(errors)}"
    if skipped:
        text += f"\nSkipped: {skipped} (binary)"
    return text


@dataclass
class _Slot:
    """How one file appears: whole, or its first ``keep`` lines and a marker."""

    item: FileRead
    header: str
    need_lines: int
    need_bytes: int
    #: The least room it takes: whole when tiny, else its header, a marker and a blank line.
    floor: tuple[int, int]
    keep: int | None = None  # None: whole

    def render(self) -> str:
        content = self.item.content
        if self.keep is None:
            return self.header + content + _separator(content)
        return self.header + _first_lines(content, self.keep) + _marker(self.item, self.keep) + "\n\n"


def _first_lines(content: str, count: int) -> str:
    end = 0
    for _ in range(count):
        newline = content.find("\n", end)
        if newline == -1:
            return content + "\n"
        end = newline + 1
    return content[:end]


def _marker(item: FileRead, keep: int) -> str:
    where = f'use ReadFile with file_path "{item.shown}"'
    if keep == 0:
        return (
            f"[... not shown to fit the output limit ({plural(item.lines, 'line')}); {where} to read it ...]"
        )
    return (
        f"[... cut to fit the output limit: showing lines 1-{keep} of {item.lines}; "
        f"{where} and offset={keep + 1} to read the rest ...]"
    )


def _fit(content: str, max_lines: int, max_bytes: int) -> tuple[int, int]:
    """The most leading whole lines of ``content`` within both limits: (lines, bytes)."""
    lines = size = end = 0
    ascii_text = content.isascii()
    while lines < max_lines:
        newline = content.find("\n", end)
        stop = len(content) if newline == -1 else newline + 1
        if stop == end:
            break
        piece = stop - end if ascii_text else len(content[end:stop].encode("utf-8"))
        if size + piece + (newline == -1) > max_bytes:
            break
        size += piece + (newline == -1)
        lines += 1
        end = stop
    return lines, size


@dataclass
class Budgeted:
    """The text for the model (``text``, without the saved file's note) and what was cut."""

    slots: list[_Slot]  # the files shown, in order
    omitted: list[FileRead] = field(default_factory=list)
    errors_shown: int = 0

    @property
    def shortened(self) -> int:
        return sum(slot.keep is not None for slot in self.slots)

    def cut(self, errors: int) -> bool:
        return bool(self.shortened or self.omitted or self.errors_shown < errors)


def plan(
    files: Sequence[FileRead],
    errors: list[dict[str, str]],
    skipped: int,
    reminders: str = "",
    max_lines: int = OUTPUT_MAX_LINES,
    max_bytes: int = OUTPUT_MAX_BYTES,
) -> Budgeted:
    """Share ``max_lines`` / ``max_bytes`` between the files, after the errors, the
    summary and the ``reminders`` have taken their room: files that fit their fair share
    appear whole, the rest split what is left (smallest first, so leftovers flow on)."""
    errors_shown = _errors_that_fit(errors, max_lines // ERRORS_SHARE, max_bytes // ERRORS_SHARE)
    tail = (_errors_section(errors, errors_shown) if errors else "") + _summary(files, errors, skipped)
    tail += reminders
    lines_left = max_lines - tail.count("\n") - 3  # the note line(s) about a cut
    bytes_left = max_bytes - _byte_len(tail) - _NOTE_BYTES - _byte_len(str(truncate.output_dir()))
    slots = _Slots(files)
    if slots.all_fit_whole(lines_left, bytes_left):
        return Budgeted([slots[i] for i in range(len(files))], errors_shown=errors_shown)
    order = _Order(files)
    chosen = _choose(slots, order, lines_left, bytes_left)
    if len(chosen) < len(files):  # room for the line naming the files left out
        lines_left -= 2
        bytes_left -= _OMITTED_BYTES
        chosen = _choose(slots, order, lines_left, bytes_left)
    budget = Budgeted([slots[i] for i in sorted(chosen)], errors_shown=errors_shown)
    budget.omitted = [files[i] for i in range(len(files)) if i not in chosen]
    # Each file is owed its floor (whole when tiny, else header + marker); what is left
    # beyond the floors is shared equally, smallest need first so that leftovers flow on.
    owed_lines = sum(slot.floor[0] for slot in budget.slots)
    owed_bytes = sum(slot.floor[1] for slot in budget.slots)
    scale_lines, scale_bytes = max(lines_left, 1), max(bytes_left, 1)

    def beyond_floor(slot: _Slot) -> float:
        floor_lines, floor_bytes = slot.floor
        return max(
            (slot.need_lines - floor_lines) / scale_lines, (slot.need_bytes - floor_bytes) / scale_bytes
        )

    waiting = sorted(budget.slots, key=beyond_floor)
    for left, slot in zip(range(len(waiting), 0, -1), waiting, strict=True):
        floor_lines, floor_bytes = slot.floor
        owed_lines -= floor_lines
        owed_bytes -= floor_bytes
        extra_lines = max(lines_left - floor_lines - owed_lines, 0) // left
        extra_bytes = max(bytes_left - floor_bytes - owed_bytes, 0) // left
        if slot.need_lines <= floor_lines + extra_lines and slot.need_bytes <= floor_bytes + extra_bytes:
            lines_left -= slot.need_lines
            bytes_left -= slot.need_bytes
            continue
        keep, used = _fit(slot.item.content, extra_lines, extra_bytes)
        slot.keep = keep
        lines_left -= floor_lines + keep
        bytes_left -= floor_bytes + used
    return budget


class _Slots:
    """The files' slots, made only when asked for: of thousands of files over the limit,
    only the few hundred that can be shown are measured."""

    def __init__(self, files: Sequence[FileRead]) -> None:
        self.files = files
        self._made: dict[int, _Slot] = {}

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> _Slot:
        slot = self._made.get(index)
        if slot is None:
            slot = self._made[index] = _slot(self.files[index])
        return slot

    def all_fit_whole(self, max_lines: int, max_bytes: int) -> bool:
        lines = size = 0
        for index in range(len(self.files)):
            slot = self[index]
            lines += slot.need_lines
            size += slot.need_bytes
            if lines > max_lines or size > max_bytes:
                return False
        return True


class _Order:
    """The order files get room in (the paths named explicitly first, then glob matches in
    order), each with a cheap lower bound of its floor and the least bound from there on."""

    def __init__(self, files: Sequence[FileRead]) -> None:
        named = [i for i, item in enumerate(files) if item.explicit]
        others = [i for i, item in enumerate(files) if not item.explicit] if named else range(len(files))
        self.indexes = [*named, *others]
        header_least, marker = _HEADER_LEAST, _MARKER_BYTES + 2
        self.least = [
            header_least + len(item.shown) + min(len(item.content) + 2, len(item.shown) + marker)
            for item in (files[i] for i in self.indexes)
        ]  # _least_bytes, inlined: this runs over every file
        self.least_after = self.least[:]
        for pos in range(len(self.least_after) - 2, -1, -1):
            self.least_after[pos] = min(self.least_after[pos], self.least_after[pos + 1])


def _choose(slots: _Slots, order: _Order, max_lines: int, max_bytes: int) -> set[int]:
    """The files that get at least their floor, when not all can, in ``order``."""
    chosen: set[int] = set()
    for pos, index in enumerate(order.indexes):
        if max_lines < _SMALLEST_FLOOR[0] or max_bytes < order.least_after[pos]:
            break  # none of the rest can fit: they are left out
        if order.least[pos] > max_bytes:
            continue  # this one cannot fit (known without measuring it)
        floor_lines, floor_bytes = slots[index].floor
        if floor_lines > max_lines or floor_bytes > max_bytes:
            continue
        max_lines -= floor_lines
        max_bytes -= floor_bytes
        chosen.add(index)
    return chosen


def _least_bytes(item: FileRead) -> int:
    """A lower bound of the bytes of ``item``'s floor, cheap to compute: its header, and
    the smaller of its whole content and a cut marker."""
    shown = len(item.shown)
    return _HEADER_LEAST + shown + min(len(item.content) + 2, shown + _MARKER_BYTES + 2)


def _slot(item: FileRead) -> _Slot:
    content = item.content
    ends_line = not content or content[-1] == "\n"
    # the file's lines were counted when it was read; content cut then (with a marker) is counted
    newlines = content.count("\n") if item.truncated else item.lines - (0 if ends_line else 1)
    head = header(item)
    head_bytes = _byte_len(head)
    whole = (2 + newlines + (not ends_line), head_bytes + _byte_len(content) + 2)
    # shown whole when that costs less than its header, a cut marker and a blank line
    cut = (_FILE_MIN_LINES, head_bytes + _byte_len(item.shown) + _MARKER_BYTES + 2)
    return _Slot(item, head, *whole, whole if _weight(*whole) <= _weight(*cut) else cut)


def _weight(lines: int, size: int) -> float:
    """Lines and bytes as one measure: their shares of the limits."""
    return lines / OUTPUT_MAX_LINES + size / OUTPUT_MAX_BYTES


def _errors_that_fit(errors: list[dict[str, str]], max_lines: int, max_bytes: int) -> int:
    lines, size = 3, 100  # the heading, the blank line, the "... and N more" line
    for count, error in enumerate(errors):
        size += _byte_len(error["path"]) + _byte_len(error["error"]) + 4
        lines += 1
        if lines > max_lines or size > max_bytes:
            return count
    return len(errors)


def render(
    budget: Budgeted,
    files: Sequence[FileRead],
    errors: list[dict[str, str]],
    skipped: int,
    note: str = "",
) -> str:
    """The text for the model; ``note`` (where the full text was saved) ends the summary."""
    parts = [slot.render() for slot in budget.slots]
    if budget.omitted:
        names, size = [], 0
        for item in budget.omitted:
            size += _byte_len(item.shown) + 2
            if size > _OMITTED_NAMES_BYTES:
                break
            names.append(item.shown)
        rest = len(budget.omitted) - len(names)
        more = f" and {rest} more" if rest else ""
        parts.append(
            f"[... {plural(len(budget.omitted), 'more file')} not shown to fit the output limit: "
            f"{', '.join(names)}{more}; read them with ReadFile or fewer paths at a time ...]\n\n"
        )
    if not files:
        parts.append("No files were read.\n\n")
    if errors:
        parts.append(_errors_section(errors, budget.errors_shown))
    parts.append(_summary(files, errors, skipped))
    if note:
        parts.append("\n" + note)
    return "".join(parts)


def cut_note(budget: Budgeted, errors: int, saved: str) -> str:
    """The summary's line about what the budget cut, and ``saved`` (where the full text is)."""
    what = []
    if budget.shortened:
        what.append(f"{plural(budget.shortened, 'file')} cut short")
    if budget.omitted:
        what.append(f"{plural(len(budget.omitted), 'file')} not shown")
    if budget.errors_shown < errors:
        what.append(f"{plural(errors - budget.errors_shown, 'error')} not listed")
    limit = f"{truncate.MAX_LINES} lines / {format_size(truncate.MAX_BYTES)}"
    return f"Output: {', '.join(what)} to fit the output limit ({limit}). {saved}"
