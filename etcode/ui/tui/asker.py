"""The TUI's :class:`~etcode.permission.service.Asker`: a modal that answers ``ask`` rules."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from etcode.permission.service import Decision, PermissionRequest

if TYPE_CHECKING:
    from textual.app import App


class TuiAsker:
    """Shows :class:`~etcode.ui.tui.widgets.permission.PermissionScreen` and waits for the
    answer. If the tool is cancelled meanwhile (Esc), the modal is closed."""

    def __init__(self, app: App[int]) -> None:
        self.app = app
        self.asked: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Decision:
        from etcode.ui.tui.widgets.permission import PermissionScreen

        self.asked.append(request)
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        screen = PermissionScreen(request)

        def answered(decision: Decision | None) -> None:
            if not future.done():
                future.set_result(decision or Decision.reject())

        self.app.push_screen(screen, answered)
        try:
            return await future
        except asyncio.CancelledError:
            if self.app.screen is screen:
                future.cancel()
                screen.dismiss(None)
            raise
