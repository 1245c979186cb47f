"""etcode: a terminal coding agent.

The public API is exported lazily so that ``import etcode`` (and ``etcode --version``)
stays light: nothing heavy is imported until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "Agent": "etcode.api",
    "AgentResult": "etcode.api",
    "LoopLimits": "etcode.api",
    "RetryConfig": "etcode.api",
    "Tool": "etcode.api",
    "ToolResult": "etcode.api",
    "tool": "etcode.api",
    "TodoItem": "etcode.tools.todo",
    "TodoStore": "etcode.tools.todo",
    "create_todo_tool": "etcode.tools.todo",
    "TODO_UPDATE": "etcode.tools.todo",
    "todo_update_event": "etcode.tools.todo",
    "TodoUpdate": "etcode.session.events",
}

__all__ = [
    "TODO_UPDATE",
    "Agent",
    "AgentResult",
    "LoopLimits",
    "RetryConfig",
    "TodoItem",
    "TodoStore",
    "TodoUpdate",
    "Tool",
    "ToolResult",
    "__version__",
    "create_todo_tool",
    "todo_update_event",
    "tool",
]

if TYPE_CHECKING:  # pragma: no cover
    from etcode.api import Agent, AgentResult, LoopLimits, RetryConfig, Tool, ToolResult, tool
    from etcode.session.events import TodoUpdate
    from etcode.tools.todo import TODO_UPDATE, TodoItem, TodoStore, create_todo_tool, todo_update_event


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'etcode' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
