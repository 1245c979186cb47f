"""The public Python API: ``Agent`` and friends. The CLI and the TUI drive this same class.

from etcode import Agent, tool

@tool
def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

agent = Agent("anthropic/claude-sonnet-4-20250514", tools=[add])
result = agent.run_sync("What is 2 + 3? Use the add tool.")
print(result.text)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from etcode.provider.spec import KNOWN_PROVIDERS, ProviderSpec, RetryConfig, default_base_url, env_key_for
from etcode.provider.types import Message
from etcode.session.events import Event, SessionStart
from etcode.session.result import AgentResult, LoopLimits
from etcode.tools.base import Tool, ToolResult, tool
from etcode.util.errors import ConfigError

__all__ = ["Agent", "AgentResult", "LoopLimits", "RetryConfig", "Tool", "ToolResult", "tool"]


def spec_from_arguments(model: str, api_key: str | None, base_url: str | None) -> ProviderSpec:
    """A provider spec from explicit arguments, without any config file.

    A well-known provider id uses its usual endpoint and key variable; an unknown id given
    with a ``base_url`` is taken as OpenAI-compatible.
    """
    provider_id, _, model_id = model.partition("/")
    if not model_id:
        raise ConfigError(f'model "{model}" must be written as provider/model')
    known = KNOWN_PROVIDERS.get(provider_id)
    if known is None and not base_url:
        raise ConfigError(
            f'unknown provider "{provider_id}" in model "{model}": pass base_url= (OpenAI-compatible) '
            f"or use one of: {', '.join(KNOWN_PROVIDERS)}"
        )
    wire = known.type if known else "openai"
    url = (base_url or default_base_url(provider_id) or "").rstrip("/")
    key = api_key or env_key_for(provider_id)
    if not key and known is not None and known.needs_key:
        raise ConfigError(f'No API key for provider "{provider_id}": set {known.key_env[0]} or pass api_key=')
    return ProviderSpec(id=provider_id, type=wire, base_url=url, model=model_id, api_key=key)


class Agent:
    """A coding agent: a model, a system prompt, tools and a conversation.

    ``model`` is ``"provider/model"``; when omitted it comes from ``etcode.json`` /
    ``ETCODE_MODEL`` / the environment's API keys. Successive ``run`` calls continue
    the same conversation (``reset()`` starts over). Built-in tools are included unless
    ``builtin_tools=False``; ``tools`` adds plain typed functions or ``Tool`` objects.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        builtin_tools: bool = True,
        system_prompt: str = "",
        name: str = "etcode",
        agent: str | None = None,
        limits: LoopLimits | None = None,
        retry: RetryConfig | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        directory: str | Path | None = None,
        config: Any = None,
        provider: Any = None,
        asker: Any = None,
        session_id: str | None = None,
    ) -> None:
        self.model = model
        self.api_key = api_key
        self.base_url = base_url
        self.custom_tools = [t if isinstance(t, Tool) else tool(t) for t in tools]
        self.builtin_tools = builtin_tools
        self.system_prompt = system_prompt
        self.name = name
        self.agent_name = agent
        self.limits = limits
        self.retry = retry
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.directory = Path(directory).resolve() if directory else None
        self.config = config
        self.provider = provider
        self.asker = asker
        self.history: list[Message] = []
        from etcode.util.ids import new_id

        self.session_id = session_id or new_id("ses")
        self.state: dict[str, Any] = {}
        self.last_result: AgentResult | None = None
        self._runtime: Any = None
        self._current: Any = None

    # ---- running -----------------------------------------------------------------
    async def stream(self, task: str) -> AsyncIterator[Event]:
        """Run one task, yielding every event; the last is ``DoneEvent``."""
        from etcode.session.loop import AgentLoop

        runtime = await self._prepare()
        loop = AgentLoop(runtime.loop_settings(self), self.history, Message.user(task))
        self._current = loop
        try:
            yield SessionStart(
                self.session_id, runtime.spec.full_id, runtime.agent_name, str(runtime.directory)
            )
            for warning in runtime.take_warnings():
                yield warning
            async for event in loop.events():
                yield event
        finally:
            self._current = None
            if loop.result is not None:
                self.history = list(loop.result.messages)
            self.last_result = loop.result

    async def run(self, task: str) -> AgentResult:
        """Run one task to the end and return its result."""
        async for _ in self.stream(task):
            pass
        if self.last_result is None:  # pragma: no cover - the loop always sets it
            raise RuntimeError("the run ended without a result")
        return self.last_result

    def run_sync(self, task: str) -> AgentResult:
        """``run`` for code that is not async (each call has its own event loop, so the
        HTTP client is closed at the end; the conversation is kept)."""

        async def once() -> AgentResult:
            try:
                return await self.run(task)
            finally:
                await self.aclose()

        return asyncio.run(once())

    def interrupt(self) -> None:
        """Stop the running task as soon as possible (the result says ``interrupted``)."""
        if self._current is not None:
            self._current.interrupt()

    def reset(self) -> None:
        """Forget the conversation (tools and settings stay)."""
        self.history = []
        self.state = {}

    async def aclose(self) -> None:
        if self._runtime is not None:
            await self._runtime.aclose()
            self._runtime = None

    async def _prepare(self) -> Any:
        if self._runtime is None:
            from etcode.session.runtime import Runtime

            self._runtime = await Runtime.create(self)
        return self._runtime
