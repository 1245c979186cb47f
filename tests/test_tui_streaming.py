"""The streaming Markdown widget never loses or reorders text, whatever the timing of
its feeds (a timer's feed and a write's feed may overlap while a spill awaits a mount)."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App, ComposeResult

from etcode.ui.tui.widgets.messages import AssistantMessage


class _Host(App[None]):
    def __init__(self, message: AssistantMessage) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        yield self.message


async def test_overlapping_feeds_keep_every_fragment() -> None:
    spilled: list[str] = []

    async def slow_spill(head: str, live: AssistantMessage) -> None:
        await asyncio.sleep(0.03)  # a mount that takes a while: feeds pile up behind it
        spilled.append(head)

    message = AssistantMessage(spill=slow_spill, max_blocks=3, keep_blocks=1)
    message.FEED_INTERVAL = 0.005
    text = "".join(f"- item {i} with some words\n\n" if i % 3 else f"## part {i}\n\n" for i in range(400))
    async with _Host(message).run_test() as pilot:
        for start in range(0, len(text), 7):
            await message.write(text[start : start + 7])
            if start % 5 == 0:
                await asyncio.sleep(0.002)  # let timer feeds run between writes
        await message.finish()
        await pilot.pause(0.05)
        assert spilled, "the test must exercise spilling"
        assert "".join(spilled) + message.text == text


def test_language_of_knows_only_shipped_lexers() -> None:
    from etcode.ui.tui.highlight import language_of

    assert language_of("python") == "python"
    assert language_of("Py title='x.py'") == "python"
    assert language_of("sh") == "bash"
    assert language_of("") is None
    assert language_of(None) is None
    assert language_of("pyt") is None  # half-streamed
    assert language_of("ipython3") is None  # a plugin's lexer: never looked up


async def test_code_without_a_language_is_not_guessed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Pygments' guessing imports every lexer (plugins too): seconds of frozen UI."""
    import pygments.lexers

    from etcode.ui.tui.widgets.messages import CodeFence

    def no_guessing(*args: object, **kwargs: object) -> None:
        raise AssertionError("guess_lexer called")

    monkeypatch.setattr(pygments.lexers, "guess_lexer", no_guessing)
    message = AssistantMessage()
    async with _Host(message).run_test() as pilot:
        for piece in ["```\n", "$ ls -la\n", "total 0\n", "```\n\n", "```pyt", "hon\nx = 1\n```\n"]:
            await message.write(piece)
            await pilot.pause(0.1)
        await message.finish()
        await pilot.pause(0.05)
        fences = list(message.query(CodeFence))
        assert [fence.code.strip() for fence in fences] == ["$ ls -la\ntotal 0", "x = 1"]


async def test_fences_are_highlighted_once_their_lexer_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from etcode.ui.tui import highlight
    from etcode.ui.tui.highlight import LexerLoader
    from etcode.ui.tui.widgets import messages
    from etcode.ui.tui.widgets.messages import CodeFence

    # The lexer loads only when the test says so: "plain while it loads" is then certain,
    # however fast the machine (it used to finish before the first look, now and then).
    release = threading.Event()
    load = highlight._load

    def gated_load(language: str) -> None:
        release.wait(30)
        load(language)

    monkeypatch.setattr(highlight, "_load", gated_load)
    loader = LexerLoader()
    ready = asyncio.Event()
    loop = asyncio.get_running_loop()
    loader.add_listener(lambda language: loop.call_soon_threadsafe(ready.set))
    original = messages.LEXERS
    messages.LEXERS = loader
    try:
        message = AssistantMessage(markdown="```ruby\nputs 1\n```\n")
        async with _Host(message).run_test() as pilot:
            await pilot.pause(0.05)
            fence = message.query_one(CodeFence)
            assert fence._highlighted_code.spans == []  # plain while the lexer loads
            release.set()
            await asyncio.wait_for(ready.wait(), 20)
            fence.rehighlight()
            assert fence._highlighted_code.spans  # coloured now
    finally:
        messages.LEXERS = original


async def test_collector_policy_freezes_and_sweeps() -> None:
    """Turn starts fold the heap into the frozen set; a grown frozen set is swept; an
    automatic full collection's survivors are frozen; stopping hands everything back."""
    import gc

    from etcode.ui.tui.collector import CollectorPolicy

    policy = CollectorPolicy()
    policy.start()
    try:
        policy.turn_started()
        frozen = gc.get_freeze_count()
        assert frozen > 1000 and policy.sweeps == 0
        garbage = [[] for _ in range(int(frozen * 0.7))]
        for item in garbage:
            item.append(item)  # cycles: only a full sweep frees them once frozen
        gc.collect()  # an automatic-like full collection: its survivors are frozen next
        await asyncio.sleep(0.01)
        assert gc.get_freeze_count() > frozen * 1.5
        del garbage, item
        policy.turn_started()
        assert policy.sweeps == 1
        assert gc.get_freeze_count() < frozen * 1.3  # the cycles were reclaimed
    finally:
        policy.stop()
    assert gc.get_freeze_count() == 0


async def test_frozen_markdown_renders_once_per_width_and_off_the_ui_thread() -> None:
    import threading

    from rich.console import Console

    from etcode.ui.tui.widgets.messages import RenderedMarkdown

    rendered = RenderedMarkdown("# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n```\n")
    console = Console(width=60, force_terminal=True)
    calls: list[int] = []
    original = console.render

    def counting(renderable, options=None):  # type: ignore[no-untyped-def]
        if renderable is rendered.markdown:  # Rich renders nested parts through it too
            calls.append(threading.get_ident())
        return original(renderable, options)

    console.render = counting  # type: ignore[method-assign]
    options = console.options.update_width(60)
    await rendered.prerender(console, options)
    assert calls and calls[0] != threading.get_ident()  # rendered in a worker thread
    first = rendered.lines(console, options)
    again = list(rendered.__rich_console__(console, options))
    assert len(calls) == 1  # replayed, not rendered again
    assert len(first) > 5 and sum(1 for s in again if s.text == "\n") == len(first)
    rendered.lines(console, console.options.update_width(40))
    assert len(calls) == 2  # another width: another render


def test_markdown_warm_up_runs_in_a_daemon_thread() -> None:
    from etcode.ui.tui import warmup

    thread = warmup.start()
    assert thread.daemon and thread.name == "etcode-warm-up"
    thread.join(30)
    assert not thread.is_alive()
    warmup.warm_up_markdown()  # and raises nothing when run directly
