"""Run ``etcode`` with an unexpected exception injected at one stage of the second step.

    python tests/inject_fault.py STAGE run "task"

STAGE is ``provider`` (decoding the model's stream), ``tool`` (the scheduler), ``store``
(saving the step's usage), ``renderer`` (showing an event) or ``window`` (context accounting);
``stuck-thread`` makes ReadFile block a worker thread for ever instead, ``deaf-tool`` makes it
ignore cancellation.
The first step always runs normally, so a test can check that it was kept.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def _second_call_fails(
    owner: type, name: str, *, is_async: bool = False, when: Callable[..., bool] | None = None
) -> None:
    original = getattr(owner, name)
    calls = {"n": 0}

    def should_fail(*args: Any) -> bool:
        if when is not None and not when(*args):
            return False
        calls["n"] += 1
        return calls["n"] == 2

    if is_async:

        async def patched_async(*args: Any, **kwargs: Any) -> Any:
            if should_fail(*args):
                raise RuntimeError("injected fault")
            return await original(*args, **kwargs)

        setattr(owner, name, patched_async)
    else:

        def patched(*args: Any, **kwargs: Any) -> Any:
            if should_fail(*args):
                raise RuntimeError("injected fault")
            return original(*args, **kwargs)

        setattr(owner, name, patched)


def install(stage: str) -> None:
    if stage == "provider":
        from etcode.provider.openai import OpenAIStream

        _second_call_fails(OpenAIStream, "__init__")
    elif stage == "tool":
        from etcode.tools.scheduler import ToolScheduler

        _second_call_fails(ToolScheduler, "run", is_async=True)
    elif stage == "store":
        from etcode.session.store import SessionStore

        _second_call_fails(SessionStore, "record_usage")
    elif stage == "renderer":
        from etcode.contract import events as ev
        from etcode.ui.plain import PlainRenderer

        _second_call_fails(PlainRenderer, "handle", when=lambda _self, event: isinstance(event, ev.StepStart))
    elif stage == "window":
        from etcode.engine.window import ContextWindow

        _second_call_fails(ContextWindow, "record")
    elif stage == "stuck-thread":  # ReadFile blocks a worker thread for ever (a hung mount)
        import asyncio
        import threading

        from etcode.tools.read_file import ReadFileTool

        async def stuck(self: Any, params: Any, ctx: Any) -> Any:
            await asyncio.to_thread(threading.Event().wait)

        ReadFileTool.run = stuck  # type: ignore[method-assign]
    elif stage == "deaf-tool":  # ReadFile ignores being cancelled (a badly written MCP tool)
        import asyncio

        from etcode.tools.read_file import ReadFileTool

        async def deaf(self: Any, params: Any, ctx: Any) -> Any:
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    continue

        ReadFileTool.run = deaf  # type: ignore[method-assign]
        import etcode.cli.run as run_module

        run_module.STOP_GRACE_SECONDS = 2.0  # the grace, not its length, is under test (15 s)
    else:
        raise SystemExit(f"unknown stage {stage}")


if __name__ == "__main__":
    install(sys.argv[1])
    sys.argv = ["etcode", *sys.argv[2:]]
    from etcode.cli.main import entry

    entry()
