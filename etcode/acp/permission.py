"""``ask`` rules answered in the editor: ``session/request_permission`` with allow once,
allow always and reject. A turn cancelled while the question is open is a reject, so
nothing waits for an answer that will never come."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from acp import Client
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, ToolCallUpdate

from etcode.acp.updates import diff_content, tool_kind, tool_locations, tool_title
from etcode.permission.service import Decision, PermissionRequest
from etcode.util.ids import new_id

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT = "reject_once"

OPTIONS = [
    PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once"),
    PermissionOption(option_id=ALLOW_ALWAYS, name="Always allow", kind="allow_always"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
]


def _describe(request: PermissionRequest) -> str:
    """The title of the question: what would be allowed."""
    meta = request.metadata
    what = meta.get("command") or meta.get("path") or ", ".join(request.patterns)
    tool = request.tool or meta.get("via") or request.permission
    if request.permission == "sandbox":
        return f"Run outside the sandbox: {what}"
    return tool_title(str(tool), str(what))


def tool_call_of(request: PermissionRequest, directory: Path) -> ToolCallUpdate:
    """The call the question is about (the tool call id when the tool gave it)."""
    meta = request.metadata
    call_id = meta.get("call_id")
    content = diff_content(meta) if isinstance(meta.get("diff"), str) else []
    params = {key: meta[key] for key in ("path",) if isinstance(meta.get(key), str)}
    return ToolCallUpdate(
        tool_call_id=str(call_id) if call_id else new_id("perm"),
        title=_describe(request),
        kind=tool_kind(str(request.tool or "")),
        status="pending",
        content=content or None,
        locations=tool_locations(params, directory) or None,
        raw_input={"permission": request.permission, "patterns": request.patterns, "always": request.always},
    )


class AcpAsker:
    """Implements etcode's ``Asker`` for one ACP session."""

    def __init__(self, conn: Client, session_id: str, directory: Path) -> None:
        self.conn = conn
        self.session_id = session_id
        self.directory = directory
        #: Set while the session's turn is being cancelled: open questions end as rejects.
        self.cancelled = asyncio.Event()

    async def ask(self, request: PermissionRequest) -> Decision:
        try:
            outcome = await ask_editor(
                self.conn, self.session_id, tool_call_of(request, self.directory), OPTIONS, self.cancelled
            )
        except TurnCancelled:
            return Decision.reject("the turn was cancelled")
        except Exception as err:  # the client failed to answer: nothing is allowed
            return Decision.reject(f"the editor did not answer the permission request ({err})")
        if isinstance(outcome, AllowedOutcome):
            if outcome.option_id == ALLOW_ONCE:
                return Decision.allow_once()
            if outcome.option_id == ALLOW_ALWAYS:
                return Decision.allow_always()
            if outcome.option_id == REJECT:
                return Decision.reject("rejected by the user")
            return Decision.reject(f"unknown answer {outcome.option_id!r} from the editor")
        return Decision.reject("the user cancelled the permission request")


class TurnCancelled(Exception):
    """The turn was cancelled while the editor had the question open."""


async def ask_editor(
    conn: Client,
    session_id: str,
    tool_call: ToolCallUpdate,
    options: list[PermissionOption],
    cancelled: asyncio.Event,
) -> AllowedOutcome | DeniedOutcome:
    """``session/request_permission``; returns the response's outcome. Raises
    :class:`TurnCancelled` when ``cancelled`` is set first (the request is abandoned) and
    whatever the client's failure to answer raised."""
    if cancelled.is_set():
        raise TurnCancelled
    asking = asyncio.ensure_future(
        conn.request_permission(session_id=session_id, tool_call=tool_call, options=options)
    )
    cancel = asyncio.ensure_future(cancelled.wait())
    try:
        done, _ = await asyncio.wait({asking, cancel}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancel.cancel()
    if asking not in done:
        asking.cancel()
        with contextlib.suppress(BaseException):
            await asking
        raise TurnCancelled
    return asking.result().outcome
