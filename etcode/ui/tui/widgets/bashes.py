"""``/bashes``: the session's background processes, live, with ``k`` to kill the highlighted one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from etcode.ui.tui.background import process_row

if TYPE_CHECKING:
    from collections.abc import Callable

    from etcode.tools.background import BackgroundInfo, BackgroundProcesses

TITLE = "Background processes (↑↓ move, k kill, Esc close)"


class BashesScreen(ModalScreen[str | None]):
    """Lists the processes (oldest first); rows follow starts and exits as they happen and
    the run times tick once a second while it is open. Dismisses with None."""

    BINDINGS = [
        Binding("escape", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
        Binding("k", "kill", "Kill", show=False),
        Binding("delete", "kill", "Kill", show=False),
    ]

    def __init__(self, processes: BackgroundProcesses, ended: dict[str, float]) -> None:
        super().__init__()
        self.processes = processes
        self.ended = ended
        self.killing: set[str] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="bashes-dialog"):
            yield Static(TITLE, id="bashes-title")
            yield OptionList(*self._options(), id="bashes-list")

    def on_mount(self) -> None:
        self._unsubscribe = self.processes.subscribe(self._changed)
        self._timer = self.set_interval(1.0, self.refresh_rows)
        self.query_one(OptionList).focus()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _changed(self, info: BackgroundInfo) -> None:
        if info.status != "running":
            self.ended.setdefault(info.id, _now())
            self.killing.discard(info.id)
        self.refresh_rows()

    def _options(self) -> list[Option]:
        now = _now()
        options = []
        for info in self.processes.list():
            row = process_row(info, self.ended.get(info.id), now)
            if info.id in self.killing and info.status == "running":
                row += "  (killing…)"
            options.append(Option(row, id=info.id))
        return options

    def refresh_rows(self) -> None:
        """Show the processes as they are now, the highlight kept on the same one."""
        if not self.is_mounted:
            return
        listing = self.query_one(OptionList)
        highlighted = listing.highlighted
        chosen = listing.get_option_at_index(highlighted).id if highlighted is not None else None
        options = self._options()
        listing.clear_options()
        listing.add_options(options)
        ids = [option.id for option in options]
        if ids:
            listing.highlighted = ids.index(chosen) if chosen in ids else min(highlighted or 0, len(ids) - 1)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()  # Enter on a row does nothing: killing takes k

    def action_kill(self) -> None:
        """End the highlighted process's group (a finished one: nothing to do)."""
        listing = self.query_one(OptionList)
        if listing.highlighted is None:
            return
        process_id = listing.get_option_at_index(listing.highlighted).id
        if process_id is None:
            return
        info = next((i for i in self.processes.list() if i.id == process_id), None)
        if info is None or info.status != "running":
            self.notify(f"{process_id} is not running", timeout=3)
            return
        self.killing.add(process_id)
        self.refresh_rows()
        self.run_worker(self._kill(process_id), group="bashes-kill", exit_on_error=False)

    async def _kill(self, process_id: str) -> None:
        await self.processes.kill(process_id)  # the listener shows the end
        self.killing.discard(process_id)
        self.refresh_rows()

    def action_close(self) -> None:
        self.dismiss(None)


def _now() -> float:
    import time

    return time.time()
