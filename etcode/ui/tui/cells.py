"""Text as a terminal counts its cells.

An emoji variation selector (U+FE0F, "VS16") asks for the emoji look of a character that is
one cell wide on its own (``🖥️`` is U+1F5A5 U+FE0F). Terminals disagree on its width:
tmux and many others count the base character's one cell, others two, and Rich counts two.
A table row holding one is then drawn one cell longer or shorter than its borders. The
selector is dropped after such a character (the text form, one cell everywhere); emoji that
are two cells wide on their own keep it (every measure agrees on them), and so do joined
sequences (ZWJ), whose width no two terminals agree on.
"""

from __future__ import annotations

from rich.cells import cell_len

VS16 = "\ufe0f"
ZWJ = "\u200d"


def narrow_emoji(text: str, before: str = "") -> str:
    """``text`` without the VS16 selectors that follow a one-cell character (``before``: the
    character just before ``text``, when it continues a stream)."""
    if VS16 not in text:
        return text
    kept: list[str] = []
    previous = before[-1:] if before else ""
    for index, char in enumerate(text):
        joined = text[index + 1 : index + 2] == ZWJ  # a ZWJ sequence (🏳️‍🌈): left as it is
        if char == VS16 and previous and previous != VS16 and not joined and cell_len(previous) == 1:
            continue
        kept.append(char)
        previous = char
    return "".join(kept)
