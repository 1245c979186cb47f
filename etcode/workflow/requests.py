"""The user messages each role receives (the role prompts are the system prompts)."""

from __future__ import annotations

from etcode.provider.types import Message
from etcode.workflow.models import Plan, Todo, Verdict
from etcode.workflow.steps import is_step


def _todo_lines(todos: list[Todo], with_results: bool = False) -> str:
    lines = []
    for todo in todos:
        line = f"- [{todo.id}] ({todo.priority}, {todo.outcome or todo.status}) {todo.description}"
        if with_results and todo.result:
            report = todo.result.strip().replace("\n", "\n    ")
            line += f"\n    Executor report: {report}"
        lines.append(line)
    return "\n".join(lines) or "- (no todos)"


def conversation_digest(history: list[Message], limit: int = 6, width: int = 1500) -> str:
    """The last user/assistant texts of earlier turns, for follow-up requests. A turn's
    workflow role steps are left out when it has a final answer (they are what an
    unfinished turn, e.g. a killed one, shows)."""
    lines: list[str] = []
    answered = False
    for message in reversed(history):
        if message.role == "user":
            answered = False
        elif message.role == "assistant" and message.text.strip():
            if is_step(message):
                if answered:
                    continue
            else:
                answered = True
        if message.role in ("user", "assistant") and message.text.strip():
            text = message.text.strip()
            text = text if len(text) <= width else text[: width - 1] + "…"
            lines.append(f"{message.role}: {text}")
        if len(lines) == limit:
            break
    return "\n\n".join(reversed(lines))


def planner_request(
    task: str, cycle: int, max_cycles: int, previous: tuple[Plan, Verdict] | None, earlier: str = ""
) -> str:
    text = f"Earlier in this conversation:\n{earlier}\n\n" if earlier else ""
    text += f"User request:\n{task}\n"
    if previous is None:
        return text + "\nPlan the work."
    plan, verdict = previous
    improvements = "\n".join(f"- {item}" for item in verdict.improvements) or f"- {verdict.overall_feedback}"
    return (
        f"{text}\nThis is planning cycle {cycle} of {max_cycles}. The previous cycle was verified as not "
        f"finished.\n\nPrevious plan and its outcome:\n{_todo_lines(plan.todos, with_results=True)}\n\n"
        f"Verifier feedback: {verdict.overall_feedback or '(none)'}\n"
        f"Improvements requested:\n{improvements}\n\n"
        "Plan only what is still missing or wrong."
    )


def planner_refine(round_number: int, max_rounds: int) -> str:
    return (
        f"Refine the plan (planning round {round_number} of {max_rounds}). Answer with the complete "
        "updated JSON object; set needsMorePlanning to false when it is ready to execute."
    )


def executor_request(task: str, plan: Plan, todo: Todo, max_rounds: int) -> str:
    return (
        f"User request:\n{task}\n\nPlan: {plan.summary or '(no summary)'}\n"
        f"{_todo_lines(plan.todos, with_results=True)}\n\n"
        f"Your current todo is [{todo.id}]: {todo.description}\n"
        f"Work on this todo only. You have up to {max_rounds} rounds for it; this is round 1. "
        "When you stop calling tools, answer with the JSON object described in your instructions."
    )


def executor_next(todo: Todo, round_number: int, max_rounds: int, action: str | None) -> str:
    verb = "Try again with a different approach" if action == "retry" else "Continue"
    return (
        f"{verb} on todo [{todo.id}]: {todo.description}\n"
        f"This is round {round_number} of {max_rounds}. End with the JSON object."
    )


def verifier_request(task: str, plan: Plan, earlier: str = "") -> str:
    context = f"Earlier in this conversation:\n{earlier}\n\n" if earlier else ""
    return context + (
        f"User request:\n{task}\n\nPlan: {plan.summary or '(no summary)'}\n\n"
        f"Todos and the executor's reports:\n{_todo_lines(plan.todos, with_results=True)}\n\n"
        "Verify the work and answer with the JSON object described in your instructions."
    )


def json_retry(error: str) -> str:
    return (
        f"Your last answer could not be used: {error}. Answer again with only the JSON object "
        "described in your instructions — no prose before or after it."
    )
