"""Tool classes, as the agent-loop design has them: the ``@tool`` methods of a class become tools.

::

    class Search:
        tool_prefix = "web"          # optional; the class's name otherwise

        @tool
        def find(self, query: str) -> str: ...

    Agent(tools=[Search()])          # or [Search]: made with no arguments

offers ``web_find``, running ``find`` on that object (its state shared by its tools). ``@tool``
on a function whose first parameter is ``self`` or ``cls`` only marks it (the function is
returned, still an ordinary method); ``@staticmethod`` and ``@classmethod`` over ``@tool`` work
too. Public methods only (a name starting with ``_`` is skipped).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from etcode.tools.base import MARK, FunctionTool, Tool

#: The names providers accept for a tool.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def has_tool_methods(cls: type) -> bool:
    """Whether ``cls`` (or a base) has a public ``@tool`` method."""
    return any(True for _ in _marked(cls))


def _marked(cls: type) -> list[tuple[str, object]]:
    """The public ``@tool`` attributes of ``cls`` and its bases (a subclass's wins), in order."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            if attr.startswith("_"):
                continue
            if _options(value) is not None:
                found[attr] = value
            else:
                found.pop(attr, None)  # overridden by an unmarked attribute
    return list(found.items())


def _options(value: object) -> dict[str, Any] | None:
    """``@tool``'s options of a class attribute, None when it is not a tool method."""
    inner = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    if isinstance(inner, FunctionTool):  # @staticmethod over @tool: a FunctionTool already
        return {"description": inner.description, "read_only": inner.is_read_only, "name": None}
    options = getattr(inner, MARK, None) or getattr(value, MARK, None)
    return options if isinstance(options, dict) else None


def class_tools(item: object) -> list[Tool]:
    """The tools of a tool class or of an object of one, named ``{prefix}_{method}``.

    Raises ``TypeError`` (one line) when a class cannot be made with no arguments, when it
    has no ``@tool`` method, or when a name is not one providers accept."""
    if isinstance(item, type):
        cls = item
        try:
            instance = cls()
        except TypeError as err:
            raise TypeError(
                f"tool class {cls.__name__} cannot be made with no arguments ({err}): "
                f"pass an instance, tools=[{cls.__name__}(...)]"
            ) from None
    else:
        cls, instance = type(item), item
    prefix = getattr(cls, "tool_prefix", None) or cls.__name__
    members = _marked(cls)
    if not members:
        raise TypeError(
            f"tool class {cls.__name__} has no @tool method: mark the methods it offers with @tool"
        )
    tools: list[Tool] = []
    for attr, value in members:
        options = _options(value) or {}
        name = f"{prefix}_{options.get('name') or attr}"
        if not TOOL_NAME.match(name):
            raise TypeError(
                f"tool class {cls.__name__}: tool name {name!r} is not one providers accept "
                "(letters, digits, _ and -, at most 64): set tool_prefix"
            )
        builtin = _builtin_named(name)
        if builtin is not None:
            raise TypeError(
                f"tool class {cls.__name__}: its tool {name!r} has the name of the built-in tool "
                f"{builtin}: set tool_prefix"
            )
        raw = value.__func__ if isinstance(value, staticmethod) else None
        # a static method's function as it is; others bound to the object (or class)
        func = raw.func if isinstance(raw, FunctionTool) else getattr(instance, attr)
        tools.append(
            FunctionTool(
                func,
                name=name,
                description=options.get("description"),
                read_only=bool(options.get("read_only", False)),
            )
        )
    return tools


def _builtin_named(name: str) -> str | None:
    """The built-in tool offered under ``name`` or under etcode's name of the design's
    (``todo_write``: ``TodoWrite``), else None."""
    from etcode.contract.tool_names import etcode_tool_name

    offered = etcode_tool_name(name)
    return offered if offered in _builtin_names() or offered != name else None


@functools.cache
def _builtin_names() -> frozenset[str]:
    from etcode.tools.builtin_catalog import builtin_catalog

    return frozenset(entry.name for entry in builtin_catalog())
