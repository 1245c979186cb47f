"""Finished role steps as session messages.

Each planner answer, executor round and verdict is stored as it finishes, as an assistant
message whose text starts with ``[workflow <role>]``: a killed workflow resumed with
``etcode run -c`` (by any agent) shows the model, and ``etcode sessions show`` the user,
what was already done.
"""

from __future__ import annotations

from etcode.provider.types import Message, TextPart, ToolCallPart
from etcode.workflow.models import Plan, Todo, Verdict

LABEL = "[workflow "
_ARGUMENT_KEYS = ("file_path", "path", "command", "pattern", "url", "description")


def is_step(message: Message) -> bool:
    """Whether ``message`` is a stored role step."""
    return message.role == "assistant" and message.text.startswith(LABEL)


def _message(role: str, text: str) -> Message:
    return Message("assistant", [TextPart(f"{LABEL}{role}] {text.strip()}")])


def _short(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def planner_step(cycle: int, round_number: int, plan: Plan) -> Message:
    lines = [f"Plan (cycle {cycle}, round {round_number}): {plan.summary.strip() or '(no summary)'}"]
    lines += [f"- [{t.id}] ({t.priority}) {t.description}" for t in sorted(plan.todos, key=lambda t: t.rank)]
    return _message("planner", "\n".join(lines))


def executor_step(
    cycle: int, todo: Todo, round_number: int, rounds: int, state: str, report: str, calls: list[ToolCallPart]
) -> Message:
    lines = [
        f"Todo [{todo.id}] {todo.description} (cycle {cycle}, round {round_number} of {rounds}): {state}"
    ]
    if calls:
        lines.append("Tools: " + ", ".join(_call(c) for c in calls))
    lines.append(f"Report: {report.strip() or '(none)'}")
    return _message("executor", "\n".join(lines))


def verifier_step(cycle: int, verdict: Verdict) -> Message:
    status = "satisfied" if verdict.satisfied else "not satisfied"
    lines = [f"Verdict (cycle {cycle}): {status}. {verdict.overall_feedback.strip()}".rstrip()]
    lines += [f"- still to do: {item}" for item in verdict.improvements]
    if verdict.summary.strip() and verdict.summary.strip() != verdict.overall_feedback.strip():
        lines.append(verdict.summary.strip())
    return _message("verifier", "\n".join(lines))


def _call(call: ToolCallPart) -> str:
    try:
        args = call.parsed_arguments()
    except ValueError:
        return call.name
    value = next((args[k] for k in _ARGUMENT_KEYS if isinstance(args.get(k), str)), "")
    return f"{call.name} {_short(value, 60)}" if value else call.name


def tool_calls(messages: list[Message]) -> list[ToolCallPart]:
    """The tool calls made in ``messages`` (an executor round)."""
    return [c for m in messages if m.role == "assistant" for c in m.tool_calls]
