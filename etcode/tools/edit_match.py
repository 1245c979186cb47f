"""Find ``old_string`` in a file tolerantly: the replacer chain behind ``Edit``.

Each matcher returns the spans of the content it would replace; the first matcher in
the chain that finds exactly one span wins (or any number with ``replace_all``). The
chain, strictest first: exact → line-trimmed → indentation-flexible →
whitespace-normalised → escape-normalised → block anchor (first/last line plus a
similar middle). Works on ``\\n`` text; the caller handles CRLF and BOM.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

Span = tuple[int, int]

#: Block anchor: middle similarity needed with one candidate / among several.
SINGLE_CANDIDATE_SIMILARITY = 0.5
MULTIPLE_CANDIDATE_SIMILARITY = 0.7


class EditMatchError(Exception):
    """``old_string`` could not be placed; the message is written for the model."""


class NoMatchError(EditMatchError):
    pass


class AmbiguousMatchError(EditMatchError):
    def __init__(self, message: str, lines: list[int]) -> None:
        super().__init__(message)
        self.lines = lines


@dataclass(frozen=True)
class Replacement:
    """The new content, which matcher placed the edit, and how many spans were replaced."""

    content: str
    matcher: str
    count: int


# ---- line helpers ------------------------------------------------------------------


class _Lines:
    """Content split into lines with their offsets (``end`` excludes the newline)."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.lines = content.split("\n")
        self.starts: list[int] = []
        offset = 0
        for line in self.lines:
            self.starts.append(offset)
            offset += len(line) + 1

    def span(self, first: int, last: int, trailing_newline: bool) -> Span:
        end = self.starts[last] + len(self.lines[last])
        if trailing_newline and end < len(self.content):
            end += 1
        return self.starts[first], end


def _search_lines(find: str) -> tuple[list[str], bool]:
    lines = find.split("\n")
    trailing = len(lines) > 1 and lines[-1] == ""
    if trailing:
        lines.pop()
    return lines, trailing


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _common_indent(lines: list[str]) -> str:
    indents = [_indent(line) for line in lines if line.strip()]
    if not indents:
        return ""
    prefix = indents[0]
    for item in indents[1:]:
        while not item.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


def _dedent(lines: list[str]) -> list[str]:
    prefix = _common_indent(lines)
    return [line[len(prefix) :].rstrip() if line.strip() else "" for line in lines]


# ---- matchers ----------------------------------------------------------------------


def exact(content: str, find: str) -> list[Span]:
    spans: list[Span] = []
    start = content.find(find)
    while start != -1 and find:
        spans.append((start, start + len(find)))
        start = content.find(find, start + len(find))
    return spans


def _window_matches(content: str, find: str, same: Callable[[list[str], list[str]], bool]) -> list[Span]:
    wanted, trailing = _search_lines(find)
    if not wanted or not any(line.strip() for line in wanted):
        return []
    text = _Lines(content)
    size = len(wanted)
    spans: list[Span] = []
    i = 0
    while i + size <= len(text.lines):
        window = text.lines[i : i + size]
        if same(window, wanted):
            spans.append(text.span(i, i + size - 1, trailing))
            i += size
        else:
            i += 1
    return spans


def line_trimmed(content: str, find: str) -> list[Span]:
    """Whole lines equal to the search lines once each is stripped of outer whitespace."""
    return _window_matches(
        content,
        find,
        lambda window, wanted: all(a.strip() == b.strip() for a, b in zip(window, wanted, strict=True)),
    )


def indentation_flexible(content: str, find: str) -> list[Span]:
    """Whole lines equal to the search lines after removing each block's common indent."""
    return _window_matches(content, find, lambda window, wanted: _dedent(window) == _dedent(wanted))


def whitespace_normalized(content: str, find: str) -> list[Span]:
    """Same words, any runs of whitespace between them (also across lines)."""
    tokens = find.split()
    if not tokens:
        return []
    pattern = re.compile(r"\s+".join(re.escape(token) for token in tokens))
    return [(m.start(), m.end()) for m in pattern.finditer(content)]


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "`": "`", "\\": "\\", "$": "$", "\n": "\n"}
_ESCAPE_RE = re.compile(r"\\(n|t|r|'|\"|`|\\|\$|\n)")


def unescape(text: str) -> str:
    """Undo one level of string escaping (``\\n`` → newline, ``\\"`` → ``"``...)."""
    return _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(1)], text)


def escape_normalized(content: str, find: str) -> list[Span]:
    """The search text with one level of backslash escaping undone."""
    plain = unescape(find)
    if plain == find:
        return []
    return exact(content, plain) or line_trimmed(content, plain)


def block_anchor(content: str, find: str) -> list[Span]:
    """Blocks of 3+ lines whose first and last lines match (trimmed) and whose middle
    is similar enough to the search text's middle."""
    wanted, trailing = _search_lines(find)
    if len(wanted) < 3:
        return []
    first, last = wanted[0].strip(), wanted[-1].strip()
    if not first or not last:
        return []
    text = _Lines(content)
    candidates = _anchored_blocks(text.lines, first, last, len(wanted))
    if not candidates:
        return []
    wanted_mid = _middle(wanted)
    scored = [(_similarity(_middle(text.lines[i : j + 1]), wanted_mid), i, j) for i, j in candidates]
    return [text.span(i, j, trailing) for _, i, j in _similar_enough(scored)]


def _anchored_blocks(lines: list[str], first: str, last: str, size: int) -> list[tuple[int, int]]:
    """(first, last) indexes of the blocks from a line ``first`` to the next line ``last``
    within twice the search's ``size`` lines, at least 3 (and half of ``size``) long."""
    blocks: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        if line.strip() != first:
            continue
        end = min(len(lines), i + 2 * size)
        j = next((j for j in range(i + 2, end) if lines[j].strip() == last), None)
        if j is not None and j - i + 1 >= max(3, size // 2):
            blocks.append((i, j))
    return blocks


def _middle(lines: list[str]) -> str:
    """A block's lines but its first and last, trimmed."""
    return "\n".join(line.strip() for line in lines[1:-1])


def _similarity(actual_mid: str, wanted_mid: str) -> float:
    if not wanted_mid and not actual_mid:
        return 1.0
    return SequenceMatcher(None, actual_mid, wanted_mid, autojunk=False).ratio()


def _similar_enough(scored: list[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
    """The candidates (similarity, first, last) similar enough (a lone one needs less);
    of several, only the most similar when one is."""
    threshold = SINGLE_CANDIDATE_SIMILARITY if len(scored) == 1 else MULTIPLE_CANDIDATE_SIMILARITY
    good = [item for item in scored if item[0] >= threshold]
    if len(good) > 1:
        best = max(score for score, _, _ in good)
        top = [item for item in good if item[0] == best]
        if len(top) == 1:
            return top
    return good


#: The chain, strictest first.
MATCHERS: list[tuple[str, Callable[[str, str], list[Span]]]] = [
    ("exact", exact),
    ("line-trimmed", line_trimmed),
    ("indentation-flexible", indentation_flexible),
    ("whitespace-normalized", whitespace_normalized),
    ("escape-normalized", escape_normalized),
    ("block-anchor", block_anchor),
]


# ---- replacing ---------------------------------------------------------------------


def _adapt_new(found: str, old: str, new: str, matcher: str) -> str:
    """Carry a tolerant match over to ``new_string``: give its lines the file's
    indentation where the search text's indentation differed, and undo escaping when
    the search text was escaped."""
    if matcher == "exact":
        return new
    if matcher == "escape-normalized":
        return unescape(new)
    found_lines, old_lines = found.split("\n"), old.split("\n")
    if len(found_lines) == len(old_lines):
        pairs = list(zip(old_lines, found_lines, strict=True))
    else:
        pairs = [(old_lines[0], found_lines[0]), (old_lines[-1], found_lines[-1])]
    mapping: dict[str, str] = {}
    for old_line, found_line in pairs:
        if not old_line.strip():
            continue
        if mapping.setdefault(_indent(old_line), _indent(found_line)) != _indent(found_line):
            return new  # the indentation differs irregularly: leave new_string alone
    if all(key == value for key, value in mapping.items()):
        return new
    keys = sorted(mapping, key=len, reverse=True)
    out = []
    for line in new.split("\n"):
        if not line.strip():
            out.append(line)
            continue
        indent = _indent(line)
        key = next((k for k in keys if indent.startswith(k)), None)
        out.append(line if key is None else mapping[key] + line[len(key) :])
    return "\n".join(out)


def _settles(span: Span, candidates: list[Span]) -> bool:
    """Whether a looser matcher's single ``span`` picks out exactly one of the places a
    stricter matcher found ambiguous (it overlaps that one and no other)."""
    start, end = span
    return sum(1 for a, b in candidates if a < end and start < b) == 1


def _line_of(content: str, offset: int) -> int:
    return content.count("\n", 0, offset) + 1


def replace(content: str, old: str, new: str, replace_all: bool = False) -> Replacement:
    """Replace ``old`` with ``new`` in ``content`` using the first matcher that places it.

    Raises :class:`AmbiguousMatchError` when every matcher that found ``old`` found it
    more than once (and not ``replace_all``), :class:`NoMatchError` when none found it.
    """
    if not old:
        raise NoMatchError("old_string is empty")
    ambiguous: list[int] | None = None
    candidates: list[Span] = []  # the places the strictest ambiguous matcher found
    for name, matcher in MATCHERS:
        spans = matcher(content, old)
        if not spans:
            continue
        if len(spans) > 1 and not replace_all:
            if ambiguous is None:
                ambiguous = [_line_of(content, start) for start, _ in spans]
                candidates = spans
            continue
        if candidates and not replace_all and not _settles(spans[0], candidates):
            continue  # a looser matcher may pick one of the places, never invent another
        out = content
        for start, end in sorted(spans, reverse=True):
            out = out[:start] + _adapt_new(content[start:end], old, new, name) + out[end:]
        return Replacement(out, name, len(spans))
    if ambiguous is not None:
        where = ", ".join(str(n) for n in ambiguous[:10])
        raise AmbiguousMatchError(
            f"old_string matches {len(ambiguous)} places (lines {where}). Include more surrounding "
            "lines in old_string so it identifies one place, or set replace_all to change every one.",
            ambiguous,
        )
    raise NoMatchError("old_string was not found")


@dataclass(frozen=True)
class Region:
    """The part of a file most similar to a search text (1-based line numbers)."""

    first_line: int
    last_line: int
    text: str
    similarity: float


def closest_region(content: str, find: str) -> Region | None:
    """The window of lines most similar to ``find`` (difflib), or None for empty input."""
    lines = content.split("\n")
    wanted, _ = _search_lines(find)
    if not content.strip() or not find.strip():
        return None
    size = max(1, min(len(wanted), len(lines)))
    target = "\n".join(line.strip() for line in wanted)
    stripped = [line.strip() for line in lines]
    best: tuple[float, int] = (-1.0, 0)
    matcher = SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    for i in range(0, len(lines) - size + 1):
        matcher.set_seq1("\n".join(stripped[i : i + size]))
        if matcher.real_quick_ratio() <= best[0] or matcher.quick_ratio() <= best[0]:
            continue
        score = matcher.ratio()
        if score > best[0]:
            best = (score, i)
    score, start = best
    end = start + size - 1
    return Region(start + 1, end + 1, "\n".join(lines[start : end + 1]), max(score, 0.0))


_NUMBERED = re.compile(r"^\s*\d+\t")


def looks_line_numbered(text: str) -> bool:
    """True when every non-empty line starts with a ReadFile line-number prefix."""
    lines = [line for line in text.split("\n") if line.strip()]
    return bool(lines) and all(_NUMBERED.match(line) for line in lines)
