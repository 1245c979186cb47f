"""``ToolMessage``: one tool call, keyed by call id and updated in place.

    ● ReadManyFiles (3 files)
      └ executing...

becomes ``└ Read 3 files (12.5 KB)`` or ``└ ⚠ <error>``. The strings are the ``summary``
fields of the events (the summary generators), never computed here. An Edit/WriteFile
shows its numbered hunk with context at once (``PREVIEW_LINES`` rows, ``diff_view``);
Enter or a click expands the call to its full output: every hunk of an Edit/WriteFile,
the output of Bash.
What it shows is redacted (API keys and key shapes), as ``etcode run`` prints it.
"""

from __future__ import annotations

import time

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Static

from etcode.security.redact import redact
from etcode.ui.live_tail import LiveTail, elapsed_text
from etcode.ui.tui.diff_view import numbered_diff
from etcode.ui.tui.theme import code_theme
from etcode.util.json_types import JsonObject

MAX_DETAIL_LINES = 400
#: Rows of an edit's numbered diff shown under the finished call before it is expanded.
PREVIEW_LINES = 10
EXPAND_HINT = "click or shift+tab, enter to expand"
LIVE_LINES = 5  # lines of a running command's output shown under its head
#: A focused block's head: its mark (in place of the dot, in the state's colour) and what
#: the keys do, plain text (a shade alone is hard to see, and nothing without colour).
FOCUS_MARK = "▶"
FOCUS_HINT = "  ‹ enter {what} · ctrl+o all"


class ToolMessage(Widget, can_focus=True):
    """One tool call. ``call_id`` is its key in the conversation."""

    #: Enter only: a printable key typed on a block is typing, for the input (issue 30).
    BINDINGS = [Binding("enter", "toggle_detail", "Expand", show=False)]
    DEFAULT_CSS = """
    ToolMessage { height: auto; }
    ToolMessage .tool-live { padding-left: 4; height: auto; color: $text-muted; }
    """

    def __init__(self, call_id: str, name: str, summary: str, params: JsonObject | None = None) -> None:
        super().__init__(classes="tool-message running")
        self.call_id = call_id
        self.tool_name = name
        self.summary = summary
        self.params = params or {}
        self.result_summary: str | None = None
        self.output = ""
        self.data: JsonObject | None = None
        self.is_error = False
        self.expanded = False
        #: The ``└`` line as plain text (what a test or a screen reader sees).
        self.line_text = "  └ executing..."
        self._head = Static(self._head_text(), classes="tool-head", markup=False)
        self._line = Static(Text("└ executing...", style="dim"), classes="tool-line", markup=False)
        self._detail: Static | None = None
        self._preview = Static("", classes="tool-preview", markup=False)
        self._preview.display = False
        self.started = time.monotonic()
        #: While running: the last lines the command printed (``tool_progress`` events).
        self._tail: LiveTail | None = None
        self._live = Static("", classes="tool-live", markup=False)
        self._live.display = False
        self._progress = ""  # a sub-agent's current tool (set_progress)
        self._shown_seconds = -1
        #: ``waiting``: its permission question is open; ``denied``: refused (it never runs).
        self.approval = ""

    def compose(self) -> ComposeResult:
        yield self._head
        yield self._live
        yield self._line
        yield self._preview

    @property
    def running(self) -> bool:
        return self.result_summary is None

    @property
    def live_text(self) -> str:
        """The live output lines shown while running (plain text), ``""`` when none."""
        return "\n".join(self._tail.tail()) if self._tail is not None and self._live.display else ""

    def add_output(self, text: str) -> None:
        """Output the running command printed (a ``tool_progress`` event's ``text``): its
        last lines show under the head until the result replaces them."""
        if not self.running:
            return
        if self._tail is None:
            self._tail = LiveTail(LIVE_LINES)
        self._tail.feed(text)
        lines = self._tail.tail()
        if lines:
            shown = Text(no_wrap=True, overflow="ellipsis", style="dim")
            shown.append(redact("\n".join(lines)))
            self._live.update(shown)
            self._live.display = True
        self.tick(force=True)

    def await_approval(self) -> None:
        """Its permission question is open: ``└ waiting for approval``, no clock."""
        if not self.running:
            return
        self.approval = "waiting"
        self._set_line(Text("└ waiting for approval", style="yellow"))

    def approval_answered(self, allowed: bool) -> None:
        """Allowed: the call starts now (its clock with it); denied: it never ran."""
        if not self.running or self.approval != "waiting":
            return
        self.approval = "" if allowed else "denied"
        self.started = time.monotonic()
        self._shown_seconds = -1
        self._set_line(Text("└ executing..." if allowed else "└ denied", style="dim"))

    def _set_line(self, line: Text) -> None:
        self._line.update(line)
        self.line_text = f"  {line.plain}"

    def tick(self, force: bool = False) -> None:
        """Show the elapsed time (``└ running 12s``) once it is a second or more, or
        output came; repaints only when the shown second changes. None while it waits
        for approval or was denied."""
        if not self.running or self.approval:
            return
        seconds = int(time.monotonic() - self.started)
        if seconds == self._shown_seconds and not force:
            return
        if seconds < 1 and self._tail is None:
            return
        self._shown_seconds = seconds
        line = f"└ running {elapsed_text(seconds)}"
        if self._progress:
            line += f" · {self._progress}"
        self._line.update(Text(line, style="dim"))
        self.line_text = f"  {line}"

    @property
    def title(self) -> str:
        return redact(f"{self.tool_name} ({self.summary})") if self.summary else self.tool_name

    def _head_text(self) -> Text:
        state = "error" if self.is_error else "done" if self.result_summary is not None else "running"
        text = Text()
        mark = FOCUS_MARK if self.has_focus else "●"
        text.append(f"{mark} ", style={"running": "yellow", "done": "green", "error": "red"}[state])
        text.append(self.title, style="bold")
        if self.has_focus:
            text.append(FOCUS_HINT.format(what="collapses" if self.expanded else "expands"), style="dim")
        return text

    def _watch_has_focus(self, _focused: bool) -> None:
        self._head.update(self._head_text())

    def set_expanded(self, expanded: bool) -> None:
        """Show or hide the full output (Ctrl+O does it for every block)."""
        if expanded != self.expanded:
            self.action_toggle_detail()

    def set_progress(self, text: str) -> None:
        """While running: what the call is doing now (e.g. a sub-agent's current tool)."""
        if self.result_summary is None:
            self._progress = text
            self._line.update(Text(f"└ executing... {text}", style="dim"))
            self._shown_seconds = -1  # the next tick writes the elapsed time back

    def set_result(
        self, summary: str, output: str, *, is_error: bool, data: JsonObject | None = None
    ) -> None:
        """The call finished: show its result summary (or ``⚠ error``)."""
        self.result_summary = summary
        self.output = output
        self.data = data
        self.is_error = is_error
        self.remove_class("running")
        self._live.display = False  # the summary replaces the live output
        self.add_class("error" if is_error else "done")
        self._head.update(self._head_text())
        line = Text("└ ")
        summary = redact(summary)
        if is_error:
            line.append(f"⚠ {summary}", style="red")
        elif summary.endswith("⚠"):  # done, with some failures (``2 errors ⚠``)
            line.append(summary, style="yellow")
        else:
            line.append(summary)
        self._line.update(line)
        self.line_text = f"  {line.plain}"
        if self._detail is not None:
            self._detail.update(self.detail_renderable())
        self._show_preview()

    @property
    def diff(self) -> str:
        """The diff of a successful edit (``""`` for other calls)."""
        diff = (self.data or {}).get("diff")
        return diff if isinstance(diff, str) and not self.is_error else ""

    def _show_preview(self) -> None:
        preview = numbered_diff(redact(self.diff), PREVIEW_LINES, EXPAND_HINT) if self.diff.strip() else None
        if preview is not None:
            self._preview.update(preview)
        self._preview.display = preview is not None and not self.expanded

    def detail_renderable(self) -> RenderableType:
        """The full output: a diff for edits, the output otherwise (capped)."""
        diff = (self.data or {}).get("diff")
        if isinstance(diff, str) and diff.strip():
            numbered = numbered_diff(redact(diff), MAX_DETAIL_LINES)
            if numbered is not None:
                return numbered
            return Syntax(  # no hunk to number (a change too large to show line by line)
                _cap(redact(diff)), "diff", theme=code_theme(), word_wrap=True, background_color="default"
            )
        if self.result_summary is None:
            command = self.params.get("command")
            return Text(redact(f"$ {command}") if command else "running…", style="dim")
        text = self.output or "(no output)"
        if self.tool_name == "Bash" and self.params.get("command"):
            text = f"$ {self.params['command']}\n{text}"
        return Text(_cap(redact(text)))

    def action_toggle_detail(self) -> None:
        self.expanded = not self.expanded
        self._show_preview()
        self._head.update(self._head_text())  # the focus hint says what Enter does next
        if self.expanded:
            if self._detail is None:
                self._detail = Static(self.detail_renderable(), classes="tool-detail", markup=False)
                self.mount(self._detail)
            else:
                self._detail.update(self.detail_renderable())
                self._detail.display = True
        elif self._detail is not None:
            self._detail.display = False

    def on_click(self) -> None:
        self.action_toggle_detail()


def _cap(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_DETAIL_LINES:
        return text.rstrip("\n")
    rest = len(lines) - MAX_DETAIL_LINES
    return "\n".join(lines[:MAX_DETAIL_LINES]) + f"\n… {rest} more lines"
