"""``etcode mcp list``: each configured MCP server, its status and its tools."""

from __future__ import annotations

from typing import Any

import typer

mcp_app = typer.Typer(help="MCP servers configured in etcode.json.", no_args_is_help=True)


@mcp_app.callback()
def _mcp() -> None:
    """MCP servers configured in etcode.json."""


@mcp_app.command("list")
def list_servers(
    as_json: bool = typer.Option(False, "--json", help="Print the servers as one JSON object."),
) -> None:
    """Start every configured server (as a session would), show its status and tools, stop it."""
    import asyncio
    import json
    import sys
    from pathlib import Path

    from etcode.config.loader import load_config
    from etcode.instance import Instance

    with Instance.provide(Path.cwd()) as info:
        config = load_config(info.directory, info.worktree)
        servers = asyncio.run(_status(config.mcp, info.directory))
    if as_json:
        sys.stdout.write(json.dumps({"servers": servers}, ensure_ascii=False) + "\n")
        return
    if not servers:
        typer.echo('No MCP servers configured. Add them under "mcp" in etcode.json.')
        return
    for line in format_status(servers):
        typer.echo(line)


async def _status(mcp_config: Any, directory: Any) -> list[dict[str, Any]]:
    from etcode.mcp.config import server_specs
    from etcode.mcp.manager import McpManager

    specs = server_specs(mcp_config)
    if not specs:
        return []
    manager = McpManager(specs, directory)
    try:
        await manager.start()
        return manager.status()
    finally:
        await manager.aclose()


def format_status(servers: list[dict[str, Any]]) -> list[str]:
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
