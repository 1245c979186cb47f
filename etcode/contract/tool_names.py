"""The agent-loop design's names of etcode's built-in tools.

A program or a model trained on the design names the todo tool ``todo_write``; etcode offers
it as ``TodoWrite``. The design's name is accepted where a tool is named: an agent's ``tools``
settings and permission rules, a model's call (run as the tool offered under etcode's name),
and the step-level events (``LoopEvent.data["tool"]`` is the design's name, as its renderers
expect).
"""

from __future__ import annotations

from etcode.util.json_types import JsonValue

#: design name -> etcode name
DESIGN_NAMES: dict[str, str] = {"todo_write": "TodoWrite"}
#: etcode name -> design name
ETCODE_TO_DESIGN: dict[str, str] = {etcode: design for design, etcode in DESIGN_NAMES.items()}


def etcode_tool_name(name: str) -> str:
    """``name`` as etcode offers the tool (``todo_write`` → ``TodoWrite``; others as given)."""
    return DESIGN_NAMES.get(name, name)


def design_tool_name(name: str) -> str:
    """``name`` as the agent-loop design has it (``TodoWrite`` → ``todo_write``; others as given)."""
    return ETCODE_TO_DESIGN.get(name, name)


def step_tool(name: str) -> tuple[str, dict[str, JsonValue]]:
    """A called tool as the step-level events name it: its ``tool`` (the design's name when
    it has one) and the extra data keys (``etcode_name``, etcode's, when that differs)."""
    design = design_tool_name(name)
    return (design, {"etcode_name": name}) if design != name else (name, {})
