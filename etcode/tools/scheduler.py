"""Runs one answer's tool calls: read-only calls together, writes alone, results in order.

The calls are split into waves: consecutive read-only calls form one wave and run
concurrently (at most ``max_concurrency`` at once); any other call is a wave of its own.
One call's failure never cancels the others. When ``abort`` is set, running tools are
cancelled and every call still gets exactly one result.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from etcode.contract.events import Event, ToolCallStart, ToolResultEvent
from etcode.contract.tools import ToolAbilities
from etcode.provider.types import ToolCallPart, ToolResultPart
from etcode.security.redact import redact, redact_known, redact_known_data
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.tools.registry import ToolRegistry
from etcode.tools.shown import kept_data
from etcode.util.json_types import JsonObject
from etcode.util.text import clean_text

log = logging.getLogger("etcode.scheduler")

INTERRUPTED = "Tool call interrupted by the user before it finished."
NOT_RUN = "Tool call not run: the user interrupted the turn."

ContextFactory = Callable[[ToolCallPart], ToolContext]
OutputFilter = Callable[[str, str], str]  # (tool name, output) -> output for the model


class ToolScheduler:
    def __init__(
        self,
        registry: ToolRegistry,
        make_context: ContextFactory,
        emit: Callable[[Event], None],
        *,
        max_concurrency: int = 10,
        output_filter: OutputFilter | None = None,
        on_call: Callable[[str, str, str], str | None] | None = None,
    ) -> None:
        self.registry = registry
        self.make_context = make_context
        self.emit = emit
        self.max_concurrency = max_concurrency
        self.output_filter = output_filter
        #: Called with (name, raw arguments) before each call; a returned text is appended
        #: to that call's result (used to flag repeated identical calls).
        self.on_call = on_call

    def plan(self, calls: list[ToolCallPart]) -> list[list[ToolCallPart]]:
        """Split calls into waves: runs of read-only calls, and single other calls."""
        return [[calls[index] for index in wave] for wave in self.wave_positions(calls)]

    def wave_positions(self, calls: list[ToolCallPart]) -> list[list[int]]:
        """:meth:`plan`'s waves as positions in ``calls``."""
        waves: list[list[int]] = []
        last_read_only = False  # whether the last wave is one of read-only calls
        for index, call in enumerate(calls):
            read_only = self.call_is_read_only(call)
            if read_only and last_read_only:
                waves[-1].append(index)
            else:
                waves.append([index])
            last_read_only = read_only
        return waves

    def call_is_read_only(self, call: ToolCallPart) -> bool:
        """The tool's ``is_read_only_call(arguments)`` (``is_read_only`` unless the tool
        says per call, e.g. ``Task`` is read-only only for a read-only subagent)."""
        tool = self.registry.get(call.name)
        return tool is not None and _read_only_call(tool, call)

    async def run(self, calls: list[ToolCallPart], abort: asyncio.Event) -> list[ToolResultPart]:
        """Run every call; return exactly one result per call, in call order."""
        results: dict[str, ToolResultPart] = {}
        started: set[str] = set()
        semaphore = asyncio.Semaphore(self.max_concurrency)
        waves = self.plan(calls)
        for number, wave in enumerate(waves, 1):
            if abort.is_set():
                break
            if len(wave) > 1:
                log.debug("wave %d/%d: %d read-only calls concurrently", number, len(waves), len(wave))
            else:
                log.debug("wave %d/%d: %s alone", number, len(waves), wave[0].name)
            tasks = [asyncio.create_task(self._guarded(call, semaphore, results, started)) for call in wave]
            await self._wait_or_abort(tasks, abort)
        for call in calls:
            if call.id not in results:
                output = INTERRUPTED if call.id in started else NOT_RUN
                shown = "Interrupted" if call.id in started else None
                results[call.id] = ToolResultPart(call.id, call.name, output, is_error=True, summary=shown)
                if call.id in started:
                    self.emit(ToolResultEvent(call.id, call.name, True, "Interrupted", output))
        return [results[call.id] for call in calls]

    async def _wait_or_abort(self, tasks: list[asyncio.Task[None]], abort: asyncio.Event) -> None:
        abort_wait = asyncio.create_task(abort.wait())
        try:
            pending: set[asyncio.Task[object]] = set(tasks)
            while pending:
                done, pending = await asyncio.wait(
                    pending | {abort_wait}, return_when=asyncio.FIRST_COMPLETED
                )
                if abort_wait in done:
                    pending.discard(abort_wait)
                    for task in pending:
                        task.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                    return
                pending.discard(abort_wait)
        finally:
            abort_wait.cancel()

    async def _guarded(
        self,
        call: ToolCallPart,
        semaphore: asyncio.Semaphore,
        results: dict[str, ToolResultPart],
        started: set[str],
    ) -> None:
        async with semaphore:
            try:
                results[call.id] = await self.execute(call, started)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a bug outside the tool (arguments, summaries...)
                log.debug("running %s failed", call.name, exc_info=True)
                message = f"{call.name} failed: {type(err).__name__}: {err}"
                line = _first_line(message)
                results[call.id] = ToolResultPart(call.id, call.name, message, is_error=True, summary=line)
                self.emit(ToolResultEvent(call.id, call.name, True, line, message))

    async def execute(self, call: ToolCallPart, started: set[str] | None = None) -> ToolResultPart:
        """Run one call and turn every outcome (including bad input) into a result."""
        tool = self.registry.get(call.name)
        left_out = self.registry.left_out.get(call.name)
        if left_out is not None:  # not offered: the window is too small for it
            return self._early_error(call, left_out)
        if tool is None:
            known = ", ".join(self.registry.names()) or "none"
            return self._early_error(call, f"Unknown tool '{call.name}'. Available tools: {known}.")
        try:
            raw_args = call.parsed_arguments()
        except ValueError as err:
            return self._early_error(
                call,
                f"Invalid arguments for {call.name}: not a JSON object ({err}). Call it again with valid JSON.",
            )
        try:
            params = tool.parse(raw_args)
        except ToolError as err:
            return self._early_error(call, str(err), raw_args)

        if started is not None:
            started.add(call.id)
        summary = _safe(lambda: tool.params_summary(raw_args), "")
        self.emit(ToolCallStart(call.id, call.name, raw_args, summary))
        ctx = self.make_context(call)
        try:
            if not tool.checks_permission:
                await ctx.check_permission(call.name, ["*"], {"tool": call.name, "arguments": raw_args})
            result = await tool.run(params, ctx)
        except ToolError as err:
            result = ToolResult(str(err) or f"{call.name} failed", is_error=True)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a tool bug must not kill the loop
            log.debug("tool %s raised", call.name, exc_info=True)
            result = ToolResult(f"{call.name} failed: {type(err).__name__}: {err}", is_error=True)
        return self._finish(tool, call, raw_args, result)

    def _finish(
        self, tool: Tool, call: ToolCallPart, raw_args: JsonObject, result: ToolResult
    ) -> ToolResultPart:
        # Every tool's output passes here: the known secret values (configured keys,
        # secret-named environment variables) are replaced before the model, the session
        # store or the saved full output (``output_filter``) get it.
        output = redact_known(clean_text(result.output))
        data = redact_known_data(result.data) if result.data else result.data
        if output is not result.output or data is not result.data:
            result = ToolResult(output, result.is_error, data, result.summary, result.images)
        if self.output_filter is not None:
            output = self.output_filter(call.name, output)
        if self.on_call is not None:
            note = self.on_call(call.name, json.dumps(raw_args, sort_keys=True), output)
            if note:
                output = f"{output}\n\n{note}"
        summary = _safe(lambda: tool.result_summary(raw_args, result), "Error" if result.is_error else "Done")
        self.emit(ToolResultEvent(call.id, call.name, result.is_error, summary, output, data))
        return ToolResultPart(
            call.id,
            call.name,
            output,
            is_error=result.is_error,
            summary=summary,
            data=kept_data(data),
            images=result.images or None,
        )

    def _early_error(
        self, call: ToolCallPart, message: str, params: JsonObject | None = None
    ) -> ToolResultPart:
        """A call that never ran: still shown (head + error line) and answered."""
        self.emit(ToolCallStart(call.id, call.name, params or {}, ""))
        line = _first_line(message)
        self.emit(ToolResultEvent(call.id, call.name, True, line, message))
        return ToolResultPart(call.id, call.name, message, is_error=True, summary=line)


def _read_only_call(tool: ToolAbilities, call: ToolCallPart) -> bool:
    try:
        arguments = call.parsed_arguments()
    except ValueError:  # not a JSON object: the tool's own flag; the call fails on its own
        return tool.is_read_only
    try:
        return tool.is_read_only_call(arguments)
    except Exception:  # arguments the tool cannot read: run it alone, it will fail on its own
        return False


def _first_line(text: str) -> str:
    text = redact(text)  # before the cut
    line = text.strip().splitlines()[0] if text.strip() else "Error"
    return line if len(line) <= 100 else line[:99] + "…"


def _safe(make: Callable[[], str], fallback: str) -> str:
    try:
        return make()
    except Exception:  # summaries are cosmetic; never let them break a run
        log.debug("summary generator failed", exc_info=True)
        return fallback
