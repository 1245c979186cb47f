"""The Planner → Executor → Verifier engine behind ``--agent workflow``.

``WorkflowRun`` is a :class:`~etcode.engine.run.Run` as :class:`~etcode.engine.loop.AgentLoop`
is (``events()``, ``result``, ``interrupt()``), so ``Agent.stream`` and every front end drive
it alike.
Each role turn is an ordinary loop run with the role's system prompt: the planner and
the verifier without tools, the executor with the session's tools behind a per-run
cache of read-only results. Role text is streamed as :class:`RoleTextDelta`; the plan
as :class:`TodoUpdate` (also while the planner is still writing it); the verdict as
:class:`VerificationResult`; the final answer as an ordinary text delta and the usual
``DoneEvent`` carrying an ``AgentResult``.

Every finished role step (a planner answer, an executor round, a verdict) is stored in
the session as it finishes (``etcode.workflow.steps``), so a killed run keeps them; the
role turns' model calls count in the session's usage and cost (``_RoleRecorder``,
``_RoleWindow``), but their own conversations are not stored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from etcode.contract import events as ev
from etcode.contract.results import AgentResult
from etcode.engine import interception
from etcode.engine.interception import BLOCKED, InterceptorError, StopRun
from etcode.engine.limits import TOKEN_LIMIT
from etcode.engine.loop import AgentLoop
from etcode.engine.pump import EventPump
from etcode.engine.seams import LoopWindow, SafeRecorder
from etcode.engine.settings import LoopSettings
from etcode.provider.types import Message, TextPart, ToolSchema, Usage
from etcode.tools.registry import ToolRegistry
from etcode.util.errors import EtcodeError
from etcode.util.json_types import JsonObject
from etcode.workflow import requests, steps
from etcode.workflow.cache import ToolCache, cached_registry
from etcode.workflow.jsonparse import JsonAnswerError, parse_object, parse_partial
from etcode.workflow.models import ExecutorReport, Plan, Todo, Verdict, todos_from
from etcode.workflow.prompts import PromptManager

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.engine.compaction import CompactionResult
    from etcode.engine.context import ContextBudget
    from etcode.provider.base import Provider
    from etcode.provider.errors import ContextOverflowError

T = TypeVar("T")
_PARTIAL_TRIGGERS = frozenset('",}]')


@dataclass
class WorkflowLimits:
    """Round limits of each role and the number of plan → execute → verify cycles."""

    max_cycles: int = 3
    planner_rounds: int = 3
    executor_rounds: int = 10

    @classmethod
    def from_config(cls, config: Config | None) -> WorkflowLimits:
        """The ``workflow`` section's ``max_cycles``, ``planner_rounds``, ``executor_rounds``."""
        if config is None:
            return cls()
        section = config.workflow
        values = {
            "max_cycles": section.max_cycles,
            "planner_rounds": section.planner_rounds,
            "executor_rounds": section.executor_rounds,
        }
        return cls(**{k: v for k, v in values.items() if v is not None})


class _Stop(Exception):
    def __init__(self, reason: str, error: str | None = None, exception: EtcodeError | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error
        self.exception = exception


@dataclass
class _Cycle:
    plan: Plan
    verdict: Verdict

    @property
    def score(self) -> int:
        checked = [t for t in self.verdict.tasks if t.completed]
        return len(checked) if self.verdict.tasks else sum(t.status == "completed" for t in self.plan.todos)


class WorkflowRun(EventPump):
    """One workflow run: ``async for event in run.events(): ...`` then ``run.result``."""

    def __init__(
        self,
        base: LoopSettings,
        history: list[Message],
        task: str,
        *,
        limits: WorkflowLimits,
        prompts: PromptManager,
    ) -> None:
        self.task = task
        self.history = list(history)
        self._earlier = requests.conversation_digest(self.history)
        self.limits = limits
        self.prompts = prompts
        #: The session's settings; each role turn runs with a variant of them.
        self.base = base
        self.cache = ToolCache()
        self.executor_tools = cached_registry(self.base.tools, self.cache)
        self.result: AgentResult | None = None
        super().__init__()
        self._usage = Usage()
        #: Output tokens the run's budget counted (``AgentResult.counted_output_tokens``).
        self._counted = 0
        self._steps = 0
        self._current: AgentLoop | None = None
        self._interrupted = False
        self._abort = asyncio.Event()
        self._deadline = time.monotonic() + base.limits.timeout if base.limits.timeout else None
        self._record = SafeRecorder(base.recorder, self.emit)
        self._partial_text = ""
        self._last_plan: list[JsonObject] | None = None
        self._limit_hit = False  # the last turn stopped at the step limit
        self._blocked = ""  # what a hook said when it stopped a role's turn
        #: The session's messages of this run: the history, the task, each finished role step.
        self.messages: list[Message] = [*self.history, Message.user(task)]

    # ---- the Run surface ------------------------------------------------------------
    def interrupt(self) -> None:
        self._interrupted = True
        self._abort.set()
        if self._current is not None:
            self._current.interrupt()

    # ---- the workflow --------------------------------------------------------------
    async def _produce(self) -> None:
        stop_reason, error, text = "end_turn", None, ""
        exception: EtcodeError | None = None
        todos: list[JsonObject] = []
        try:
            if self.base.interceptors:
                interception.attach(self.base.interceptors, self.emit)
                try:
                    await self._intercept_prompt()
                except StopRun:
                    self.messages.pop()  # a blocked prompt is not kept (nor sent on --continue)
                    raise
            await self._checkpoint()
            text, todos = await self._cycles()
        except InterceptorError as err:
            stop_reason, error, exception = "error", str(err), err
            self.emit(ev.ErrorEvent(error, kind="internal"))
        except StopRun as stop:  # a hook refused the prompt or stopped the run
            stop_reason = BLOCKED
            self.emit(ev.StoppedEvent(BLOCKED, str(stop)))
        except _Stop as stop:
            stop_reason, error, exception = stop.reason, stop.error, stop.exception
            if stop.reason in ("interrupted", "timeout"):
                message = (
                    "Interrupted by the user."
                    if stop.reason == "interrupted"
                    else "Stopped: time limit reached."
                )
                self.emit(ev.StoppedEvent(stop.reason, message))
            elif stop.reason == TOKEN_LIMIT:
                self.emit(
                    ev.StoppedEvent(
                        TOKEN_LIMIT,
                        f"Stopped: the workflow's answers used {self._counted:,} output tokens "
                        f"(limit: max_tokens {self.base.limits.max_tokens:,} for the run).",
                    )
                )
        if text:
            self.emit(ev.TextDeltaEvent(text))
        messages = self.messages
        if text:
            messages.append(Message("assistant", [TextPart(text)]))
        if self.base.on_step is not None:
            await self.base.on_step(messages)
        await self._checkpoint()
        self.result = AgentResult(
            text=text,
            messages=messages,
            usage=self._usage,
            steps=self._steps,
            stop_reason=stop_reason,
            todos=todos,
            session_id=self.base.session_id,
            error=error,
            exception=exception if stop_reason == "error" else None,
            counted_output_tokens=self._counted,
        )
        if self.base.interceptors:
            await self._intercept_end()
        self.emit(ev.DoneEvent(self.result.to_dict()))
        self._finish()

    # ---- interception: the turn hooks once, for the user's turn ------------------------
    async def _intercept_prompt(self) -> None:
        """``before_turn``, given up (its hook killed) when the run is interrupted or its
        time runs out: the run then stops as it would have."""
        work = asyncio.ensure_future(interception.before_turn(self.base.interceptors, self.messages[-1]))
        stop = asyncio.ensure_future(self._abort.wait())
        remaining = None if self._deadline is None else max(0.0, self._deadline - time.monotonic())
        try:
            await asyncio.wait({work, stop}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not work.done():
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
        if work.cancelled():
            raise _Stop("interrupted" if self._interrupted else "timeout")
        prompt = work.result()
        self.messages[-1] = prompt
        self.task = prompt.text

    async def _intercept_end(self) -> None:
        """``after_turn``; one that fails makes the run's result that error."""
        assert self.result is not None
        try:
            await interception.after_turn(self.base.interceptors, self.result)
        except InterceptorError as err:
            self.emit(ev.ErrorEvent(str(err), kind="internal"))
            self.result = replace(self.result, stop_reason="error", error=str(err), exception=err)

    async def _cycles(self) -> tuple[str, list[JsonObject]]:
        cycles: list[_Cycle] = []
        limit = self.limits.max_cycles
        for number in range(1, limit + 1):
            previous = (cycles[-1].plan, cycles[-1].verdict) if cycles else None
            plan = await self._plan(number, previous)
            await self._execute(number, plan)
            verdict = await self._verify(number, plan)
            cycles.append(_Cycle(plan, verdict))
            if verdict.satisfied:
                self.emit(ev.WorkflowPhase("finished", number, "verified"))
                return _final_text(plan, verdict), [t.to_dict() for t in plan.todos]
        best = max(reversed(cycles), key=lambda c: c.score)
        note = _unfinished_note(cycles[-1].verdict, limit)
        self.emit(ev.WorkflowPhase("finished", len(cycles), "not verified after the last cycle"))
        return f"{_final_text(best.plan, best.verdict)}\n\n{note}", [t.to_dict() for t in best.plan.todos]

    # ---- planner -------------------------------------------------------------------
    async def _plan(self, cycle: int, previous: tuple[Plan, Verdict] | None) -> Plan:
        self.emit(ev.WorkflowPhase("planning", cycle, f"cycle {cycle} of {self.limits.max_cycles}"))
        conversation: list[Message] = []
        prompt = requests.planner_request(self.task, cycle, self.limits.max_cycles, previous, self._earlier)
        plan: Plan | None = None
        for number in range(1, self.limits.planner_rounds + 1):
            self._last_plan = None
            parsed, text = await self._ask("planner", conversation, prompt, None, Plan.from_dict)
            plan = parsed if parsed is not None else Plan(text, False, [])
            if not plan.todos:  # prose, or an empty plan: the request itself is the one todo
                plan.todos = [Todo("1", self.task.strip()[:500], "high")]
            self._publish(plan.todos)
            await self._save_step(steps.planner_step(cycle, number, plan))
            if not plan.needs_more_planning or number == self.limits.planner_rounds:
                break
            prompt = requests.planner_refine(number + 1, self.limits.planner_rounds)
        assert plan is not None
        for todo in plan.todos:
            if todo.status == "in_progress":
                todo.status = "pending"
        self.emit(ev.WorkflowPhase("planned", cycle, plan.summary or f"{len(plan.todos)} todos"))
        return plan

    # ---- executor ------------------------------------------------------------------
    async def _execute(self, cycle: int, plan: Plan) -> None:
        for todo in sorted(plan.todos, key=lambda t: t.rank):
            if todo.status == "completed":
                todo.outcome = todo.outcome or "completed"
                continue
            todo.status = "in_progress"
            self._publish(plan.todos)
            self.emit(ev.WorkflowPhase("executing", cycle, todo.description, todo.id))
            outcome = await self._run_todo(cycle, plan, todo)
            todo.outcome = outcome
            todo.status = "completed" if outcome == "completed" else "pending"
            self._publish(plan.todos)
            first = todo.result.strip().splitlines()[0] if todo.result.strip() else ""
            self.emit(
                ev.WorkflowPhase("executed", cycle, f"{outcome}: {first}" if first else outcome, todo.id)
            )

    async def _run_todo(self, cycle: int, plan: Plan, todo: Todo) -> str:
        rounds = self.limits.executor_rounds
        conversation: list[Message] = []
        prompt = requests.executor_request(self.task, plan, todo, rounds)
        for number in range(1, rounds + 1):
            todo.rounds = number
            start = len(conversation)
            report, text = await self._ask(
                "executor", conversation, prompt, self.executor_tools, ExecutorReport.from_dict
            )
            if report is None and self._limit_hit:  # stopped mid-work: another round
                report = ExecutorReport(summary=text or "(stopped at the step limit)", next_action="continue")
            elif report is None:  # prose after one retry: take it as the final report
                report = ExecutorReport(summary=text, task_completed=True, prose=True)
            todo.result = report.summary or text
            _apply_statuses(plan, todo, report)
            outcome = _round_outcome(todo, report)
            calls = steps.tool_calls(conversation[start:])
            state = outcome or ("round limit reached" if number == rounds else "continuing")
            await self._save_step(steps.executor_step(cycle, todo, number, rounds, state, todo.result, calls))
            if outcome is not None:
                return outcome
            prompt = requests.executor_next(todo, number + 1, rounds, report.next_action)
        todo.result = f"{todo.result}\n(stopped: no completion after {rounds} rounds)".strip()
        return "round_limit"

    # ---- verifier ------------------------------------------------------------------
    async def _verify(self, cycle: int, plan: Plan) -> Verdict:
        self.emit(ev.WorkflowPhase("verifying", cycle))
        request = requests.verifier_request(self.task, plan, self._earlier)
        verdict, text = await self._ask("verifier", [], request, None, Verdict.from_dict)
        if verdict is None:  # prose: trust the executor's own outcomes
            done = all(t.status == "completed" for t in plan.todos)
            verdict = Verdict(done, done, text, summary=text, prose=True)
        self.emit(
            ev.VerificationResult(
                cycle,
                verdict.all_completed,
                verdict.user_needs_satisfied,
                verdict.overall_feedback,
                [t.to_dict() for t in verdict.tasks],
                list(verdict.improvements),
            )
        )
        await self._save_step(steps.verifier_step(cycle, verdict))
        status = "satisfied" if verdict.satisfied else "not satisfied"
        self.emit(ev.WorkflowPhase("verified", cycle, f"{status}: {verdict.overall_feedback}".rstrip(": ")))
        return verdict

    # ---- role turns ----------------------------------------------------------------
    async def _ask(
        self,
        role: str,
        conversation: list[Message],
        prompt: str,
        tools: ToolRegistry | None,
        parse: Callable[[JsonObject], T],
    ) -> tuple[T | None, str]:
        """One role turn expecting JSON; an unusable answer is retried once with the
        error. Returns (parsed or None, the last answer's text)."""
        text = await self._turn(role, conversation, prompt, tools)
        for attempt in (1, 2):
            try:
                return parse(parse_object(text)), text
            except (JsonAnswerError, ValueError) as err:
                if attempt == 2 or self._limit_hit:
                    break
                text = await self._turn(role, conversation, requests.json_retry(str(err)), tools)
        return None, text

    async def _turn(
        self, role: str, conversation: list[Message], prompt: str, tools: ToolRegistry | None
    ) -> str:
        """One loop run of ``role``; ``conversation`` becomes the run's messages."""
        if self._interrupted:
            raise _Stop("interrupted")
        remaining = None
        if self._deadline is not None:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise _Stop("timeout")
        budget = self.base.limits.max_tokens  # the whole workflow's: what its turns left of it
        left = None if budget is None else budget - self._counted
        if left is not None and left <= 0:
            raise _Stop(TOKEN_LIMIT)
        settings = replace(
            self.base,
            system=self._system(role),
            tools=tools if tools is not None else ToolRegistry(),
            limits=replace(self.base.limits, timeout=remaining, max_tokens=left),
            on_step=None,
            recorder=_RoleRecorder(self) if self._record.recorder is not None else None,
            window=_RoleWindow(self.base.window) if self.base.window is not None else None,
            interceptors=interception.tool_calls_only(self.base.interceptors),
        )
        loop = AgentLoop(settings, conversation, Message.user(prompt))
        self._current = loop
        self._partial_text = ""
        try:
            async for event in loop.events():
                self._forward(role, event)
        finally:
            self._current = None
        result = loop.result
        assert result is not None
        conversation[:] = result.messages
        self._usage.add(result.usage)
        self._counted += result.counted_output_tokens  # (an estimate where none was reported)
        self._steps += result.steps
        self._limit_hit = result.stop_reason == "max_steps"
        if result.stop_reason == BLOCKED:
            raise StopRun(self._blocked or "stopped by a hook")
        if result.stop_reason in ("interrupted", "timeout", "error", TOKEN_LIMIT):
            reason = "interrupted" if self._interrupted else result.stop_reason
            raise _Stop(reason, result.error, result.exception)
        return result.text

    # ---- the session ---------------------------------------------------------------
    async def _save_step(self, message: Message) -> None:
        """Keep a finished role step in the run's messages and store it now."""
        self.messages.append(message)
        await self._checkpoint()

    async def _checkpoint(self) -> None:
        await self._record(lambda recorder: recorder.checkpoint(self.messages))

    def _system(self, role: str) -> list[str]:
        base = self.base.system[1:]  # instructions (the first part is the agent/provider's)
        parts = [self.prompts.get(role)]
        if role == "executor":
            from etcode.prompt import templates

            parts.append(templates.module("tool_usage"))
        return [*parts, *base]

    def _forward(self, role: str, event: ev.Event) -> None:
        if isinstance(event, ev.TextDeltaEvent):
            self.emit(ev.RoleTextDelta(role, event.text))
            if role == "planner":
                self._partial_text += event.text
                if _PARTIAL_TRIGGERS.intersection(event.text):
                    self._partial_plan()
        elif isinstance(event, ev.StoppedEvent):
            if event.reason == "max_steps":
                self.emit(ev.WarningEvent(f"{role}: {event.message}"))
            elif event.reason == BLOCKED:  # said once, by the run (_produce)
                self._blocked = event.message
        elif not isinstance(event, ev.DoneEvent | ev.TodoUpdate):
            self.emit(event)

    def _partial_plan(self) -> None:
        partial = parse_partial(self._partial_text)
        if partial is None or not isinstance(partial.get("todos"), list):
            return
        self._publish(todos_from(partial["todos"]))

    def _publish(self, todos: list[Todo]) -> None:
        items = [t.to_dict() for t in todos]
        if items != self._last_plan:
            self._last_plan = items
            self.emit(ev.TodoUpdate(items))


class _RoleRecorder:
    """The recorder a role turn's loop sees: its model calls' usage goes to the session
    (numbered as the workflow's steps); its conversation does not (the workflow stores
    each finished role step itself)."""

    def __init__(self, run: WorkflowRun) -> None:
        self.run = run

    async def checkpoint(self, messages: list[Message]) -> None:
        return None

    async def batch_started(self, messages: list[Message], reason: str) -> None:
        return None

    async def step_finished(self, step: int, usage: Usage, cost: float | None) -> None:
        steps = self.run._steps + step
        await self.run._record(lambda recorder: recorder.step_finished(steps, usage, cost))

    async def usage_added(self, usage: Usage, cost: float | None, model: str) -> None:
        await self.run._record(lambda recorder: recorder.usage_added(usage, cost, model))


class _RoleWindow:
    """The context window a role turn's loop sees: its calls count in the session's cost
    and totals, but do not describe the session's context (and are never compacted)."""

    def __init__(self, window: LoopWindow) -> None:
        self.window = window

    @property
    def auto(self) -> bool:
        return False

    @property
    def max_output(self) -> int:
        return self.window.max_output

    @property
    def budget(self) -> ContextBudget:
        return self.window.budget

    def needs_compaction(
        self, system: list[str], tools: list[ToolSchema], messages: list[Message]
    ) -> int | None:
        return None

    def check_newest(
        self,
        system: list[str],
        tools: list[ToolSchema],
        messages: list[Message],
        overflow: ContextOverflowError | None = None,
    ) -> None:
        return None

    def learn_window(self, context: int, source: str = "overflow error") -> bool:
        return False

    async def compact(
        self,
        messages: list[Message],
        *,
        reason: str,
        provider: Provider,
        model: str,
        system: list[str],
        tools: list[ToolSchema],
        tokens_before: int | None = None,
    ) -> CompactionResult:
        raise RuntimeError("a workflow role turn is never compacted (its window is not auto)")

    def record(self, usage: Usage, messages: list[Message]) -> tuple[float | None, ev.UsageUpdate]:
        return self.window.record(usage, [])

    def calibrate(
        self, usage: Usage, system: list[str], tools: list[ToolSchema], messages: list[Message]
    ) -> None:
        self.window.calibrate(usage, system, tools, messages)  # the same model: its counts teach

    def add_usage(self, usage: Usage, cost: float | None) -> ev.UsageUpdate:
        return self.window.add_usage(usage, cost)

    def update(self) -> ev.UsageUpdate:
        return self.window.update()


def _round_outcome(todo: Todo, report: ExecutorReport) -> str | None:
    """How an executor round ended the todo, or None to go on."""
    if report.completed(todo.id):
        return "completed"
    if report.next_action == "skip":
        return "skipped"
    if report.should_continue is False and report.next_action not in ("continue", "retry"):
        return "incomplete"
    return None


def _apply_statuses(plan: Plan, current: Todo, report: ExecutorReport) -> None:
    """Other todos the executor reports as completed are not run again."""
    for todo in plan.todos:
        if todo is not current and todo.status != "completed" and report.todo_status(todo.id) == "completed":
            todo.status = "completed"
            todo.outcome = "completed"
            todo.result = todo.result or f"Done while working on [{current.id}]."


def _final_text(plan: Plan, verdict: Verdict) -> str:
    if verdict.summary:
        return verdict.summary
    reports = [f"- {t.description}: {t.result.strip()}" for t in plan.todos if t.result.strip()]
    return "\n".join(filter(None, [verdict.overall_feedback, *reports])) or "The workflow finished."


def _unfinished_note(verdict: Verdict, cycles: int) -> str:
    lines = [
        f"Note: after {cycles} plan → execute → verify cycles the verifier is still not satisfied"
        + (f": {verdict.overall_feedback}" if verdict.overall_feedback else ".")
    ]
    lines += [f"- still to do: {item}" for item in verdict.improvements]
    return "\n".join(lines)
