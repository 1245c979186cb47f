"""``ask`` rules answered in the editor: ``session/request_permission`` about the call's own
card (its title, kind and input) with allow once, allow always — named by what it allows:
``Always allow rm *`` — and reject. A turn cancelled while the question is open is a reject, so
nothing waits for an answer that will never come."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from acp import Client, helpers
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, ToolCallUpdate

from etcode.acp.live import LiveCalls, StartedCall
from etcode.acp.updates import (
    ToolContent,
    change_locations,
    diff_content,
    tool_kind,
    tool_locations,
    tool_title,
)
from etcode.permission.service import Decision, PermissionRequest
from etcode.util.ids import new_id
from etcode.util.json_types import JsonObject

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT = "reject_once"
#: How long a question waits for its call's card to reach the editor (it is a step of the
#: event stream; the bound only keeps a question without one from waiting for ever).
CALL_SHOWN_SECONDS = 10.0
#: Questions about something other than the call's plain action: their content says what.
_SIDE_QUESTIONS = {"sandbox", "external_directory", "private_network"}
_ALWAYS_WORDING = {
    "edit": "edits to ",
    "read": "reading ",
    "list": "listing ",
    "grep": "searching ",
    "glob": "searching ",
    "webfetch": "fetching ",
    "private_network": "the local network for ",
    "external_directory": "outside the project: ",
    "sandbox": "outside the sandbox: ",
}


def _scope(patterns: list[str], most: int = 6) -> str:
    """Patterns as a label: ``most`` of them (then ``+N more``), each cut at 60 characters."""
    shown = [p if len(p) <= 60 else p[:59] + "…" for p in patterns[:most]]
    more = f" (+{len(patterns) - most} more)" if len(patterns) > most else ""
    return ", ".join(shown) + more


def always_name(request: PermissionRequest) -> str:
    """The "allow always" option named by what it allows from now on (this session):
    ``Always allow rm *``, ``Always allow edits to src/a.py``, ``Always allow mcp_tool``."""
    patterns = request.always or request.patterns
    if request.permission == "bash":
        return f"Always allow {_scope(patterns)}"
    wording = _ALWAYS_WORDING.get(request.permission)
    if wording is not None:
        return f"Always allow {wording}{_scope(patterns)}"
    if all(p == "*" for p in patterns):  # a tool asked by name (MCP, custom): all its calls
        return f"Always allow {request.tool or request.permission}"
    return f"Always allow {request.permission} {_scope(patterns)}"


def options_of(request: PermissionRequest) -> list[PermissionOption]:
    return [
        PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once"),
        PermissionOption(option_id=ALLOW_ALWAYS, name=always_name(request), kind="allow_always"),
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


def _question(request: PermissionRequest) -> str:
    """What is asked, in words, for a question that is not the call's plain action."""
    if request.permission == "sandbox":
        return _describe(request)
    wording = _ALWAYS_WORDING.get(request.permission, f"{request.permission}: ")
    return f"Allow {wording}{_scope(request.patterns)}?"


def _input_of(meta: JsonObject) -> JsonObject:
    """The call's input as the question's details give it (when its card is unknown)."""
    arguments = meta.get("arguments")
    if isinstance(arguments, dict):
        return arguments
    found: JsonObject = {}
    for key, name in (
        ("command", "command"),
        ("description", "description"),
        ("path", "file_path"),
        ("url", "url"),
    ):
        if isinstance(meta.get(key), str):
            found[name] = meta[key]
    return found


def tool_call_of(
    request: PermissionRequest, directory: Path, call: StartedCall | None = None
) -> ToolCallUpdate:
    """The call the question is about (the tool call id when the tool gave it), shown as
    its card shows it — title, kind, input (``call``: the card sent, when known) — with the
    change at its first line for an edit, and the question in words when it is about
    something else than the call's plain action (leaving the sandbox, another folder)."""
    meta = request.metadata
    call_id = meta.get("call_id")
    content: list[ToolContent] = diff_content(meta) if isinstance(meta.get("diff"), str) else []
    if call is not None:
        title, kind, raw_input = tool_title(call.name, call.summary), tool_kind(call.name), call.params
        side = request.tool != call.name or (request.permission == "read" and kind == "edit")
        locations = tool_locations(call.params, directory)
    else:
        title, kind, raw_input = _describe(request), tool_kind(str(request.tool or "")), _input_of(meta)
        side, locations = False, tool_locations({"file_path": meta.get("path")}, directory)
    if "diff" in meta:
        locations = change_locations(meta, directory)
    if (side or request.permission in _SIDE_QUESTIONS) and not content:
        content = [helpers.tool_content(helpers.text_block(_question(request)))]
    return ToolCallUpdate(
        tool_call_id=str(call_id) if call_id else new_id("perm"),
        title=title,
        kind=kind,
        status="pending",
        content=content or None,
        locations=locations or None,
        raw_input=raw_input,
    )


class AcpAsker:
    """Implements etcode's ``Asker`` for one ACP session."""

    def __init__(
        self, conn: Client, session_id: str, directory: Path, calls: LiveCalls | None = None
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.directory = directory
        #: The session's calls the editor was shown (the question shows the one it is about).
        self.calls = calls
        #: Set while the session's turn is being cancelled: open questions end as rejects.
        self.cancelled = asyncio.Event()

    async def ask(self, request: PermissionRequest) -> Decision:
        call_id = request.metadata.get("call_id")
        call = None
        if self.calls is not None and isinstance(call_id, str) and call_id:
            call = await self.calls.call(call_id, CALL_SHOWN_SECONDS, self.cancelled)
        try:
            outcome = await ask_editor(
                self.conn,
                self.session_id,
                tool_call_of(request, self.directory, call),
                options_of(request),
                self.cancelled,
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
