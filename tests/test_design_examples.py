"""Issue 33: programs written like the agent-loop design's ``examples/conversation.py`` and
``examples/rich_renderer.py`` run with only the import line changed (our own code, in the
same shapes). The first is a real program run as a subprocess; the second renders a real
run's events with rich. Real HTTP against the fake LLM server."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from etcode import Agent, Event, EventType, LoopLimits, RetryConfig, tool
from tests.fake_llm import Call, FakeLLM, Fault, Recorded, Reply, without_environment

ROOT = Path(__file__).resolve().parent.parent

CONVERSATION_PROGRAM = textwrap.dedent(
    """
    import asyncio
    import os

    from etcode import Agent, Renderer


    async def main():
        agent = Agent(
            name="Chat Helper",
            model=os.getenv("MODEL", "deepseek-chat"),
            api_key=os.environ["API_KEY"],
            base_url=os.getenv("BASE_URL", "https://api.deepseek.com/v1"),
            system_prompt="You are a friendly conversation partner.",
        )
        renderer = Renderer()

        conv = agent.conversation()
        print("== round 1")
        async for event in conv.send_stream("What kind of language is Python?"):
            output = renderer.render(event)
            if output:
                print(output)
        print(f"history length: {len(conv.messages)}")

        print("== round 2")
        async for event in conv.send_stream("What is it mostly used for?"):
            output = renderer.render(event)
            if output:
                print(output)
        print(f"history length: {len(conv.messages)}")

        print("== a new conversation")
        conv2 = agent.conversation()
        async for event in conv2.send_stream("What is 1 + 1?"):
            output = renderer.render(event)
            if output:
                print(output)
        print(f"history length: {len(conv2.messages)}")


    if __name__ == "__main__":
        asyncio.run(main())
    """
)


def user_texts(request: Recorded) -> list[str]:
    return [without_environment(m["content"]) for m in request.body["messages"] if m["role"] == "user"]


def test_the_conversation_example_runs(llm: FakeLLM, project: Path) -> None:
    llm.script(
        Reply(text="Python is a high-level, interpreted language."),
        Reply(text="Web back ends, data science and scripting."),
        Reply(text="2"),
    )
    program = project / "conversation_example.py"
    program.write_text(CONVERSATION_PROGRAM, encoding="utf-8")
    env = {**os.environ, "API_KEY": "sk-test", "BASE_URL": llm.openai_base_url, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(program)], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no warning, no traceback, nothing left unclosed that complains
    rounds = proc.stdout.split("== ")
    assert "Python is a high-level, interpreted language." in rounds[1]
    assert "history length: 2" in rounds[1]
    assert "Web back ends, data science and scripting." in rounds[2]
    assert "history length: 4" in rounds[2]
    assert "end (end_turn, 1 step)" in rounds[3] and "history length: 2" in rounds[3]
    assert user_texts(llm.requests[1]) == ["What kind of language is Python?", "What is it mostly used for?"]
    assert llm.requests[1].body["messages"][2] == {
        "role": "assistant",
        "content": "Python is a high-level, interpreted language.",
    }
    assert user_texts(llm.requests[2]) == ["What is 1 + 1?"]  # the new conversation starts afresh
    system = llm.requests[0].body["messages"][0]["content"]
    assert "You are Chat Helper" in system and "You are a friendly conversation partner." in system
    assert llm.requests[0].body["model"] == "deepseek-chat"


class RichRenderer:
    """A renderer in the design's ``rich_renderer.py`` shape: one ``match`` arm per event
    type, panels, a todo table, folded long results."""

    COLORS = {"thought": "cyan", "action": "yellow", "observation": "green", "loop": "blue"}

    def __init__(self, console: Console, max_result_chars: int = 60) -> None:
        self.console = console
        self.max_result_chars = max_result_chars
        self.unknown: list[Event] = []
        self._last_todos: list[dict[str, Any]] | None = None

    def render(self, event: Event) -> None:
        match event.type:
            case EventType.LOOP_START:
                self.console.print(Panel(Text(event.data.get("task", "")), title="task"))
            case EventType.THOUGHT:
                self.console.print(Text("thought: " + event.data.get("content", ""), style="cyan"))
            case EventType.ACTION:
                if event.data.get("tool") != "todo_write":  # the table shows it (the design's own test)
                    args = ", ".join(f"{k}={v!r}" for k, v in event.data.get("args", {}).items())
                    self.console.print(Text(f"call {event.data['tool']} ({args})", style="yellow"))
            case EventType.OBSERVATION:
                if event.data.get("tool") != "todo_write":
                    result = str(event.data.get("result", ""))
                    if len(result) > self.max_result_chars:
                        result = (
                            f"{result[: self.max_result_chars]}... (+{len(result) - self.max_result_chars})"
                        )
                    duration = event.data.get("duration", 0)
                    self.console.print(f"  └─ {event.data['tool']} ({duration:.1f}s): {result}")
            case EventType.SOFT_LIMIT:
                self.console.print(Text(f"soft limit: {event.data.get('reason', '')}", style="orange1"))
            case EventType.ERROR:
                title = "fatal error" if event.data.get("fatal") else "error"
                self.console.print(Panel(Text(event.data.get("error", "")), title=title))
            case EventType.LOOP_END:
                self.console.print(f"done ({event.data.get('stop_reason', '')})")
                content = event.data.get("content", "")
                if len(content) > 50:
                    self.console.print(Panel(Markdown(content), title="answer"))
            case EventType.TODO_UPDATE:
                self._todo_table(event.data.get("todos", []))
            case EventType.REASONING:
                self.console.print(Panel(Text(event.data.get("content", "")), title="reasoning"))
            case _:
                self.unknown.append(event)

    def _todo_table(self, todos: list[dict[str, Any]]) -> None:
        if todos == self._last_todos or not todos:
            return
        self._last_todos = [dict(t) for t in todos]
        table = Table(title="tasks")
        table.add_column("#")
        table.add_column("status")
        table.add_column("task")
        icons = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
        for i, todo in enumerate(todos, 1):
            mark = Text(icons.get(todo.get("status", "pending"), "?"))  # not rich markup
            table.add_row(str(i), mark, Text(todo.get("content", "")))
        self.console.print(table)
        done = sum(1 for t in todos if t.get("status") == "completed")
        self.console.print(f"progress: {done}/{len(todos)} done")


@tool
def search(query: str) -> str:
    """Search the web.

    Args:
        query: what to look for
    """
    return f"results for {query}: " + "Python 3.13 adds a new interactive interpreter. " * 3


def test_a_rich_renderer_draws_a_real_todo_run(llm: FakeLLM, project: Path) -> None:
    planned = [
        {"content": "Search for the release", "status": "in_progress"},
        {"content": "Summarise it", "status": "pending"},
    ]
    finished = [
        {"content": "Search for the release", "status": "completed"},
        {"content": "Summarise it", "status": "completed"},
    ]
    answer = "Python 3.13 brings a **new interactive interpreter** and an experimental free-threaded build."
    llm.script(
        Fault(status=503, headers={"retry-after": "0"}, body="busy"),  # a retry: an ERROR event
        Reply(
            text="I will plan first.",
            reasoning="The user wants the newest release; search, then summarise.",
            calls=[Call("TodoWrite", {"todos": planned})],
        ),
        Reply(calls=[Call("search", {"query": "Python 3.13"})]),
        Reply(calls=[Call("TodoWrite", {"todos": finished})]),
        Reply(text=answer),
    )
    agent = Agent(
        model="deepseek-chat",
        api_key="sk-test",
        base_url=llm.openai_base_url,
        tools=[search],
        retry=RetryConfig(max_retries=1, initial_delay=0.01),
        limits=LoopLimits(max_steps=3, step_limit_mode="soft", soft_limit_interval=10),
        directory=project,
        store=False,
    )
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, record=True, color_system=None)
    renderer = RichRenderer(console)
    events = list(agent.run_stream("What is new in Python 3.13?"))
    for event in events:
        renderer.render(event)
    out = console.export_text()

    assert renderer.unknown == []
    kinds = {event.type for event in events}
    assert {
        EventType.LOOP_START,
        EventType.THOUGHT,
        EventType.ACTION,
        EventType.OBSERVATION,
        EventType.TODO_UPDATE,
        EventType.ERROR,
        EventType.LOOP_END,
        EventType.REASONING,  # the model's thinking of step 1
        EventType.SOFT_LIMIT,  # after step 3: the model is told to wrap up, the run goes on
    } == kinds
    assert "What is new in Python 3.13?" in out
    assert "thought: I will plan first." in out
    assert "call search (query='Python 3.13')" in out
    assert "└─ search (" in out and "... (+" in out  # the long result folded
    assert "retrying in" in out and "busy" in out  # the 503, as a non-fatal error panel
    assert re.search(r"│ 1 │ \[~\] +│ Search for the release", out) and "progress: 0/2 done" in out
    assert re.search(r"│ 2 │ \[x\] +│ Summarise it", out) and "progress: 2/2 done" in out
    assert "done (end_turn)" in out
    assert "new interactive interpreter" in out  # the answer's Markdown panel
    assert "search, then summarise." in out and "soft limit: step_limit" in out
    assert "call TodoWrite" not in out and "call todo_write" not in out


def test_the_rich_renderer_over_a_conversation(llm: FakeLLM, project: Path) -> None:
    """The design's examples combine the two: a conversation's stream through the renderer."""
    llm.script(Reply(text="First answer."), Reply(text="Second answer."))
    agent = Agent("openai/m", "k", llm.openai_base_url, directory=project, store=False)
    console = Console(file=io.StringIO(), width=100, record=True, color_system=None)
    renderer = RichRenderer(console)
    conv = agent.conversation()
    for task in ("one", "two"):
        for event in conv.send_stream_sync(task):
            renderer.render(event)
    out = console.export_text()
    assert out.count("done (end_turn)") == 2 and renderer.unknown == []
    assert "thought: First answer." in out and "thought: Second answer." in out
    assert user_texts(llm.requests[1]) == ["one", "two"]
