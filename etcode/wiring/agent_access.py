"""What an agent definition lets it do with files: the read-only agents (``plan``,
``explore``) and whether it names a tool explicitly. Read by the runtime (an agent that may
not write gets only read-only MCP tools) and by the Task tool (which subagents it offers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.agent.registry import AgentInfo

#: Tools whose use makes an agent not read-only.
_WRITERS = ("WriteFile", "Edit")


def explicitly_enabled(info: AgentInfo, tool_name: str) -> bool:
    """Whether the agent's ``tools`` settings name ``tool_name`` (or a pattern for it)
    and the last such setting enables it."""
    return info.tool_setting(tool_name) is True


def _tool_off(info: AgentInfo, tool: str) -> bool:
    permission = info.permission if isinstance(info.permission, Mapping) else {}
    return info.permission == "deny" or not info.tool_enabled(tool) or permission.get(tool) == "deny"


def cannot_write_files(info: AgentInfo) -> bool:
    """WriteFile and Edit are disabled or denied (the plan and explore agents)."""
    return all(_tool_off(info, tool) for tool in _WRITERS)


def is_read_only_agent(info: AgentInfo) -> bool:
    """No WriteFile/Edit (disabled or denied), Bash off or restricted by rules, no Task."""
    if info.permission == "deny":
        return True
    permission = info.permission if isinstance(info.permission, Mapping) else {}
    bash = permission.get("Bash", permission.get("bash"))
    bash_ok = _tool_off(info, "Bash") or isinstance(bash, Mapping)
    return cannot_write_files(info) and bash_ok and not info.tool_enabled("Task")
