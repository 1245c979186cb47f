"""etcode's events as ACP ``session/update`` payloads: message and thought chunks, tool calls
(kind, title, locations, diffs, command output), the todo list as a plan.

Pure functions of an event (no connection here): ``server.py`` sends what they return, and
``replay.py`` uses the same shapes for a stored session.
"""

from __future__ import annotations

import re
from pathlib import Path

from acp import helpers
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntryStatus,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UserMessageChunk,
)

from etcode.contract import events as ev
from etcode.util.json_types import JsonObject, JsonValue

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

#: ACP tool kinds of the built-in tools (editors pick icons and grouping from them).
TOOL_KINDS: dict[str, ToolKind] = {
    "ReadFile": "read",
    "ReadManyFiles": "read",
    "ListFiles": "read",
    "Edit": "edit",
    "WriteFile": "edit",
    "Grep": "search",
    "Glob": "search",
    "Bash": "execute",
    "WebFetch": "fetch",
    "TodoWrite": "think",
    "Skill": "read",  # it reads a skill's SKILL.md and lists its folder
}
#: The tool whose calls the editor sees as the plan (``plan`` updates), not as tool cards.
PLAN_TOOL = "TodoWrite"
#: Tool output shown in the editor is cut here (the model saw all of it).
MAX_SHOWN_OUTPUT = 20_000
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_PLAN_STATUS: dict[str, PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}


def tool_kind(name: str) -> ToolKind:
    """The ACP ``ToolKind`` of a tool (``other`` for Task, MCP and custom tools)."""
    return TOOL_KINDS.get(name, "other")


def tool_title(name: str, summary: str) -> str:
    """``Name (summary)``, as every front end of etcode shows a call."""
    return f"{name} ({summary})" if summary else name


def tool_locations(params: JsonObject, directory: Path) -> list[ToolCallLocation]:
    """The files a call touches, absolute, so the editor can follow the agent."""
    found: list[ToolCallLocation] = []

    def add(value: JsonValue, line: JsonValue = None) -> None:
        if isinstance(value, str) and value and "*" not in value:
            path = Path(value) if Path(value).is_absolute() else directory / value
            found.append(ToolCallLocation(path=str(path), line=line if isinstance(line, int) else None))

    add(params.get("file_path"), params.get("offset"))
    add(params.get("path"))
    for item in params.get("paths") or []:
        add(item)
    return found


def change_locations(data: JsonObject, directory: Path) -> list[ToolCallLocation]:
    """The file an Edit/WriteFile changes, at its first changed line (``data``: the result's
    or the permission question's, with ``path`` and ``diff``)."""
    path, diff = data.get("path"), data.get("diff")
    if not isinstance(path, str) or not path:
        return []
    line = data.get("line")
    if not isinstance(line, int) and isinstance(diff, str):
        from etcode.tools.diff import first_changed_line  # a stored result from before "line"

        line = first_changed_line(diff)
    return tool_locations({"file_path": path, "offset": line}, directory)


def diff_texts(diff: str) -> tuple[str, str] | None:
    """The old and new text of a unified diff's hunks (context lines in both; hunks apart
    joined by a ``⋯`` line), each line with its newline unless the diff says it has none.
    None when the diff has no hunk (e.g. too large to show)."""
    old: list[str] = []
    new: list[str] = []
    hunks = 0
    last_tag = ""
    for line in diff.splitlines():
        if _HUNK.match(line):
            if hunks:
                old.append("⋯\n")
                new.append("⋯\n")
            hunks += 1
            if line.rstrip().endswith("too large to show line by line"):
                return None
            continue
        if not hunks:
            continue
        if line.startswith("\\"):  # "\ No newline at end of file": of the line before
            for side, tags in ((old, " -"), (new, " +")):
                if last_tag in tags and side:
                    side[-1] = side[-1].removesuffix("\n")
            continue
        tag, text = line[:1], line[1:]
        last_tag = tag
        if tag in (" ", "-"):
            old.append(text + "\n")
        if tag in (" ", "+"):
            new.append(text + "\n")
    if not hunks:
        return None
    return "".join(old), "".join(new)


def diff_content(data: JsonObject) -> list[ToolContent]:
    """An Edit/WriteFile result's change as an ACP diff (a created file has no old text)."""
    diff, path = data.get("diff"), data.get("path")
    if not isinstance(diff, str) or not isinstance(path, str):
        return []
    texts = diff_texts(diff)
    if texts is None:
        return [helpers.tool_content(helpers.text_block(diff))] if diff else []
    old, new = texts
    return [helpers.tool_diff_content(path, new, None if data.get("created") else old)]


def cut_marker(lines: int, chars: int = 0) -> str:
    """``… 1,204 earlier lines not shown`` (and the characters a flood left out), or ``""``."""
    if not lines and not chars:
        return ""
    said = [f"{lines:,} earlier line{'s' if lines != 1 else ''}"] if lines else []
    if chars:
        said.append(f"{chars:,} characters")
    return "… " + " and ".join(said) + " not shown"


def fenced(text: str) -> str:
    """Command output as a code block: its last :data:`MAX_SHOWN_OUTPUT` characters (whole
    lines, after a ``… N earlier lines not shown`` line), no blank line before the fence."""
    if len(text) > MAX_SHOWN_OUTPUT:
        start = text.find("\n", len(text) - MAX_SHOWN_OUTPUT) + 1
        if start:  # whole lines
            text = f"{cut_marker(text.count(chr(10), 0, start))}\n{text[start:]}"
        else:  # one long line
            text = f"{cut_marker(0, len(text) - MAX_SHOWN_OUTPUT)}\n{text[-MAX_SHOWN_OUTPUT:]}"
    text = text.rstrip("\n")
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def result_content(name: str, output: str, data: JsonObject | None) -> list[ToolContent]:
    """What the editor shows under a finished call: the diff of an edit, the terminal of a
    command run in the editor's terminal, else the output (commands' in a code block)."""
    data = data or {}
    if "diff" in data:
        shown = diff_content(data)
        if shown:
            return shown
    terminal = data.get("terminalId")
    if isinstance(terminal, str) and terminal:
        return [helpers.tool_terminal_ref(terminal)]
    if not output:
        return []
    text = fenced(output) if name == "Bash" else output[:MAX_SHOWN_OUTPUT]
    return [helpers.tool_content(helpers.text_block(text))]


def plan_of(todos: list[JsonObject]) -> AgentPlanUpdate:
    """The todo list as an ACP plan (a cancelled item shows as completed, struck by name)."""
    entries = []
    for item in todos:
        status = str(item.get("status", "pending"))
        content = str(item.get("content", ""))
        if status not in _PLAN_STATUS:
            content, status = f"{content} ({status})", "completed"
        entries.append(helpers.plan_entry(content, status=_PLAN_STATUS[status]))
    return helpers.update_plan(entries)


def tool_start(call_id: str, name: str, params: JsonObject, summary: str, directory: Path) -> ToolCallStart:
    return helpers.start_tool_call(
        call_id,
        tool_title(name, summary),
        kind=tool_kind(name),
        status="in_progress",
        locations=tool_locations(params, directory),
        raw_input=params,
    )


def tool_end(
    call_id: str,
    name: str,
    is_error: bool,
    summary: str,
    output: str,
    data: JsonObject | None,
    directory: Path | None = None,
) -> ToolCallProgress:
    raw: JsonObject = {"summary": summary}
    if data:
        raw["data"] = {key: value for key, value in data.items() if key != "diff"}
        if data.get("terminalId") and output:  # the card shows the terminal: its output here
            raw["output"] = output[-MAX_SHOWN_OUTPUT:]
    return helpers.update_tool_call(
        call_id,
        status="failed" if is_error else "completed",
        content=result_content(name, output, data),
        locations=(change_locations(data, directory) or None) if data and directory is not None else None,
        raw_output=raw,
    )


def todo_failed(call_id: str, name: str, params: JsonObject, output: str) -> ToolCallStart:
    """A TodoWrite that failed: one finished card (one that worked is the plan only)."""
    return helpers.start_tool_call(
        call_id,
        name,
        kind=tool_kind(name),
        status="failed",
        content=result_content(name, output, None),
        raw_input=params,
    )


def hook_call(event: ev.HookRun) -> ToolCallStart:
    """A hook that ran, as a finished call of kind ``other`` (``PostToolUse hook (ruff
    format)``; failed when it blocked, failed or timed out), with what came of it."""
    import uuid

    raw: JsonObject = {"event": event.event, "outcome": event.outcome, "exit_code": event.exit_code}
    if event.call_id:
        raw["call_id"] = event.call_id
    return helpers.start_tool_call(
        f"hook_{uuid.uuid4().hex[:16]}",
        ev.hook_title(event),
        kind="other",
        status="completed" if event.outcome == "ok" else "failed",
        content=[helpers.tool_content(helpers.text_block(ev.hook_result(event)))],
        raw_output=raw,
    )


def updates_of(event: ev.Event, directory: Path) -> list[Update]:
    """The ACP updates one etcode event becomes (most events: none)."""
    if isinstance(event, ev.TextDeltaEvent):
        return [helpers.update_agent_message_text(event.text)] if event.text else []
    if isinstance(event, ev.ReasoningDeltaEvent):
        return [helpers.update_agent_thought_text(event.text)] if event.text else []
    if isinstance(event, ev.ToolCallStart):
        if event.name == PLAN_TOOL:  # shown as the plan (TodoUpdate)
            return []
        return [tool_start(event.call_id, event.name, event.params, event.summary, directory)]
    if isinstance(event, ev.ToolProgress):
        if not event.text:
            return []
        block = helpers.text_block(fenced(event.text) if event.name == "Bash" else event.text)
        return [helpers.update_tool_call(event.call_id, content=[helpers.tool_content(block)])]
    if isinstance(event, ev.ToolResultEvent):
        if event.name == PLAN_TOOL:
            return [todo_failed(event.call_id, event.name, {}, event.output)] if event.is_error else []
        return [
            tool_end(
                event.call_id, event.name, event.is_error, event.summary, event.output, event.data, directory
            )
        ]
    if isinstance(event, ev.TodoUpdate):
        return [plan_of(event.todos)]
    if isinstance(event, ev.WarningEvent | ev.SoftLimitEvent):
        return [helpers.update_agent_thought_text(f"\n[etcode] {event.message}\n")]
    if isinstance(event, ev.RetryEvent):
        from etcode.acp.retries import retry_line

        return [helpers.update_agent_thought_text(f"\n[etcode] {retry_line(event)}\n")]
    if isinstance(event, ev.HookRun):
        return [hook_call(event)]
    if isinstance(event, ev.SubagentEvent):
        notice = ev.subagent_notice(event)
        return updates_of(notice, directory) if notice is not None else []
    if isinstance(event, ev.CompactionEvent) and event.phase == "done":
        return [helpers.update_agent_thought_text("\n[etcode] context compacted\n")]
    return []
