"""HTML to markdown or plain text for ``WebFetch`` (stdlib ``html.parser``; the README says
why no library does this). Imported on first use: ``html.parser`` is not needed to start."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin

_SKIP = {"script", "style", "noscript", "head", "svg", "iframe", "template", "object", "canvas", "select"}
_BLOCK = {
    "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "form",
    "table", "tr", "ul", "ol", "dl", "dt", "dd", "figure", "figcaption", "details", "summary",
    "address", "fieldset",
}  # fmt: skip
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}

#: Inline tags whose markdown is the same before and after the text.
_INLINE_MARKS = {"code": "`", "strong": "**", "b": "**", "em": "*", "i": "*"}
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")

_Attrs = list[tuple[str, str | None]]


def _attribute(attrs: _Attrs, name: str) -> str:
    """The value of attribute ``name`` ("" when absent or valueless; the last one wins)."""
    return {key: value or "" for key, value in attrs}.get(name, "")


@dataclass
class _ListLevel:
    kind: str  # "ul" or "ol"
    counter: int = 0


class _Converter(HTMLParser):
    """A small HTML → markdown / plain-text converter good enough for documentation pages."""

    def __init__(self, base_url: str, markdown: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.md = markdown
        self.out: list[str] = []
        self.skip_depth = 0
        self.pre_depth = 0
        self.lists: list[_ListLevel] = []
        self.links: list[str | None] = []
        self.title = ""
        self._in_title = False
        self._cells = 0
        self._header_cells = 0
        self._on_start: dict[str, Callable[[str, _Attrs], None]] = {
            **dict.fromkeys(_HEADINGS, self._start_heading),
            **dict.fromkeys(_INLINE_MARKS, self._start_inline),
            "br": self._start_br,
            "hr": self._start_hr,
            "pre": self._start_pre,
            "blockquote": self._start_blockquote,
            "ul": self._start_list,
            "ol": self._start_list,
            "li": self._start_item,
            "a": self._start_link,
            "img": self._start_image,
            "tr": self._start_row,
            "td": self._start_cell,
            "th": self._start_cell,
        }
        self._on_end: dict[str, Callable[[str], None]] = {
            **dict.fromkeys(_HEADINGS, self._end_block),
            **dict.fromkeys(_INLINE_MARKS, self._mark),
            "blockquote": self._end_block,
            "pre": self._end_pre,
            "ul": self._end_list,
            "ol": self._end_list,
            "a": self._end_link,
            "tr": self._end_row,
        }

    # -- helpers
    def _emit(self, text: str) -> None:
        if self.skip_depth == 0:
            self.out.append(text)

    def _inline_mark(self, tag: str) -> str:
        """The markdown written on both sides of inline ``tag`` ("" for none, plain text, or
        code inside ``<pre>``, which is fenced already)."""
        if not self.md or (tag == "code" and self.pre_depth):
            return ""
        return _INLINE_MARKS.get(tag, "")

    def _mark(self, tag: str) -> None:
        """Write inline ``tag``'s markdown, if it has any here."""
        mark = self._inline_mark(tag)
        if mark:
            self._emit(mark)

    def _block(self, blank: bool = True) -> None:
        """End the current block: make the output end with one (or two, ``blank``) newlines."""
        if self.skip_depth or not self.out:
            return
        want = 2 if blank else 1
        tail = "".join(self.out[-3:])
        have = len(tail) - len(tail.rstrip("\n"))
        if have < want:
            self.out.append("\n" * (want - have))

    # -- parser callbacks
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip_depth += 1
            return
        opened = self._on_start.get(tag)
        if opened is not None:
            opened(tag, attrs)
        elif tag in _BLOCK:
            self._block()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            self.skip_depth = max(self.skip_depth - 1, 0)
            return
        closed = self._on_end.get(tag)
        if closed is not None:
            closed(tag)
        elif tag in _BLOCK:
            self._block()

    # -- start tags (a tag with no handler here is a block if in _BLOCK, else ignored)
    def _start_heading(self, tag: str, _attrs: _Attrs) -> None:
        self._block()
        if self.md:
            self._emit("#" * int(tag[1]) + " ")

    def _start_br(self, _tag: str, _attrs: _Attrs) -> None:
        self._emit("  \n" if self.md else "\n")

    def _start_hr(self, _tag: str, _attrs: _Attrs) -> None:
        self._block()
        self._emit("---" if self.md else "")
        self._block()

    def _start_pre(self, _tag: str, _attrs: _Attrs) -> None:
        self._block()
        self.pre_depth += 1
        if self.md:
            self._emit("```\n")

    def _start_inline(self, tag: str, _attrs: _Attrs) -> None:
        self._mark(tag)

    def _start_blockquote(self, _tag: str, _attrs: _Attrs) -> None:
        self._block()
        if self.md:
            self._emit("> ")

    def _start_list(self, tag: str, _attrs: _Attrs) -> None:
        self._block(blank=not self.lists)
        self.lists.append(_ListLevel(tag))

    def _start_item(self, _tag: str, _attrs: _Attrs) -> None:
        self._block(blank=False)
        depth = max(len(self.lists) - 1, 0)
        bullet = "- "
        if self.lists and self.lists[-1].kind == "ol":
            self.lists[-1].counter += 1
            bullet = f"{self.lists[-1].counter}. "
        self._emit("  " * depth + bullet)

    def _start_link(self, _tag: str, attrs: _Attrs) -> None:
        href = _attribute(attrs, "href")
        self.links.append(urljoin(self.base_url, href) if href and not href.startswith("#") else None)
        if self.md and self.links[-1]:
            self._emit("[")

    def _start_image(self, _tag: str, attrs: _Attrs) -> None:
        src = _attribute(attrs, "src")
        if self.md and src:
            self._emit(f"![{_attribute(attrs, 'alt')}]({urljoin(self.base_url, src)})")

    def _start_row(self, _tag: str, _attrs: _Attrs) -> None:
        self._block(blank=False)
        self._cells = self._header_cells = 0

    def _start_cell(self, tag: str, _attrs: _Attrs) -> None:
        self._emit("| " if self._cells == 0 else " | ")
        self._cells += 1
        self._header_cells += tag == "th"

    # -- end tags
    def _end_block(self, _tag: str) -> None:
        self._block()

    def _end_pre(self, _tag: str) -> None:
        if self.md:
            self._emit("\n```")
        self.pre_depth = max(self.pre_depth - 1, 0)
        self._block()

    def _end_list(self, _tag: str) -> None:
        if self.lists:
            self.lists.pop()
        self._block(blank=not self.lists)

    def _end_link(self, _tag: str) -> None:
        href = self.links.pop() if self.links else None
        if self.md and href:
            self._emit(f"]({href})")

    def _end_row(self, _tag: str) -> None:
        if self._cells:
            self._emit(" |")
        if self.md and self._header_cells and self._header_cells == self._cells:
            self._emit("\n|" + " --- |" * self._cells)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self.skip_depth:
            return
        if self.pre_depth:
            self._emit(data)
            return
        text = re.sub(r"\s+", " ", data)
        if text.strip() or (self.out and not self.out[-1].endswith((" ", "\n"))):
            self._emit(text)

    def result(self) -> str:
        text = "".join(self.out)
        lines = [line.rstrip() if not line.endswith("  ") else line for line in text.split("\n")]
        text = "\n".join(line if line.strip() else "" for line in lines)
        text = re.sub(r"\n{3,}", "\n\n", text)
        return "\n".join(
            line.lstrip(" ") if not line.startswith("  ") else line for line in text.split("\n")
        ).strip()


def html_to_markdown(html: str, base_url: str = "") -> str:
    """Convert an HTML page to markdown (headings, links, lists, code, tables)."""
    parser = _Converter(base_url, markdown=True)
    parser.feed(html)
    parser.close()
    return parser.result()


def html_to_text(html: str, base_url: str = "") -> str:
    """Convert an HTML page to plain text (block structure kept as line breaks)."""
    parser = _Converter(base_url, markdown=False)
    parser.feed(html)
    parser.close()
    return parser.result()
