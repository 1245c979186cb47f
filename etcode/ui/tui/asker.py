"""The TUI's :class:`~etcode.permission.service.Asker`: a modal that answers ``ask`` rules."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from etcode.permission.service import Decision, PermissionRequest

if TYPE_CHECKING:
    from textual.app import App


class ApprovalListener(Protocol):
    """Told when a tool call's permission question opens and how it was answered (the
    call's block says ``waiting for approval`` meanwhile, its clock starts on approval)."""

    def approval_asked(self, call_id: str) -> None: ...

    def approval_answered(self, call_id: str, allowed: bool) -> None: ...


class TuiAsker:
    """Shows :class:`~etcode.ui.tui.widgets.permission.PermissionScreen` and waits for the
    answer. If the tool is cancelled meanwhile (Esc), the modal is closed."""

    def __init__(self, app: App[int], listener: ApprovalListener | None = None) -> None:
        self.app = app
        self.asked: list[PermissionRequest] = []
        self.listener = listener

    async def ask(self, request: PermissionRequest) -> Decision:
        from etcode.ui.tui.widgets.permission import PermissionScreen

        self.asked.append(request)
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        screen = PermissionScreen(request)

        def answered(decision: Decision | None) -> None:
            if not future.done():
                future.set_result(decision or Decision.reject())

        call_id = str(request.metadata.get("call_id") or "")  # the call asking (set by the loop)
        if self.listener is not None and call_id:
            self.listener.approval_asked(call_id)
        allowed = False
        self.app.push_screen(screen, answered)
        try:
            decision = await future
            allowed = decision.kind != "reject"
            return decision
        except asyncio.CancelledError:
            if self.app.screen is screen:
                future.cancel()
                screen.dismiss(None)
            raise
        finally:
            if self.listener is not None and call_id:
                self.listener.approval_answered(call_id, allowed)
