"""A Markdown table holding an emoji with a variation selector (``🖥️``), as a real terminal
(tmux) draws it: every line of the table is as wide as its border."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from tests.fake_llm import FakeLLM, Reply
from tests.require import needs
from tests.test_tui_cli import Tmux, tmux_env
from tests.test_tui_markdown import TABLE, table_lines, terminal_width
from tests.tui_support import ProjectSpec

PROJECT = ProjectSpec()


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_table_borders_line_up_in_tmux(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text=TABLE))
    tmux = Tmux("table")
    etcode = f"env {tmux_env()} TERM=xterm-256color {shlex.quote(sys.executable)} -m etcode"
    try:
        tmux.start(etcode, project)
        tmux.wait_for("Ask anything")
        tmux.run("send-keys", "-t", "table", "-l", "machines?")
        tmux.run("send-keys", "-t", "table", "Enter")
        screen = tmux.wait_for("End of table.")
        tmux.wait_for("ctrl+c twice to quit")  # the turn is over
        screen = tmux.screen()
    finally:
        tmux.kill()
    table = table_lines(screen.splitlines())
    assert any("desktop" in line for line in table), screen
    widths = {terminal_width(line) for line in table}
    assert len(widths) == 1, "\n".join(f"{terminal_width(line):3} {line}" for line in table)
    rows = [line for line in table if line.startswith("│")]
    assert len(rows) == 5 and all(line.endswith(" │") for line in rows), "\n".join(rows)  # no stray "─│"
