"""Tool contexts wired to a real permission service, and askers that record questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from etcode.permission import Decision, DenyAsker, PermissionRequest, PermissionService, rules_from_config
from etcode.tools.base import ToolContext
from tests.tool_support import make_ctx


class Answer:
    """An asker that gives one answer (default: no) and keeps every question."""

    def __init__(self, decision: Decision | None = None) -> None:
        self.decision = decision or Decision.reject("recorded")
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Decision:
        self.requests.append(request)
        return self.decision


def ruled_context(
    root: Path, permission: Any = None, asker: Any = None, agent: Any = None, **fields: Any
) -> ToolContext:
    """A context in ``root`` whose checks go through the default rules, ``permission`` (as
    in etcode.json) and ``agent`` rules; ``asker`` answers what asks (default: no)."""
    service = PermissionService(rules_from_config(permission, agent), asker or DenyAsker(), root)
    return make_ctx(root, check_permission=service.check, decide_permission=service.decide, **fields)


def command_decision(directory: Path, permission: Any, command: str, agent: Any = None) -> str:
    """ "allow", "ask" or "deny": what the Bash tool's checks (the shell parser, the rules,
    the files the command names) decide for ``command``; "ask" when the user would be asked."""
    import asyncio

    from etcode.tools.base import PermissionDenied
    from etcode.tools.command_permission import check_command

    asker = Answer()
    try:
        asyncio.run(check_command(ruled_context(directory, permission, asker, agent), command))
    except PermissionDenied:
        return "ask" if asker.requests else "deny"
    return "allow"
