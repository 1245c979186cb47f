"""HTML to markdown or plain text for ``WebFetch`` (stdlib ``html.parser``; the README says
why no library does this). Imported on first use: ``html.parser`` is not needed to start."""

from __future__ import annotations

import re
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
        attr = {k: v or "" for k, v in attrs}
        if tag == "title":
            self._in_title = True
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip_depth += 1
            return
        md = self.md
        if re.fullmatch(r"h[1-6]", tag):
            self._block()
            if md:
                self._emit("#" * int(tag[1]) + " ")
        elif tag == "br":
            self._emit("  \n" if md else "\n")
        elif tag == "hr":
            self._block()
            self._emit("---" if md else "")
            self._block()
        elif tag == "pre":
            self._block()
            self.pre_depth += 1
            if md:
                self._emit("```\n")
        elif mark := self._inline_mark(tag):
            self._emit(mark)
        elif tag == "blockquote":
            self._block()
            if md:
                self._emit("> ")
        elif tag in ("ul", "ol"):
            self._block(blank=not self.lists)
            self.lists.append(_ListLevel(tag))
        elif tag == "li":
            self._block(blank=False)
            depth = max(len(self.lists) - 1, 0)
            bullet = "- "
            if self.lists and self.lists[-1].kind == "ol":
                self.lists[-1].counter += 1
                bullet = f"{self.lists[-1].counter}. "
            self._emit("  " * depth + bullet)
        elif tag == "a":
            href = attr.get("href", "")
            self.links.append(urljoin(self.base_url, href) if href and not href.startswith("#") else None)
            if md and self.links[-1]:
                self._emit("[")
        elif tag == "img" and md:
            src = attr.get("src", "")
            if src:
                self._emit(f"![{attr.get('alt', '')}]({urljoin(self.base_url, src)})")
        elif tag == "tr":
            self._block(blank=False)
            self._cells = self._header_cells = 0
        elif tag in ("td", "th"):
            self._emit("| " if self._cells == 0 else " | ")
            self._cells += 1
            self._header_cells += tag == "th"
        elif tag in _BLOCK:
            self._block()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            self.skip_depth = max(self.skip_depth - 1, 0)
            return
        md = self.md
        if re.fullmatch(r"h[1-6]", tag) or tag in ("blockquote",):
            self._block()
        elif tag == "pre":
            if md:
                self._emit("\n```")
            self.pre_depth = max(self.pre_depth - 1, 0)
            self._block()
        elif mark := self._inline_mark(tag):
            self._emit(mark)
        elif tag in ("ul", "ol"):
            if self.lists:
                self.lists.pop()
            self._block(blank=not self.lists)
        elif tag == "a":
            href = self.links.pop() if self.links else None
            if md and href:
                self._emit(f"]({href})")
        elif tag == "tr":
            if self._cells:
                self._emit(" |")
            if md and self._header_cells and self._header_cells == self._cells:
                self._emit("\n|" + " --- |" * self._cells)
        elif tag in _BLOCK:
            self._block()

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
