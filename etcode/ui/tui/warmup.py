"""One-time costs paid in a background thread after the first paint, not in the middle of
the first streamed answer: markdown-it's first ``gfm-like`` parse compiles linkify's
regexes (about 50 ms), and Rich's first Markdown render imports and sets up its table and
code-block renderers. Python's regex cache and imported modules are process-wide, so the
UI thread finds them ready."""

from __future__ import annotations

import contextlib
import io
import threading

SAMPLE = (
    "# Title\n\nSome *text* with `code`, a [link](https://example.com) and www.example.org.\n\n"
    "- one\n- two\n\n1. first\n\n> quoted\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nplain\n```\n"
)


def warm_up_markdown() -> None:
    from markdown_it import MarkdownIt
    from rich.console import Console
    from rich.markdown import Markdown

    MarkdownIt("gfm-like").parse(SAMPLE)
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="truecolor")
    console.render_lines(Markdown(SAMPLE), console.options, pad=False)


def start() -> threading.Thread:
    """Run :func:`warm_up_markdown` in a daemon thread (errors only cost the warm-up)."""

    def run() -> None:
        with contextlib.suppress(Exception):  # a warm-up must never take the app down
            warm_up_markdown()

    thread = threading.Thread(target=run, name="etcode-warm-up", daemon=True)
    thread.start()
    return thread
