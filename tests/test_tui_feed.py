"""The TUI's event feed: every event the core sends lands on the widget it belongs to (the
notices' words, the status bar, the todo panel, a tool block's output, the working line's
token count), on real widgets in a running Textual app."""

from __future__ import annotations

from textual.app import App, ComposeResult

from etcode.contract import events as ev
from etcode.ui.tui.feed import EventFeed
from etcode.ui.tui.widgets.conversation import Conversation
from etcode.ui.tui.widgets.messages import AssistantMessage, Notice, ReasoningMessage
from etcode.ui.tui.widgets.status import StatusBar
from etcode.ui.tui.widgets.todo import TodoPanel
from etcode.ui.tui.widgets.tool import ToolMessage
from etcode.ui.tui.widgets.working import WorkingLine


class FeedApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Conversation(id="conversation")
        yield WorkingLine(id="working")
        yield TodoPanel(id="todos")
        yield StatusBar(id="status")

    def feed(self, *, working: bool) -> EventFeed:
        feed = EventFeed(self.query_one(Conversation), self.query_one(StatusBar), self.query_one(TodoPanel))
        if working:
            feed.working = self.query_one(WorkingLine)
            feed.working.start()
        return feed


def notices(conversation: Conversation) -> list[str]:
    return [str(widget.render()) for widget in conversation.entries if isinstance(widget, Notice)]


async def test_each_notice_event_shows_its_words() -> None:
    app = FeedApp()
    async with app.run_test():
        feed = app.feed(working=False)
        for event in [
            ev.RetryEvent(attempt=2, delay=1.5, reason="HTTP 503"),
            ev.WarningEvent(message="slow disk"),
            ev.ErrorEvent(message="boom"),
            ev.StoppedEvent(reason="interrupted", message="stopped by you"),
            ev.SoftLimitEvent(reason="step_limit", prompt="wrap up", steps=30),
            ev.CompactionEvent(reason="auto", phase="done", tokens_before=12000, tokens_after=3000),
            ev.CompactionEvent(reason="manual", phase="done", message="nothing to compact"),
            ev.CompactionEvent(reason="auto", phase="started"),
            ev.CompactionEvent(reason="auto", phase="failed", message="model down"),
            ev.WorkflowPhase(phase="planning", cycle=1),
            ev.WorkflowPhase(phase="executing", cycle=1, message="write it", todo_id="t1"),
            ev.WorkflowPhase(phase="verified", cycle=1, message="looks done"),
            ev.VerificationResult(
                cycle=1, all_completed=True, user_needs_satisfied=True, overall_feedback="ok"
            ),
            ev.VerificationResult(
                cycle=1, all_completed=True, user_needs_satisfied=False, overall_feedback="no"
            ),
            ev.StepStart(step=1),  # not shown
        ]:
            await feed.handle(event)
        assert notices(feed.conversation) == [
            "⟳ retrying in 1.5s (attempt 2): HTTP 503",
            "warning: slow disk",
            "error: boom",
            "stopped by you",
            "warning: soft step limit: 30 steps taken; the model was asked to wrap up",
            "⟳ context compacted (auto): ~12,000 → ~3,000 tokens",
            "nothing to compact",
            "warning: context compaction failed: model down",
            "◆ Planning",
            "◆ Executing [t1]: write it",
            "◆ Verdict: looks done",
            "✔ verified: ok",
            "✘ not yet: no",
        ]
        await feed.handle(ev.DoneEvent(result={"text": "answer"}))
        assert feed.last_result == {"text": "answer"}


async def test_streamed_events_reach_the_answer_the_tools_and_the_working_line() -> None:
    app = FeedApp()
    async with app.run_test():
        feed = app.feed(working=True)
        assert feed.working is not None
        await feed.handle(ev.ReasoningDeltaEvent(text="thinking " * 4))
        await feed.handle(ev.TextDeltaEvent(text="hello " * 4))
        await feed.handle(ev.ToolCallStart(call_id="c1", name="Bash", params={"command": "ls"}, summary="ls"))
        assert feed.working.chars == len("thinking " * 4) + len("hello " * 4) + len(str({"command": "ls"}))
        await feed.handle(ev.ToolProgress(call_id="c1", name="Bash", text="a.py\n", elapsed=0.1))
        await feed.handle(
            ev.ToolProgress(call_id="gone", name="Bash", text="x\n", elapsed=0.1)
        )  # no such call
        tool = feed.conversation.tools["c1"]
        assert tool.live_text == "a.py"
        await feed.handle(
            ev.SubagentEvent(call_id="c1", agent="general", session_id="s", event={"type": "text_delta"})
        )
        await feed.handle(
            ev.SubagentEvent(
                call_id="c1", agent="general", session_id="s",
                event={"type": "tool_call_start", "name": "Read", "summary": "a.py"},
            )
        )  # fmt: skip
        assert "Read (a.py)" in str(tool._line.render())
        await feed.handle(
            ev.SubagentEvent(
                call_id="c1", agent="general", session_id="s", event={"type": "tool_call_start", "name": "Ls"}
            )
        )
        assert str(tool._line.render()).endswith("Ls")
        await feed.handle(
            ev.ToolResultEvent(call_id="c1", name="Bash", summary="1 line", output="a.py", is_error=False)
        )
        assert tool.result_summary == "1 line"
        await feed.handle(
            ev.StepFinish(step=1, usage={"input_tokens": 100, "output_tokens": 7}, stop_reason="end")
        )
        assert (feed.working.tokens_done, feed.working.chars) == (7, 0)
        kinds = [type(widget) for widget in feed.conversation.entries]
        assert kinds == [ReasoningMessage, AssistantMessage, ToolMessage]


async def test_the_status_bar_and_todos_follow_their_events() -> None:
    app = FeedApp()
    async with app.run_test():
        feed = app.feed(working=False)
        status = feed.status.info
        await feed.handle(ev.SessionStart(session_id="s", model="m/x", agent="build", directory="."))
        assert (status.model, status.agent) == ("m/x", "build")
        usage = {"input_tokens": 100, "cache_read_tokens": 20, "output_tokens": 5}
        await feed.handle(ev.StepFinish(step=1, usage=usage, stop_reason="end"))
        assert status.context_tokens == 125  # no working line: only the context
        await feed.handle(
            ev.UsageUpdate(
                context_tokens=300,
                context_window=None,
                context_percent=None,
                input_tokens=1,
                output_tokens=1,
                cost=0.5,
            )
        )
        assert (status.context_tokens, status.context_limit, status.cost) == (300, None, 0.5)
        await feed.handle(
            ev.UsageUpdate(
                context_tokens=400,
                context_window=8000,
                context_percent=5.0,
                input_tokens=1,
                output_tokens=1,
                cost=None,
            )
        )
        assert (status.context_tokens, status.context_limit) == (400, 8000)
        await feed.handle(ev.StepFinish(step=2, usage={"input_tokens": 999}, stop_reason="end"))
        assert status.context_tokens == 400  # usage events say better
        await feed.handle(ev.TodoUpdate(todos=[{"id": "1", "content": "write", "status": "pending"}]))
        assert feed.todos.todos == [{"id": "1", "content": "write", "status": "pending"}]
