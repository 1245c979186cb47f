"""The set of tools a session offers, by name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from etcode.contract.tool_names import etcode_tool_name
from etcode.provider.types import ToolSchema
from etcode.tools.base import Tool


class ToolRegistry:
    """Tools by name, in the order given (the order the model sees them). ``lean``: the
    model sees the short descriptions (``tools/lean.py``); ``offered`` False: it sees none
    (the server's chat template cannot use tools); ``left_out``: tools the model is not shown
    (the window is too small for them: ``wiring/tool_fit.py``), each with what a call of it
    is answered."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self.lean = False
        self.offered = True
        self.left_out: dict[str, str] = {}
        #: What the tools were fitted to the window for (``wiring/tool_fit.FitState``).
        self.fit_state: object = None
        for item in tools:
            self.add(item)

    def add(self, item: Tool) -> None:
        self._tools[item.name] = item

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def offered_name(self, name: str) -> str:
        """The tool a call of ``name`` runs: ``name`` when a tool has it, else the tool
        offered under etcode's name of the agent-loop design's (``todo_write`` →
        ``TodoWrite``: a model trained on the design calls it so)."""
        if name in self._tools:
            return name
        offered = etcode_tool_name(name)
        return offered if offered in self._tools else name

    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def schemas(self) -> list[ToolSchema]:
        """What the model is shown (see ``lean`` and ``offered``)."""
        if not self.offered:
            return []
        full = [t.schema() for t in self._tools.values() if t.name not in self.left_out]
        if not self.lean:
            return full
        from etcode.tools.lean import lean_schemas

        return lean_schemas(full)


def builtin_tools() -> list[Tool]:
    """Fresh instances of every built-in tool, in the order the model sees them. Each is
    offered from the generated catalog (``tools/builtin_catalog.py``) and its module imported on
    its first call: a run that never edits a file never imports the Edit tool."""
    from etcode.tools.builtin_catalog import builtin_catalog
    from etcode.tools.lazy import LazyTool

    return [LazyTool(entry) for entry in builtin_catalog()]
