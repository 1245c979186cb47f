"""The configured MCP servers as plain specs (validated config → what to start)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from etcode.util.json_types import JsonValue

#: Start-up limit when a server sets no ``timeout`` (seconds).
DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True)
class McpServerSpec:
    """One server: ``local`` (``command`` run over stdio) or ``remote`` (streamable HTTP)."""

    name: str
    type: Literal["local", "remote"]
    command: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    enabled: bool = True
    timeout: float = DEFAULT_TIMEOUT

    def describe(self) -> str:
        """``sys.executable -m x`` or the URL: what the server is, in one line."""
        return " ".join(self.command) if self.type == "local" else str(self.url)


def _get(obj: object, key: str, default: JsonValue = None) -> JsonValue:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def server_specs(mcp_config: Mapping[str, JsonValue] | None) -> list[McpServerSpec]:
    """Specs for every configured server (disabled ones included, ``enabled=False``),
    from ``Config.mcp`` (validated models) or plain dicts of the same shape."""
    specs: list[McpServerSpec] = []
    for name, entry in (mcp_config or {}).items():
        command = tuple(_get(entry, "command") or ())
        url = _get(entry, "url")
        kind = _get(entry, "type") or ("local" if command else "remote")
        timeout_ms = _get(entry, "timeout")
        specs.append(
            McpServerSpec(
                name=str(name),
                type="remote" if kind == "remote" else "local",
                command=command,
                environment=dict(_get(entry, "environment") or {}),
                url=url,
                headers=dict(_get(entry, "headers") or {}),
                enabled=_get(entry, "enabled", True) is not False and bool(command or url),
                timeout=float(timeout_ms) / 1000 if timeout_ms else DEFAULT_TIMEOUT,
            )
        )
    return specs
