"""A compacted session resumed with ``-c`` shows its real context size in the status bar
(the summary and the kept messages, as the next request sends them), not ``0 tokens``."""

from __future__ import annotations

import re
from pathlib import Path

from tests.fake_llm import FakeLLM, Reply
from tests.test_tui_replay import notices, resumed
from tests.tui_support import ProjectSpec, make_app, ready, run_turn, submit, wait_for

PROJECT = ProjectSpec()


async def test_resumed_compacted_session_shows_its_context_size(project: Path, llm: FakeLLM) -> None:
    llm.script(
        # long enough that a summary is shorter (one that would grow the request is not kept)
        Reply(text=" ".join(f"point {i} of the first answer" for i in range(80))),
        Reply(text=" ".join(f"point {i} of the second answer" for i in range(80))),
        Reply(text="three " * 50),
        Reply(text="## Goal\nCount.\n## Next steps\nNone."),  # the summary
    )
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, app)
        for text in ("first", "second", "third"):
            await run_turn(pilot, app, text)
        await submit(pilot, app, "/compact")
        await wait_for(pilot, lambda: any("context compacted" in n for n in notices(app)), what="compaction")
        await wait_for(pilot, lambda: not app.busy, what="the compaction's end")
        live = app.status_bar.info.context_tokens
        await app.action_quit()
    assert live

    async def check(pilot, app) -> None:
        await wait_for(pilot, lambda: app.status_bar.info.context_tokens, what="the context size")
        shown = app.status_bar.info.context_tokens
        assert abs(shown - live) <= live * 0.05, (shown, live)  # what the live run said after compacting
        bar = app.status_bar.info.left().plain
        assert re.search(r" · [1-9][\d.]*k? tokens", bar), bar

    await resumed(project, check)
