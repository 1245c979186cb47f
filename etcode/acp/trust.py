"""Project trust in the editor: a session whose folder has an ``etcode.json`` with risky
settings not approved (``trust/project.py``) starts nothing until its first prompt asks
the editor, with ``session/request_permission`` naming the file and each setting. Allow
for this session, trust the file (remembered per sha256 as the chat's dialog does: a
changed file asks again), or refuse (the prompt fails; the next one asks again)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acp import Client, RequestError
from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    PermissionOption,
    TextContentBlock,
    ToolCallLocation,
    ToolCallUpdate,
)

from etcode.acp.permission import TurnCancelled, ask_editor
from etcode.config.trust import Finding, describe
from etcode.trust.project import trust_files
from etcode.util.errors import EtcodeError
from etcode.util.ids import new_id

if TYPE_CHECKING:
    from etcode.config.schema import Config

log = logging.getLogger("etcode.acp")

TRUST_SESSION = "trust_session"
TRUST_FOLDER = "trust_folder"
REFUSE = "refuse"

OPTIONS = [
    PermissionOption(option_id=TRUST_SESSION, name="Allow for this session", kind="allow_once"),
    PermissionOption(option_id=TRUST_FOLDER, name="Trust this file (until it changes)", kind="allow_always"),
    PermissionOption(option_id=REFUSE, name="Refuse", kind="reject_once"),
]


@dataclass
class PendingTrust:
    """A session's unapproved project settings: ``config`` as loaded (its files' sha256)."""

    config: Config
    findings: list[Finding]

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(str(f.file) for f in self.findings))


def question(pending: PendingTrust) -> ToolCallUpdate:
    """The permission request: the file(s) in the title and locations, each setting in
    the content."""
    files = pending.files
    lines = [
        "This project's config would send your keys elsewhere or run programs:",
        *describe(pending.findings),
    ]
    return ToolCallUpdate(
        tool_call_id=new_id("trust"),
        title=f"Trust the project config {', '.join(files)}?",
        kind="other",
        status="pending",
        content=[
            ContentToolCallContent(
                type="content", content=TextContentBlock(type="text", text="\n".join(lines))
            )
        ],
        locations=[ToolCallLocation(path=path) for path in files],
        raw_input={"trust": files, "settings": [str(f) for f in pending.findings]},
    )


def refusal(pending: PendingTrust, why: str) -> RequestError:
    """The prompt's error when the settings were not approved: one line naming them."""
    settings = "; ".join(str(f) for f in pending.findings)
    files = ", ".join(pending.files)
    message = f"untrusted project config {files} ({why}): {settings}; nothing was started or sent"
    return RequestError(
        -32603, message, {"files": pending.files, "settings": [str(f) for f in pending.findings]}
    )


async def settle(conn: Client, session_id: str, pending: PendingTrust, cancelled: asyncio.Event) -> bool:
    """Ask the editor. True: approved (remembered when the user trusted the file); False:
    the turn was cancelled meanwhile. Raises :class:`RequestError` when refused."""
    try:
        outcome = await ask_editor(conn, session_id, question(pending), OPTIONS, cancelled)
    except TurnCancelled:
        return False
    except Exception as err:  # the editor could not ask: nothing is approved
        raise refusal(pending, f"the editor did not answer the permission request: {err}") from None
    chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else None
    if chosen == TRUST_FOLDER:
        try:
            await asyncio.to_thread(trust_files, pending.config, pending.findings)
        except EtcodeError as err:  # approved for this session all the same
            log.warning("could not remember the trust: %s", err)
        return True
    if chosen == TRUST_SESSION:
        return True
    raise refusal(
        pending, "refused in the editor" if chosen == REFUSE or chosen is None else f"answer {chosen!r}"
    )


def pending_of(config: Config, findings: Sequence[Finding]) -> PendingTrust | None:
    return PendingTrust(config, list(findings)) if findings else None
