"""The ReAct loop: ask the model, run its tool calls, feed back the results, repeat.

The loop runs as a producer task that puts typed events on a queue; ``events()`` is the
consumer every front end iterates. An interrupt (``interrupt()``) is an event, not a
task cancellation: the stream or the running tools stop, the partial answer is kept,
every tool call still gets a result, and the run ends with ``stop_reason="interrupted"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from etcode.contract import events as ev
from etcode.contract.results import AgentResult
from etcode.contract.tools import ToolContext
from etcode.engine.limits import TOKEN_LIMIT, UNREPORTED_MIN_TOKENS, LimitChecker
from etcode.engine.pump import EventPump
from etcode.engine.seams import LoopWindow, SafeRecorder
from etcode.engine.settings import LoopSettings
from etcode.provider.errors import ContextOverflowError, ProviderError
from etcode.provider.types import (
    Message,
    ModelRequest,
    ReasoningDelta,
    RetryNotice,
    StreamEnd,
    TextDelta,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from etcode.tools.scheduler import ToolScheduler
from etcode.tools.summary import plural
from etcode.util.errors import EtcodeError
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.engine.compaction import CompactionResult
    from etcode.engine.interception import InterceptorError, StopRun

log = logging.getLogger("etcode.loop")
T = TypeVar("T")

#: What the user is told when the run stops early.
_STOP_MESSAGES = {"interrupted": "Interrupted by the user.", "timeout": "Stopped: time limit reached."}


def _estimated_tokens(message: Message) -> int:
    """An answer's output tokens when the provider reported none (a client of the user's
    that counts nothing): about four characters a token, at least
    :data:`~etcode.engine.limits.UNREPORTED_MIN_TOKENS`, so that a budget ends a run
    that has no step limit in a bounded number of calls (a small tool call is ~20 tokens)."""
    size = len(message.text) + sum(len(call.name) + len(call.arguments) for call in message.tool_calls)
    return max(UNREPORTED_MIN_TOKENS, size // 4)


def _not_run(call: ToolCallPart) -> ToolResultPart:
    """The answer to a call made when the tools were turned off (a hard limit's last step)."""
    note = "Not run: the step limit was reached and the tools are turned off."
    return ToolResultPart(call.id, call.name, note, is_error=True, summary="Not run")


def describe_unexpected(err: BaseException) -> str:
    """One line for an exception nobody planned for (the traceback goes to --debug)."""
    if isinstance(err, EtcodeError):
        return str(err)
    if isinstance(err, RecursionError):
        return "internal error: data nested too deeply to process"
    detail = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"internal error: {type(err).__name__}" + (f": {detail}" if detail else "")


def as_etcode_error(err: Exception, line: str) -> EtcodeError:
    """``err`` as the run's typed error: itself when it is one, else an ``EtcodeError`` of
    ``line`` raised from it (the traceback stays on ``__cause__``)."""
    if isinstance(err, EtcodeError):
        return err
    wrapped = EtcodeError(line)
    wrapped.__cause__ = err
    return wrapped


class AgentLoop(EventPump):
    """One run: ``async for event in loop.events(): ...`` then read ``loop.result``."""

    def __init__(self, settings: LoopSettings, history: list[Message], prompt: Message) -> None:
        self.settings = settings
        self.messages: list[Message] = [*history, prompt]
        self.result: AgentResult | None = None
        self._abort = asyncio.Event()
        super().__init__()
        self._usage = Usage()
        self._steps = 0
        self._limits = LimitChecker(settings.limits)
        self._tools_off = False  # this step is a hard step limit's last: no tools
        self._sent_max_tokens: int | None = None
        self._sent: ModelRequest | None = None  # the last request sent: what calibration counts
        self._interrupted = False
        self._compacted_at = -1
        #: Summarising model requests made by this run's compactions.
        self._compactions = 0
        self._record = SafeRecorder(settings.recorder, self.emit)
        #: An interceptor that failed while tools ran (raised once every call has a result).
        self._intercept_error: InterceptorError | StopRun | None = None
        #: The error that ended the run (``AgentResult.exception``).
        self._exception: EtcodeError | None = None

    # ---- control -----------------------------------------------------------------
    def interrupt(self) -> None:
        """Stop the run as soon as possible, keeping what is finished."""
        self._interrupted = True
        self._abort.set()

    # ---- the loop ----------------------------------------------------------------
    async def _produce(self) -> None:
        """The run: its steps, then its end, whatever they raise (one ``DoneEvent``)."""
        error: str | None = None
        deadline = time.monotonic() + self.settings.limits.timeout if self.settings.limits.timeout else None
        timer = self._start_timer(deadline)
        try:
            stop_reason = await self._run_steps(deadline)
        except ProviderError as err:
            stop_reason = "error"
            error = str(err)
            self._exception = err
            self._drop_refused(err)
            self.emit(ev.ErrorEvent(error, kind=err.kind))
        except Exception as err:  # a bug or a failure nobody expected: end the run, keep the steps
            log.debug("the run failed", exc_info=True)
            stop_reason = "error"
            error = describe_unexpected(err)
            self._exception = as_etcode_error(err, error)
            self.emit(ev.ErrorEvent(error, kind="internal"))
        finally:
            if timer is not None:
                timer.cancel()
        await self._end_run(stop_reason, error)

    def _drop_refused(self, err: ProviderError) -> None:
        """A newest message refused as too long for the window, with nothing after it, is
        not kept (as a blocked prompt): left in the history, it would go out with every later
        prompt and fail each one (a 5 MiB paste resent, and summarised, again and again)."""
        from etcode.engine.compaction import MessageTooLongError, newest_user_index

        if not isinstance(err, MessageTooLongError) or not self.messages:
            return
        if newest_user_index(self.messages) == len(self.messages) - 1:
            self.messages.pop()  # the end of the run stores the history without it

    async def _run_steps(self, deadline: float | None) -> str:
        """Step until the run stops; returns the stop reason."""
        if self.settings.interceptors:
            return await self._run_intercepted_steps(deadline)
        await self._checkpoint()
        while True:
            stop_reason = await self._step(deadline)
            if stop_reason is not None:
                return stop_reason

    async def _run_intercepted_steps(self, deadline: float | None) -> str:
        """``_run_steps`` with the turn's interception: the prompt, ``before_stop`` (the model
        told to go on, a few times in a row at most) and :class:`StopRun`."""
        from etcode.engine import interception
        from etcode.engine.interception import MAX_STOP_CONTINUES, StopRun

        interceptors = self.settings.interceptors
        interception.attach(interceptors, self.emit)
        try:
            try:
                await self._unless_aborted(self._intercept_prompt(), None)
            except StopRun:
                self.messages.pop()  # a blocked prompt is not kept
                raise
            await self._checkpoint()
            continued = 0
            while True:
                stop_reason = await self._step(deadline)
                if stop_reason != "end_turn" or continued >= MAX_STOP_CONTINUES:
                    if stop_reason is not None:
                        return stop_reason
                    continue
                reason = await self._unless_aborted(
                    interception.before_stop(interceptors, continued > 0), None
                )
                if self._abort.is_set():  # interrupted (or timed out) while a Stop hook ran
                    return self._abort_reason(deadline)
                if not reason:
                    return stop_reason
                continued += 1
                self.messages.append(Message.user(reason))
        except StopRun as stop:
            self.emit(ev.StoppedEvent(interception.BLOCKED, str(stop)))
            return interception.BLOCKED

    async def _step(self, deadline: float | None) -> str | None:
        """One step: compact if due, ask the model, run its tool calls. Returns the stop
        reason when the run stops, None when it goes on."""
        if self._abort.is_set():
            return self._abort_reason(deadline)
        if self._limits.is_last_step(self._steps):  # a step past a hard limit's last (never reached)
            self.emit(
                ev.StoppedEvent(
                    "max_steps", f"Stopped after {plural(self._steps, 'step')} (limit: max steps)."
                )
            )
            return "max_steps"
        self._replan()  # a window learned since (a late discovery answer): the request fits it
        await self._auto_compact()
        if self._abort.is_set():
            return None  # interrupted while compacting: the next step says why it stops
        self._steps += 1
        self._add_request_notes()
        self._tools_off = self._limits.is_last_step(self._steps)
        if self._tools_off:  # the hard limit's last step: a summary in text, no tools
            self.messages.append(Message.user(self.settings.limits.hard_limit_prompt))
        self.emit(ev.StepStart(self._steps))
        end = await self._stream_step_compacting()
        if end is None:  # interrupted while streaming
            return self._abort_reason(deadline)
        self._usage.add(end.usage)
        self._limits.add_tokens(end.usage.output_tokens or _estimated_tokens(end.message))
        usage_event = await self._account(end)
        calls = end.message.tool_calls
        if calls and self._tools_off:
            self.messages.append(Message("tool", [_not_run(call) for call in calls]))
        elif calls:
            await self._run_calls(calls)
        self.emit(ev.StepFinish(self._steps, end.usage.to_dict(), end.stop_reason))
        if usage_event is not None:
            self.emit(usage_event)
        await self._persist()
        if self._tools_off:
            limit = plural(self.settings.limits.max_steps or self._steps, "step")
            self.emit(
                ev.StoppedEvent(
                    "max_steps",
                    f"Stopped at the step limit ({limit}); the last answer was asked for without tools.",
                )
            )
            return "max_steps"
        if calls:
            return self._after_tools()
        if end.stop_reason == "max_tokens":  # never a silent truncation
            self.emit(ev.StoppedEvent("max_tokens", self._cut_notice(end.usage)))
            return "max_tokens"
        return "end_turn"

    def _after_tools(self) -> str | None:
        """The run's budget and soft step limit after a step whose tools ran: the stop reason
        when the budget is spent, else None (a soft limit reached: the model told to wrap up)."""
        limits = self._limits
        if limits.over_budget():
            self.emit(
                ev.StoppedEvent(
                    TOKEN_LIMIT,
                    f"Stopped after {plural(self._steps, 'step')}: the run's answers used {limits.tokens:,} output "
                    f"tokens (limit: max_tokens {limits.limits.max_tokens:,} for the run).",
                )
            )
            return TOKEN_LIMIT
        prompt = limits.soft_prompt(self._steps)
        if prompt is not None:
            self.messages.append(Message.user(prompt))
            self.emit(ev.SoftLimitEvent("step_limit", prompt, self._steps))
        return None

    def _add_request_notes(self) -> None:
        """What the session has to tell the model before this request (a background
        process exited), as one user message."""
        take = self.settings.request_notes
        notes = take() if take is not None else []
        if notes:
            self.messages.append(Message.user("\n".join(notes)))

    def _abort_reason(self, deadline: float | None) -> str:
        return "timeout" if self._timed_out(deadline) else "interrupted"

    async def _run_calls(self, calls: list[ToolCallPart]) -> None:
        """Run the model's tool calls and add their results to the history."""
        await self._checkpoint()  # a crash while tools run keeps the calls
        results = await self._run_capped(calls)
        self.messages.append(Message("tool", list(results)))
        if self._intercept_error is not None:
            raise self._intercept_error

    async def _end_run(self, stop_reason: str, error: str | None) -> None:
        """Save the finished steps, make the result, call ``after_turn``, emit the one
        ``DoneEvent`` and end the stream, even when saving fails."""
        try:
            if stop_reason in ("interrupted", "timeout"):
                self.emit(ev.StoppedEvent(stop_reason, _STOP_MESSAGES[stop_reason]))
                await self._persist()
            await self._checkpoint()
        except Exception as err:  # saving failed as well: say so, still end the run
            log.debug("saving the end of the run failed", exc_info=True)
            self.emit(ev.WarningEvent(f"the last steps may not be saved: {describe_unexpected(err)}"))
        finally:
            self.result = self._make_result(stop_reason, error)
            if self.settings.interceptors:
                await self._intercept_end()
            self.emit(ev.DoneEvent(self.result.to_dict()))
            self._finish()

    # ---- interception (imported only by a run that has interceptors) ----------------------
    async def _intercept_prompt(self) -> None:
        from etcode.engine import interception

        self.messages[-1] = await interception.before_turn(self.settings.interceptors, self.messages[-1])

    async def _intercept_end(self) -> None:
        """``after_turn``; one that fails makes the run's result that error."""
        from etcode.engine import interception
        from etcode.engine.interception import InterceptorError

        assert self.result is not None
        try:
            await interception.after_turn(self.settings.interceptors, self.result)
        except InterceptorError as err:
            self.emit(ev.ErrorEvent(str(err), kind="internal"))
            self._exception = err
            self.result = self._make_result("error", str(err))

    def _max_tokens(self) -> int | None:
        """What each request asks for: the setting, else the window's answer size."""
        window = self.settings.window
        return self.settings.max_tokens or (window.max_output if window is not None else None)

    def _cut_notice(self, usage: Usage) -> str:
        """Why the answer stopped at its limit: the context window filled up (the prompt and
        the answer reached the known window: llama.cpp stops there with "length", short of
        ``max_tokens``), else its ``max_tokens``."""
        limit = self.settings.max_tokens or self._sent_max_tokens
        window = self.settings.window
        context = window.budget.context if window is not None else None
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        answer = usage.output_tokens
        if context and prompt and prompt + answer >= context:
            size = f" ({prompt:,} tokens of prompt and {answer:,} of answer in a {context:,}-token window)"
            return (
                f"The answer was cut off: the context window is full{size}; raising max_tokens "
                "cannot help. Compact the conversation (/compact in the chat) or start a new one, "
                "or give the model a larger window (llama-server -c, Ollama num_ctx) or use a larger model."
            )
        where = f" (max_tokens {limit})" if limit else ""
        return (
            f"The answer was cut off: the model reached its output limit{where}. Raise it (the "
            'provider\'s "options": {"max_tokens": N} in etcode.json) or ask for a shorter answer.'
        )

    def _start_timer(self, deadline: float | None) -> asyncio.TimerHandle | None:
        if deadline is None:
            return None
        loop = asyncio.get_running_loop()
        return loop.call_at(loop.time() + max(0.0, deadline - time.monotonic()), self._abort.set)

    def _timed_out(self, deadline: float | None) -> bool:
        return not self._interrupted and deadline is not None and time.monotonic() >= deadline

    def _request(self) -> ModelRequest:
        from etcode.engine.alternation import alternating
        from etcode.engine.environment import with_environment

        s = self.settings
        messages = s.images.prepare(self.messages) if s.images is not None else self.messages
        return ModelRequest(
            model=s.model,
            system=s.system,
            messages=alternating(with_environment(messages, s.environment)),
            tools=s.tools.schemas(),
            max_tokens=self._max_tokens(),
            temperature=s.temperature,
            extra=dict(s.extra),
            tools_off=self._tools_off,
        )

    async def _stream_step(self) -> StreamEnd | None:
        """Stream one model answer. Returns None when interrupted (partial text is kept)."""
        request = self._request()
        self._sent_max_tokens = request.max_tokens
        self._sent = request
        stream = self.settings.provider.stream(request).__aiter__()
        partial: list[str] = []
        abort_wait = asyncio.create_task(self._abort.wait())
        try:
            while True:
                next_chunk = asyncio.ensure_future(stream.__anext__())
                done, _ = await asyncio.wait({next_chunk, abort_wait}, return_when=asyncio.FIRST_COMPLETED)
                if next_chunk not in done:
                    next_chunk.cancel()
                    await asyncio.gather(next_chunk, return_exceptions=True)
                    self._keep_partial(partial)
                    return None
                try:
                    chunk = next_chunk.result()
                except StopAsyncIteration:
                    self._keep_partial(partial)
                    raise ProviderError(
                        "the model's stream ended without a final message", kind="stream"
                    ) from None
                except ProviderError:
                    self._keep_partial(partial)
                    raise
                if isinstance(chunk, TextDelta):
                    partial.append(chunk.text)
                    self.emit(ev.TextDeltaEvent(chunk.text))
                elif isinstance(chunk, ReasoningDelta):
                    self.emit(ev.ReasoningDeltaEvent(chunk.text))
                elif isinstance(chunk, RetryNotice):
                    self.emit(
                        ev.RetryEvent(chunk.attempt, chunk.delay, chunk.reason, chunk.status, chunk.attempts)
                    )
                elif isinstance(chunk, StreamEnd):
                    for call in chunk.message.tool_calls:  # a design-trained model's todo_write
                        call.name = self.settings.tools.offered_name(call.name)
                    self.messages.append(chunk.message)
                    return chunk
        finally:
            abort_wait.cancel()
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:  # closing a broken stream must not mask the real error
                    log.debug("closing the provider stream failed", exc_info=True)

    def _keep_partial(self, partial: list[str]) -> None:
        """Keep text already shown to the user in the history (never lose work)."""
        if partial:
            self.messages.append(Message("assistant", [TextPart("".join(partial))]))

    async def _run_capped(self, calls: list[ToolCallPart]) -> list[ToolResultPart]:
        """Run at most ``limits.max_tool_calls`` of one answer's calls; the rest are
        answered "not run" so the model knows to make them again, fewer at a time."""
        cap = self.settings.limits.max_tool_calls
        if len(calls) <= cap:
            return await self._run_tools(calls)
        self.emit(
            ev.WarningEvent(
                f"the model made {len(calls)} tool calls in one answer; running the first {cap} "
                "(limit: max_tool_calls)"
            )
        )
        note = (
            f"Not run: this answer made {len(calls)} tool calls and at most {cap} run per answer. "
            f"Make the calls that are still needed again, at most {cap} at a time."
        )
        skipped = [ToolResultPart(call.id, call.name, note, is_error=True) for call in calls[cap:]]
        return [*await self._run_tools(calls[:cap]), *skipped]

    async def _run_tools(self, calls: list[ToolCallPart]) -> list[ToolResultPart]:
        if self.settings.interceptors:
            return await self._run_intercepted(calls)
        return await self._scheduler().run(calls, self._abort)

    async def _run_intercepted(self, calls: list[ToolCallPart]) -> list[ToolResultPart]:
        """The calls as the scheduler's waves, each through ``before_tool``, its run and
        ``after_tool``: a call that is not read-only is a wave of its own (its hooks run just
        before and after it, as Claude Code's ``PreToolUse`` → call → ``PostToolUse``); a
        run of read-only calls is decided together, runs concurrently, then is followed up.
        An interceptor's permission answer goes with its call (never by id: ids come from
        the model and may repeat). An interceptor that fails stops it: the calls not
        answered yet get "not run"."""
        from etcode.engine import interception
        from etcode.engine.interception import InterceptorError, StopRun

        interceptors = self.settings.interceptors
        plain = self._scheduler()
        answered: list[ToolResultPart | None] = [None] * len(calls)
        try:
            for wave in plain.wave_positions(calls):
                if self._abort.is_set():
                    break
                to_run: list[tuple[int, ToolCallPart, list[str]]] = []
                answers: list[tuple[ToolCallPart, str]] = []
                aborted = False
                for index in wave:
                    call = calls[index]
                    decided = await self._unless_aborted(interception.decide_tool(interceptors, call), None)
                    if decided is None:  # interrupted while a hook ran: this call and the rest are not run
                        aborted = True
                        break
                    changed, reason, answer, context = decided
                    if reason is not None:
                        answered[index] = self._blocked(call, reason)
                        continue
                    changed = replace(changed)  # its own object: the answer is found by identity
                    to_run.append((index, changed, context))
                    if answer is not None:
                        answers.append((changed, answer))
                scheduler = self._scheduler(answers) if answers else plain
                results = await scheduler.run([call for _, call, _ in to_run], self._abort)
                for (index, call, context), result in zip(to_run, results, strict=True):
                    if context:  # what the interceptors added for the model (a hook's additionalContext)
                        result = replace(result, output="\n\n".join([result.output, *context]))
                    answered[index] = await self._unless_aborted(
                        interception.after_tool(interceptors, call, result), result
                    )
                if aborted:
                    break
        except (InterceptorError, StopRun) as err:
            self._intercept_error = err
        note = "Not run: " + (str(self._intercept_error) if self._intercept_error else "the turn ended.")
        return [
            result or ToolResultPart(call.id, call.name, note, is_error=True, summary="Not run")
            for call, result in zip(calls, answered, strict=True)
        ]

    async def _unless_aborted(self, work: Coroutine[object, object, T], aborted: T) -> T:
        """``work`` (an interceptor's: a hook may take long), given up when the run is
        interrupted or times out: it is cancelled (a hook's process group killed) and
        ``aborted`` is returned instead."""
        if self._abort.is_set():
            work.close()
            return aborted
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self._abort.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        return task.result() if not task.cancelled() else aborted

    def _blocked(self, call: ToolCallPart, reason: str) -> ToolResultPart:
        """A call an interceptor blocked: shown and answered like a refused permission."""
        from etcode.engine.interception import blocked_text

        output = blocked_text(reason)
        try:
            arguments = call.parsed_arguments()
        except ValueError:
            arguments = {}
        self.emit(ev.ToolCallStart(call.id, call.name, arguments, ""))
        self.emit(ev.ToolResultEvent(call.id, call.name, True, output, output))
        return ToolResultPart(call.id, call.name, output, is_error=True, summary="Blocked")

    def _scheduler(self, answers: list[tuple[ToolCallPart, str]] | None = None) -> ToolScheduler:
        """The scheduler of a step's calls; ``answers`` are the permission answers
        interceptors gave in advance (``allow``/``ask``), each with its call object."""
        s = self.settings

        def make_context(call: ToolCallPart) -> ToolContext:
            async def check_permission(
                permission: str, patterns: list[str], metadata: JsonObject | None = None
            ) -> None:
                # The call asking goes with the question (an editor shows it on that call).
                asked: JsonObject = {"call_id": call.id, **(metadata or {})}
                answer = next((a for c, a in answers or () if c is call), None)
                if answer is not None:  # an interceptor's answer in advance (hooks)
                    asked["pre_answer"] = answer
                await s.check_permission(permission, patterns, asked)

            return ToolContext(
                session_id=s.session_id,
                call_id=call.id,
                directory=s.directory,
                worktree=s.worktree,
                abort=self._abort,
                emit=self.emit,
                check_permission=check_permission,
                decide_permission=s.decide_permission,
                instructions_for=s.instructions_for,
                state=s.state,
                shell_env=s.shell_env,
                sandbox=s.sandbox,
                add_usage=self.add_usage,
                budget=self._limits,
            )

        return ToolScheduler(
            s.tools, make_context, self.emit, output_filter=s.output_filter, on_call=s.on_call
        )

    async def add_usage(self, usage: Usage, cost: float | None, model: str) -> None:
        """Count usage spent for this run outside its conversation (a Task subagent's
        calls) in its result, the session's totals and cost."""
        self._usage.add(usage)
        window = self.settings.window
        update = window.add_usage(usage, cost) if window is not None else None
        await self._record(lambda recorder: recorder.usage_added(usage, cost, model))
        if update is not None:
            self.emit(update)

    async def _persist(self) -> None:
        if self.settings.on_step is not None:
            await self.settings.on_step(self.messages)
        await self._checkpoint()

    # ---- session: persistence, context window, compaction ------------------------
    async def _checkpoint(self) -> None:
        await self._record(lambda recorder: recorder.checkpoint(self.messages))

    async def _account(self, end: StreamEnd) -> ev.Event | None:
        """Cost and context size of the call that just ended; stores its usage."""
        window, sent = self.settings.window, self._sent
        if window is not None and sent is not None:  # the request as sent (its environment too)
            window.calibrate(end.usage, sent.system, sent.tools, sent.messages)
        cost, update = window.record(end.usage, self.messages) if window is not None else (None, None)
        await self._record(lambda recorder: recorder.step_finished(self._steps, end.usage, cost))
        return update

    async def _auto_compact(self) -> None:
        window = self.settings.window
        if window is None:
            return
        system = self._counted_system()
        if window.auto:  # a newest message that cannot fit ends the run: nothing doomed is sent
            window.check_newest(system, self.settings.tools.schemas(), self.messages)
        if len(self.messages) <= self._compacted_at + 1:
            return
        tokens = window.needs_compaction(system, self.settings.tools.schemas(), self.messages)
        if tokens is not None:
            with contextlib.suppress(ProviderError):  # reported as a failed compaction; the run goes on
                await self._compact(window, "auto", tokens)

    def _counted_system(self) -> list[str]:
        """The system texts and the environment block: what the estimates count."""
        from etcode.engine.environment import counted_system

        return counted_system(self.settings.system, self.settings.environment)

    async def _stream_step_images(self) -> StreamEnd | None:
        """``_stream_step``; when the server refused the request's images (a model not known to
        take them), the same request once more with a notice in place of each image."""
        try:
            return await self._stream_step()
        except ProviderError as err:
            images = self.settings.images
            if images is None or not images.refused(err, self.messages):
                raise
            self.emit(ev.WarningEvent(images.warning(err)))
            end = None
            try:
                end = await self._stream_step()
            finally:  # an error, an interrupt (None) or a cancellation: the images taught nothing
                images.settle(err, end is not None)
            return end

    async def _stream_step_compacting(self) -> StreamEnd | None:
        """``_stream_step``; on a context overflow, compact and try the step once more."""
        try:
            return await self._stream_step_images()
        except ContextOverflowError as err:
            window = self.settings.window
            if window is None or not window.auto:
                raise
            if err.window and window.learn_window(err.window, "overflow error"):  # the server said its size
                self.emit(window.update())
            if self._replan():  # a smaller request for the window learned (lean, tools fitted)
                s = self.settings
                if window.needs_compaction(self._counted_system(), s.tools.schemas(), self.messages) is None:
                    return await self._stream_step_compacting()
            window.check_newest(self._counted_system(), self.settings.tools.schemas(), self.messages, err)
            try:
                compacted = await self._compact(window, "overflow")
            except ProviderError:  # reported as a failed compaction: the overflow ends the run
                raise err from None
            return await self._stream_step_images() if compacted else None

    def _replan(self) -> bool:
        """Re-plan the request for what was learned since (``settings.replan``): the system
        prompt and tools to send from now on. True when they changed (once per change: the
        same window gives the same plan)."""
        s = self.settings
        if s.replan is None:
            return False
        before = (list(s.system), s.tools.lean, [t.name for t in s.tools.schemas()])
        system, events = s.replan(self.messages)
        for event in events:
            self.emit(event)
        if system != s.system:
            self.settings = replace(s, system=list(system))
        return before != (self.settings.system, s.tools.lean, [t.name for t in s.tools.schemas()])

    async def _compact(self, window: LoopWindow, reason: str, tokens: int | None = None) -> bool:
        """Replace the history by a compacted batch (events: compaction start/done, usage).
        Returns False when the user interrupted it (the history is then unchanged)."""
        from etcode.engine.environment import EnvironmentJoined
        from etcode.engine.window import compact_with_events

        s = self.settings
        if s.interceptors:
            from etcode.engine import interception

            await self._unless_aborted(interception.before_compact(s.interceptors, reason), None)
            if self._abort.is_set():
                return False

        async def store(result: CompactionResult) -> None:
            await self._record(lambda recorder: recorder.batch_started(result.messages, reason))
            if result.usage.input_tokens or result.usage.output_tokens:
                await self._record(lambda recorder: recorder.step_finished(0, result.usage, result.cost))

        result = await compact_with_events(
            window,
            self.messages,
            reason=reason,
            # counted with the environment (the room, tokens_after), sent as every request is
            provider=EnvironmentJoined(s.provider, s.environment),
            model=s.model,
            system=self._counted_system(),
            tools=s.tools.schemas(),
            emit=self.emit,
            store=store,
            tokens_before=tokens,
            abort=self._abort,
        )
        if result is None:
            return False
        self._compactions += result.requests
        self._compacted_at = len(result.messages)
        if result.messages is not self.messages:
            self.messages = result.messages
            self._usage.add(result.usage)
            if window.budget.exceeded(result.tokens_after):  # it cannot help: do not repeat it
                self._compacted_at = 1 << 30
        elif result.unchanged:  # a summary that would have grown the request: not again this run
            self._compacted_at = 1 << 30
            if result.usage.input_tokens or result.usage.output_tokens:  # its request was paid for
                self._usage.add(result.usage)
                await self._record(lambda recorder: recorder.step_finished(0, result.usage, result.cost))
        return True

    def _make_result(self, stop_reason: str, error: str | None) -> AgentResult:
        text = ""
        for message in reversed(self.messages):
            if message.role == "assistant" and message.text:
                text = message.text
                break
            if message.role == "user":
                break
        todos_store = self.settings.state.get("todos")
        todos = list(getattr(todos_store, "items", []) or [])
        return AgentResult(
            text=text,
            messages=self.messages,
            usage=self._usage,
            steps=self._steps,
            stop_reason=stop_reason,
            todos=todos,
            session_id=self.settings.session_id,
            error=error,
            compactions=self._compactions,
            exception=self._exception if stop_reason == "error" else None,
            counted_output_tokens=self._limits.tokens,
        )
