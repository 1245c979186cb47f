"""The workflow's per-run cache of read-only tool results.

An identical read-only call (same tool, same arguments) is answered from the cache;
any call that is not read-only clears it, before and after it runs, since it may have
changed what the earlier reads saw. Enforced here, in code: the tools the executor
gets are wrapped by :func:`cached_registry`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from pydantic import BaseModel

from etcode.provider.types import ToolSchema
from etcode.tools.base import Tool, ToolContext, ToolResult
from etcode.tools.registry import ToolRegistry
from etcode.util.json_types import JsonObject

CACHED_NOTE = "[Answered from this run's cache: the same call already ran and nothing has changed since.]"


@dataclass
class ToolCache:
    """Results by ``(tool, canonical arguments)``; ``hits`` counts the answers it gave."""

    entries: dict[tuple[str, str], ToolResult] = field(default_factory=dict)
    hits: int = 0
    clears: int = 0

    @staticmethod
    def key(name: str, arguments: JsonObject) -> tuple[str, str]:
        return name, json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)

    def clear(self) -> None:
        if self.entries:
            self.clears += 1
        self.entries.clear()


class CachedTool(Tool):
    """Wraps a tool: read-only calls use the cache, other calls clear it."""

    def __init__(self, inner: Tool, cache: ToolCache) -> None:
        self.inner = inner
        self.cache = cache

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def description(self) -> str:  # type: ignore[override]
        return self.inner.description

    @property
    def is_read_only(self) -> bool:  # type: ignore[override]
        return self.inner.is_read_only

    @property
    def checks_permission(self) -> bool:  # type: ignore[override]
        return self.inner.checks_permission

    def schema(self) -> ToolSchema:
        return self.inner.schema()

    def parse(self, arguments: JsonObject) -> _Parsed:
        return _Parsed.model_construct(raw=arguments, parsed=self.inner.parse(arguments))

    def is_read_only_call(self, arguments: JsonObject) -> bool:
        return self.inner.is_read_only_call(arguments)

    def params_summary(self, params: JsonObject) -> str:
        return self.inner.params_summary(params)

    def result_summary(self, params: JsonObject, result: ToolResult) -> str:
        return self.inner.result_summary(params, result)

    async def run(self, params: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(params, _Parsed)  # what ``parse`` returned
        raw, parsed = params.raw, params.parsed
        if not self.is_read_only_call(raw):
            self.cache.clear()
            try:
                return await self.inner.run(parsed, ctx)
            finally:
                self.cache.clear()
        key = ToolCache.key(self.name, raw)
        cached = self.cache.entries.get(key)
        if cached is not None:
            self.cache.hits += 1
            summary = f"{self.inner.result_summary(raw, cached)} (cached)"
            return replace(cached, output=f"{cached.output}\n\n{CACHED_NOTE}", summary=summary)
        result = await self.inner.run(parsed, ctx)
        if not result.is_error:
            self.cache.entries[key] = result
        return result


class _Parsed(BaseModel):
    """The call's arguments as the model sent them and as the wrapped tool parsed them."""

    raw: JsonObject
    parsed: BaseModel


def cached_registry(tools: ToolRegistry, cache: ToolCache) -> ToolRegistry:
    """A registry of the same tools, each wrapped by :class:`CachedTool`."""
    return ToolRegistry(CachedTool(item, cache) for item in tools)
