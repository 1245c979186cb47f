"""``etcode mcp list``: each configured MCP server, its status and its tools."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.config.schema import McpServerConfig
    from etcode.mcp.config import McpServerSpec

mcp_app = typer.Typer(help="MCP servers configured in etcode.json.", no_args_is_help=True)


@mcp_app.callback()
def _mcp() -> None:
    """MCP servers configured in etcode.json."""


@mcp_app.command("list")
def list_servers(
    as_json: bool = typer.Option(False, "--json", help="Print the servers as one JSON object."),
    trust: bool = typer.Option(
        False, "--trust", help="Trust this project's etcode.json and start its servers."
    ),
) -> None:
    """Start every configured server (as a session would), show its status and tools, stop it.
    A server from a project etcode.json the user has not trusted is listed, not started."""
    import asyncio
    import json
    import sys

    from etcode.config.loader import load_config
    from etcode.instance import Instance
    from etcode.trust.project import trust_files, untrusted

    with Instance.provide(Path.cwd()) as info:
        config = load_config(info.directory, info.worktree)
        found = untrusted(config)
        if found and trust:
            trust_files(config, found)
            found = []
        blocked = {str(f.loc[1]): f.file for f in found if f.loc[0] == "mcp"}
        servers = asyncio.run(_status(config.mcp, info.directory, blocked))
    if as_json:
        sys.stdout.write(json.dumps({"servers": servers}, ensure_ascii=False) + "\n")
        return
    if not servers:
        typer.echo('No MCP servers configured. Add them under "mcp" in etcode.json.')
        return
    for line in format_status(servers):
        typer.echo(line)


async def _status(
    mcp_config: Mapping[str, McpServerConfig], directory: Path, blocked: dict[str, Path] | None = None
) -> list[JsonObject]:
    """Each server's status; ``blocked`` (name → untrusted project file) are not started."""
    from etcode.mcp.config import server_specs
    from etcode.mcp.manager import McpManager

    blocked = blocked or {}
    specs = server_specs(mcp_config)
    if not specs:
        return []
    manager = McpManager([s for s in specs if s.name not in blocked], directory)
    try:
        await manager.start()
        started = {server["name"]: server for server in manager.status()}
    finally:
        await manager.aclose()
    return [started.get(spec.name) or _untrusted(spec, blocked[spec.name]) for spec in specs]


def _untrusted(spec: McpServerSpec, file: Path) -> JsonObject:
    error = f"not started: {file} is not trusted (approve it with `etcode mcp list --trust`)"
    return {
        "name": spec.name,
        "type": spec.type,
        "target": spec.describe(),
        "status": "untrusted",
        "error": error,
        "tools": [],
    }


def format_status(servers: list[JsonObject]) -> list[str]:
    """Human-readable lines: one per server, then one per tool."""
    lines: list[str] = []
    for server in servers:
        status = server["status"]
        if status == "closed":  # listed, then closed by this command
            status = "connected"
        detail = f": {server['error']}" if server.get("error") else ""
        count = len(server["tools"])
        tools = f", {count} tool{'s' if count != 1 else ''}" if status == "connected" else ""
        lines.append(f"{server['name']} ({server['type']}: {server['target']}) {status}{tools}{detail}")
        for item in server["tools"]:
            flag = " [read-only]" if item["read_only"] else ""
            about = (item["description"] or "").strip().splitlines()
            lines.append(f"  ● {item['name']}{flag}" + (f" - {about[0]}" if about else ""))
    return lines
